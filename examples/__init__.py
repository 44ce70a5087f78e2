"""Runnable examples (each also run by a test)."""
