"""Time as a parameter: the producer reads time only through a :class:`Clock`."""

from __future__ import annotations

import time
from typing import Protocol

import anyio


class Clock(Protocol):
    def monotonic_ms(self) -> float:
        """Milliseconds on the event loop's monotonic clock (deadlines)."""
        ...

    def wall_ms(self) -> int:
        """Milliseconds since the epoch (bornTimestamp, UNIQ_KEY)."""
        ...


class LoopClock:
    """The running event loop's clock: deadlines agree with the loop's own timers."""

    def monotonic_ms(self) -> float:
        return anyio.current_time() * 1000.0

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def __repr__(self) -> str:
        return "LoopClock()"
