"""The approaches compared: each runs a scenario under a fault schedule and returns a result."""
