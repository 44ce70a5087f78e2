"""One assigned queue's messages in flight, and the offset that is safe to commit.

``ProcessQueue`` of the Java client: messages are kept by queue offset from the moment
they are pulled until their consumption is settled (success, or sent back). The
committed offset is the smallest offset still held, so it never passes a message that
is being consumed, waiting for a local retry, or stuck (docs/consuming.md 2.5, seed 001).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from producer._types.consumer.received import ReceivedMessage
from producer._types.message import MessageQueue

__all__ = ["ProcessQueue"]


class ProcessQueue:
    """Messages of one queue pulled but not yet settled; all times are caller's ms."""

    __slots__ = (
        "_messages",
        "_offsets",
        "body_bytes",
        "dropped",
        "last_lock_ms",
        "locked",
        "queue",
        "queue_offset_max",
    )

    def __init__(self, queue: MessageQueue) -> None:
        self.queue = queue
        self._messages: dict[int, ReceivedMessage] = {}
        self._offsets: list[int] = []  # sorted keys of _messages
        self.body_bytes = 0
        self.queue_offset_max = -1
        self.dropped = False
        self.locked = False  # orderly: the broker granted us this queue's lock ...
        self.last_lock_ms = 0.0  # ... at this time (monotonic ms)

    def __len__(self) -> int:
        return len(self._messages)

    def __repr__(self) -> str:
        state = " dropped" if self.dropped else ""
        return (
            f"ProcessQueue({self.queue}, {len(self)} held, span={self.span}, "
            f"max={self.queue_offset_max}{state})"
        )

    @property
    def span(self) -> int:
        """Last held offset minus first (Java's ``getMaxSpan``); 0 when empty."""
        return self._offsets[-1] - self._offsets[0] if self._offsets else 0

    def span_to(self, last: int) -> int:
        """The span once messages up to offset ``last`` are held too (``last`` < 0: none)."""
        if not self._offsets:
            return 0
        return max(self._offsets[-1], last) - self._offsets[0]

    def put(self, messages: Iterable[ReceivedMessage]) -> list[ReceivedMessage]:
        """Hold newly pulled messages; returns those not already held (a re-pull after an
        offset reset can bring back offsets still in flight)."""
        added: list[ReceivedMessage] = []
        held, offsets, body_bytes = self._messages, self._offsets, self.body_bytes
        for message in messages:
            offset = message.queue_offset
            if offset in held:
                continue
            held[offset] = message
            if not offsets or offset > offsets[-1]:
                offsets.append(offset)  # a pull's messages come in offset order
            else:
                bisect.insort(offsets, offset)
            body_bytes += len(message.body)
            added.append(message)
        self.body_bytes = body_bytes
        if offsets:
            self.queue_offset_max = max(self.queue_offset_max, offsets[-1])
        return added

    def head(self, count: int) -> list[ReceivedMessage]:
        """The first ``count`` messages held, in offset order (orderly consumption)."""
        return [self._messages[offset] for offset in self._offsets[:count]]

    def remove(self, messages: Iterable[ReceivedMessage]) -> int:
        """Settle ``messages``; returns the offset now safe to commit, or -1 if nothing was held.

        That is the smallest offset still held, or ``queue_offset_max + 1`` once empty.
        """
        if not self._messages:
            return -1
        for message in messages:
            held = self._messages.pop(message.queue_offset, None)
            if held is None:
                continue
            self.body_bytes -= len(held.body)
            index = bisect.bisect_left(self._offsets, message.queue_offset)
            del self._offsets[index]
        return self._offsets[0] if self._offsets else self.queue_offset_max + 1
