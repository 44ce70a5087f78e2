"""Shared test configuration: async tests run through anyio's pytest plugin, and every
hypothesis test draws the same examples on every run (found failures become @example)."""

from __future__ import annotations

import pytest
from hypothesis import settings

settings.register_profile("deterministic", derandomize=True, database=None, deadline=None)
settings.load_profile("deterministic")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
