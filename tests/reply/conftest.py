"""Every request-reply test with I/O runs on asyncio and on trio (the dev cluster on its
own thread)."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
