"""Which sends have finished, in the order they began: what ``flush()`` waits on."""

from __future__ import annotations

import anyio

from producer.errors import SendTimeout


class SendTracker:
    """Tickets for sends in order of their start; :meth:`wait_through` returns once every
    send up to a ticket has ended, however the later ones are doing (aiokafka's and
    confluent-kafka's ``flush`` semantics: what was sent before the call)."""

    __slots__ = ("_changed", "_issued", "_open")

    def __init__(self) -> None:
        self._issued = 0
        self._open: set[int] = set()
        self._changed: anyio.Event | None = None

    @property
    def last_ticket(self) -> int:
        return self._issued

    @property
    def open_count(self) -> int:
        return len(self._open)

    def begin(self) -> int:
        self._issued += 1
        self._open.add(self._issued)
        return self._issued

    def end(self, ticket: int) -> None:
        self._open.discard(ticket)
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    def done_through(self, ticket: int) -> bool:
        return not self._open or min(self._open) > ticket

    async def wait_through(self, ticket: int) -> None:
        while not self.done_through(ticket):
            if self._changed is None:
                self._changed = anyio.Event()
            await self._changed.wait()

    async def flush(self, timeout_ms: float | None) -> None:
        """Wait until every send begun before this call has ended; raises
        :class:`SendTimeout` if ``timeout_ms`` passes first (the sends carry on)."""
        ticket = self.last_ticket
        if timeout_ms is None:
            await self.wait_through(ticket)
            return
        with anyio.move_on_after(timeout_ms / 1000.0):
            await self.wait_through(ticket)
        if not self.done_through(ticket):
            open_sends = self.open_count
            raise SendTimeout(f"flush timed out after {timeout_ms:g} ms, {open_sends} open")

    def __repr__(self) -> str:
        return f"SendTracker(issued={self._issued}, open={len(self._open)})"
