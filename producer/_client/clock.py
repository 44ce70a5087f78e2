"""Time as a parameter: the producer reads time only through a :class:`Clock`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol

import anyio
import sniffio


class Clock(Protocol):
    def monotonic_ms(self) -> float:
        """Milliseconds on the event loop's monotonic clock (deadlines)."""
        ...

    def wall_ms(self) -> int:
        """Milliseconds since the epoch (bornTimestamp, UNIQ_KEY)."""
        ...


class LoopClock:
    """The running event loop's clock: deadlines agree with the loop's own timers.

    The loop's time function is looked up once, on first use inside the loop: through
    ``anyio.current_time`` every reading costs a library lookup, and a send reads the
    clock several times. A producer lives on one loop, and so does its clock.
    """

    __slots__ = ("_loop_time",)

    def __init__(self) -> None:
        self._loop_time: Callable[[], float] | None = None

    def monotonic_ms(self) -> float:
        loop_time = self._loop_time
        if loop_time is None:
            loop_time = self._loop_time = _loop_time_function()
        return loop_time() * 1000.0

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def __repr__(self) -> str:
        return "LoopClock()"


def _loop_time_function() -> Callable[[], float]:
    if sniffio.current_async_library() == "asyncio":
        return asyncio.get_running_loop().time
    return anyio.current_time
