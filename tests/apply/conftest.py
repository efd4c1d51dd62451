"""Applier unit tests use in-memory fakes (tests/apply/fakes.py); no simulator, no network."""
