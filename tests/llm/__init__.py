"""Tests of the opt-in model resolver of compensation pairs (rac.resolver)."""
