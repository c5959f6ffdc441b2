"""Worlds with real state and a ground-truth ledger of the side effects that took place."""
