"""Clocks the tests set: one the test moves, one that never moves."""

from __future__ import annotations

import time

import anyio

from producer.testing import DevClusterThread

START_MS = 1_795_788_600_000


class MovingClock:
    """The brokers' ``clock_ms``, and the consumer's Clock: wall = the brokers' time,
    monotonic = the loop's time plus every jump the test made."""

    def __init__(self) -> None:
        self.ms = START_MS
        self.jumped = 0

    def __call__(self) -> int:
        return self.ms

    def wall_ms(self) -> int:
        return self.ms

    def monotonic_ms(self) -> float:
        return anyio.current_time() * 1000.0 + self.jumped

    def advance(self, cluster: DevClusterThread, ms: int) -> None:
        """Move both clocks ``ms`` on, and let the brokers see it."""
        self.ms += ms
        self.jumped += ms
        cluster.tick()


class StillClock:
    """Routing weighs brokers by the latency it measures; on a loaded test machine a
    scheduling hiccup can make one loopback broker look slow and move load, as it should.
    A monotonic clock that never moves shows every answer as instant, so the brokers stay
    equal and the shares measure the spreading alone (nothing here waits on a deadline)."""

    def monotonic_ms(self) -> float:
        return 1_000_000.0

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000
