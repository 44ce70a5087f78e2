"""Bounded in-flight sends (A7): a fair limiter on message count and bytes.

Waiters are served strictly in arrival order, so a large message is not starved by a
stream of small ones. A send either waits for room within its own deadline or, with
``fail_fast``, is refused at once with :class:`BackpressureError`.
"""

from __future__ import annotations

from collections import deque

import anyio

from producer.errors import BackpressureError, LocalProtocolError, SendTimeout


class _Waiter:
    __slots__ = ("event", "granted", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self.event = anyio.Event()
        self.granted = False


class InFlightLimiter:
    __slots__ = ("_bytes", "_idle", "_waiters", "fail_fast", "in_flight", "max_bytes", "max_count")

    def __init__(self, max_count: int, max_bytes: int, *, fail_fast: bool = False) -> None:
        if max_count < 1 or max_bytes < 1:
            raise LocalProtocolError("in-flight limits must be positive")
        self.max_count = max_count
        self.max_bytes = max_bytes
        self.fail_fast = fail_fast
        #: Sends holding a slot (an attribute: every send's path reads it).
        self.in_flight = 0
        self._bytes = 0
        self._waiters: deque[_Waiter] = deque()
        self._idle: anyio.Event | None = None

    @property
    def in_flight_bytes(self) -> int:
        return self._bytes

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @property
    def is_idle(self) -> bool:
        """No send holds a slot or waits for one."""
        return self.in_flight == 0 and not self._waiters

    async def wait_idle(self) -> None:
        """Return once :attr:`is_idle` (the producer drains with this on close)."""
        if self.is_idle:
            return
        if self._idle is None:
            self._idle = anyio.Event()
        await self._idle.wait()

    def _has_room(self, size: int) -> bool:
        # One message larger than the byte limit still goes when nothing else is in flight.
        if self.in_flight >= self.max_count:
            return False
        return self.in_flight == 0 or self._bytes + size <= self.max_bytes

    def try_acquire(self, size: int) -> bool:
        """Take a slot without waiting; only when nobody is queued ahead (fairness)."""
        count = self.in_flight
        if self._waiters or count >= self.max_count:
            return False
        if count and self._bytes + size > self.max_bytes:  # _has_room, inline: every send
            return False
        self.in_flight += 1
        self._bytes += size
        return True

    async def acquire(self, size: int, timeout_ms: float) -> None:
        """Take a slot, waiting in line at most ``timeout_ms``."""
        if self.try_acquire(size):
            return
        if self.fail_fast:
            raise BackpressureError(
                f"in-flight limit reached ({self.in_flight}/{self.max_count} sends, "
                f"{self._bytes}/{self.max_bytes} bytes)"
            )
        waiter = _Waiter(size)
        self._waiters.append(waiter)
        try:
            with anyio.move_on_after(max(timeout_ms, 0.0) / 1000.0):
                await waiter.event.wait()
        except BaseException:
            self._abandon(waiter)  # cancelled: never keep a slot nobody will release
            raise
        if not waiter.granted:
            self._abandon(waiter)
            raise SendTimeout(
                f"send call timeout while waiting for in-flight room "
                f"({self.in_flight}/{self.max_count} sends, {self._bytes}/{self.max_bytes} bytes)"
            )

    def _abandon(self, waiter: _Waiter) -> None:
        if waiter.granted:
            self.release(waiter.size)
        else:
            self._waiters.remove(waiter)
            self._grant_waiters()  # our place in line may have blocked others
            self._wake_if_idle()

    def release(self, size: int) -> None:
        self.in_flight -= 1
        self._bytes -= size
        if self._waiters:  # every send releases: skip the calls when nobody waits
            self._grant_waiters()
        if self._idle is not None:
            self._wake_if_idle()

    def _wake_if_idle(self) -> None:
        if self._idle is not None and self.is_idle:
            self._idle.set()
            self._idle = None

    def _grant_waiters(self) -> None:
        while self._waiters and self._has_room(self._waiters[0].size):
            waiter = self._waiters.popleft()
            waiter.granted = True
            self.in_flight += 1
            self._bytes += waiter.size
            waiter.event.set()

    def __repr__(self) -> str:
        return (
            f"InFlightLimiter({self.in_flight}/{self.max_count} sends, "
            f"{self._bytes}/{self.max_bytes} bytes, {len(self._waiters)} waiting)"
        )
