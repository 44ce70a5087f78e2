"""The event loops a test module runs on besides plain asyncio."""

from __future__ import annotations

import pytest


@pytest.fixture(
    params=[
        pytest.param("asyncio", id="asyncio"),
        pytest.param(("asyncio", {"use_uvloop": True}), id="uvloop"),
    ]
)
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """asyncio and uvloop: uvloop's transports differ (no Transport subclass, RST). A
    module runs its tests on both with ``from tests.helpers.loops import anyio_backend``."""
    return request.param
