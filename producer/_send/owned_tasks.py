"""The tasks the producer owns, which run its ``send_async`` calls that need one: spawned
on its loop or task group, cancelled at close (:class:`OwnedTasks`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from anyio.abc import TaskGroup

#: Spawns a coroutine function as a task the producer owns; the callback runs if the
#: task is cancelled before it starts (see :class:`OwnedTasks`).
Spawn = Callable[..., None]


class OwnedTasks:
    """Runs the producer's ``send_async`` tasks and cancels the ones left at close.

    On asyncio (uvloop included) they are plain ``asyncio`` tasks kept in a set: anyio's
    ``start_soon`` costs tens of microseconds per task there, more than the rest of a
    send. Elsewhere (trio) they go to the producer's task group. Either way the producer
    owns them and :meth:`cancel_all` ends them the way closing the task group would.
    """

    __slots__ = ("_closed", "_loop", "_tasks", "_tg")

    def __init__(self, tg: TaskGroup, *, loop: asyncio.AbstractEventLoop | None) -> None:
        """``loop``: the producer's asyncio loop (native tasks), or None (trio)."""
        self._tg = tg
        self._loop = loop
        self._tasks: set[asyncio.Task[None]] | None = None if loop is None else set()
        self._closed = False  # cancel_all() ran: what is spawned later never runs

    def spawn(
        self,
        func: Callable[..., Coroutine[Any, Any, None]],
        *args: object,
        if_never_ran: Callable[[], None],
    ) -> None:
        """Run ``func(*args)``; ``if_never_ran`` is called if it is cancelled before it
        starts (asyncio then never enters the coroutine, so its own cleanup cannot run)."""
        if self._closed:  # e.g. a task-less send's retry, after its connection closed
            if_never_ran()
            return
        tasks, loop = self._tasks, self._loop
        if tasks is None or loop is None:
            self._tg.start_soon(func, *args)  # trio runs a cancelled task to its first await
            return
        task = loop.create_task(func(*args))
        tasks.add(task)

        def done(finished: asyncio.Task[None]) -> None:
            tasks.discard(finished)
            if finished.cancelled():
                if_never_ran()

        task.add_done_callback(done)

    async def cancel_all(self) -> None:
        """Cancel the native tasks still running and wait until they have finished."""
        self._closed = True
        if not self._tasks:
            return
        pending = list(self._tasks)
        for task in pending:
            task.cancel()
        await asyncio.wait(pending)
