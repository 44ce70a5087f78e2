"""Time as a parameter: the producer reads time only through a :class:`Clock`."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol


class Clock(Protocol):
    def monotonic_ms(self) -> float:
        """Milliseconds on the event loop's monotonic clock (deadlines)."""
        ...

    def wall_ms(self) -> int:
        """Milliseconds since the epoch (bornTimestamp, UNIQ_KEY)."""
        ...


class LoopClock:
    """The running event loop's clock: deadlines agree with the loop's own timers.

    ``loop_time`` is the loop's time function in seconds, from the runtime chosen at
    start (:func:`producer._transport.current_runtime`): a producer lives on one loop.
    """

    __slots__ = ("_loop_time",)

    def __init__(self, loop_time: Callable[[], float]) -> None:
        self._loop_time = loop_time

    def monotonic_ms(self) -> float:
        return self._loop_time() * 1000.0

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def __repr__(self) -> str:
        return "LoopClock()"


class _UnstartedClock:
    """Stands in until start() picks the loop's clock (a producer reads no time before)."""

    def monotonic_ms(self) -> float:
        raise RuntimeError("the producer is not started: no loop clock yet")

    def wall_ms(self) -> int:
        raise RuntimeError("the producer is not started: no loop clock yet")


UNSTARTED_CLOCK = _UnstartedClock()
