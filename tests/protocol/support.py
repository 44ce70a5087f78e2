"""Shared hypothesis settings: derandomized (same examples every run), no example database,
no per-example deadline (a loaded CI machine must not turn a slow example into a failure)."""

from __future__ import annotations

from hypothesis import settings

deterministic = settings(derandomize=True, database=None, deadline=None)
