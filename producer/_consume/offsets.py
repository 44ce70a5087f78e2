"""The consumer's in-memory offset table (``RemoteBrokerOffsetStore`` without the I/O)."""

from __future__ import annotations

from producer._types.message import MessageQueue

__all__ = ["OffsetTable"]


class OffsetTable:
    """Next offset to consume per queue; persisted by the shell every few seconds.

    ``update(..., increase_only=True)`` is how consumption moves an offset: results may
    arrive out of order, and an older one must not move it back.
    """

    __slots__ = ("_offsets",)

    def __init__(self) -> None:
        self._offsets: dict[MessageQueue, int] = {}

    def __repr__(self) -> str:
        return f"OffsetTable({len(self._offsets)} queues)"

    def read(self, queue: MessageQueue) -> int | None:
        return self._offsets.get(queue)

    def update(self, queue: MessageQueue, offset: int, *, increase_only: bool) -> bool:
        """Set ``queue``'s offset; returns whether it changed."""
        if offset < 0:
            return False
        current = self._offsets.get(queue)
        if current is not None and (offset == current or (increase_only and offset < current)):
            return False
        self._offsets[queue] = offset
        return True

    def to_persist(self, assigned: set[MessageQueue]) -> dict[MessageQueue, int]:
        """Offsets of ``assigned`` queues to write to the broker; forgets unassigned ones.

        Java persists every assigned queue each time, changed or not (a broker that lost
        its offset file gets it back); so do we.
        """
        for queue in [q for q in self._offsets if q not in assigned]:
            del self._offsets[queue]
        return {q: o for q, o in self._offsets.items() if q in assigned}

    def remove(self, queue: MessageQueue) -> int | None:
        """Forget ``queue`` (given up); returns its last offset to persist once."""
        return self._offsets.pop(queue, None)
