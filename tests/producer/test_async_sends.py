"""The producer's spawner of background sends: nothing spawned after close ever runs."""

from __future__ import annotations

import asyncio

import anyio
import anyio.lowlevel
import pytest

from producer._send.owned_tasks import OwnedTasks

pytestmark = pytest.mark.anyio


async def test_a_spawn_after_close_never_runs_and_says_so(anyio_backend: str) -> None:
    ran: list[str] = []
    never_ran: list[str] = []

    async def send(name: str) -> None:
        ran.append(name)

    async with anyio.create_task_group() as tg:
        loop = asyncio.get_running_loop() if anyio_backend == "asyncio" else None
        spawner = OwnedTasks(tg, loop=loop)
        spawner.spawn(send, "before", if_never_ran=lambda: never_ran.append("before"))
        await anyio.lowlevel.checkpoint()  # it starts
        await spawner.cancel_all()
        # e.g. a task-less send's retry, its connection closed under a closing producer
        spawner.spawn(send, "after", if_never_ran=lambda: never_ran.append("after"))
        await anyio.lowlevel.checkpoint()
    assert ran == ["before"]
    assert never_ran == ["after"]
