"""Fixtures: every connection test runs once per backend, against a real local socket.

* ``asyncio`` / ``uvloop``: the ``asyncio.Protocol`` backend (uvloop skipped if absent);
* ``trio``: the anyio backend, which is what trio users get;
* ``anyio-on-asyncio``: the anyio backend on asyncio too, so both backends are held to
  the same tests on the same loop.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest
import sniffio

from producer._transport import AnyioConnector, AsyncioConnector, Connector

from .fake_broker import FakeBroker

_HAS_UVLOOP = importlib.util.find_spec("uvloop") is not None

BACKENDS: dict[str, tuple[Any, Callable[[], Connector]]] = {
    "asyncio": ("asyncio", AsyncioConnector),
    "uvloop": (("asyncio", {"use_uvloop": True}), AsyncioConnector),
    "trio": ("trio", AnyioConnector),
    "anyio-on-asyncio": ("asyncio", AnyioConnector),
}


@pytest.fixture(
    params=[
        pytest.param(
            name,
            id=name,
            marks=pytest.mark.skipif(
                name == "uvloop" and not _HAS_UVLOOP, reason="uvloop not installed"
            ),
        )
        for name in BACKENDS
    ]
)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(backend: str) -> Any:
    return BACKENDS[backend][0]


@pytest.fixture
def make_connector(backend: str) -> Callable[[], Connector]:
    return BACKENDS[backend][1]


def _live_tasks() -> set[object]:
    """Every task running now (asyncio), or every task in trio's task tree."""
    if sniffio.current_async_library() == "asyncio":
        # anyio's test runner wraps each fixture step and test in a task of its own
        return {t for t in asyncio.all_tasks() if not _is_runner(t)}
    import trio

    found: set[object] = set()
    root = trio.lowlevel.current_root_task()
    assert root is not None
    pending = [root]
    while pending:
        task = pending.pop()
        found.add(task)
        for nursery in task.child_nurseries:
            pending.extend(nursery.child_tasks)
    return found


@pytest.fixture
async def no_stray_tasks(anyio_backend: Any) -> AsyncIterator[None]:
    """Fail a test that leaves a task behind.

    Async test modules use it through ``pytestmark`` (``usefixtures`` come first, so this
    is torn down after the server and connector fixtures).
    """
    before = _live_tasks()
    yield
    await anyio.lowlevel.checkpoint()  # let tasks cancelled at teardown finish
    left = {t for t in _live_tasks() - before if not _is_current(t)}
    assert not left, f"tasks left behind: {left}"


def _is_runner(task: asyncio.Task[Any]) -> bool:
    return "_call_in_runner_task" in getattr(task.get_coro(), "__qualname__", "")


def _is_current(task: object) -> bool:
    if sniffio.current_async_library() == "asyncio":
        return task is asyncio.current_task()
    import trio

    return task is trio.lowlevel.current_task()


@pytest.fixture
async def broker(anyio_backend: Any) -> AsyncIterator[FakeBroker]:
    async with anyio.create_task_group() as group:
        server = FakeBroker()
        await server.start(group)
        yield server
        group.cancel_scope.cancel()


@pytest.fixture
async def connector(make_connector: Callable[[], Connector]) -> AsyncIterator[Connector]:
    async with make_connector() as entered:
        yield entered
