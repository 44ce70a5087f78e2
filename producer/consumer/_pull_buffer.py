"""What a pull consumer has handed out: its buffer and the offsets ``commit()`` stores.

``async for`` pulls a round and hands its messages out one at a time; the rest wait here.
Per queue, :attr:`PullBuffer.handed` is the offset after the last message handed out -
or, once nothing of the queue is left, where the pull that brought them ended (past the
messages the tag filter skipped). A message still in the buffer never counts, so a
process that commits and stops loses nothing it did not see (docs/consuming.md 1.9).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection

from producer._types.consumer.received import ReceivedMessage
from producer._types.message import MessageQueue
from producer.consumer._pull_step import Pulled

__all__ = ["PullBuffer"]


class PullBuffer:
    """Pulled messages not handed out yet, and the handed-out offset of each queue."""

    __slots__ = ("_ends", "_messages", "handed")

    def __init__(self) -> None:
        self._messages: deque[ReceivedMessage] = deque()
        self._ends: dict[MessageQueue, int] = {}  # where the buffered pull of a queue ended
        self.handed: dict[MessageQueue, int] = {}

    def __repr__(self) -> str:
        return f"PullBuffer({len(self._messages)} messages, {len(self.handed)} queues)"

    def __bool__(self) -> bool:
        return bool(self._messages)

    def moved(self, queue: MessageQueue, offset: int) -> None:
        """``queue`` starts over at ``offset`` (a seek, or its start resolved): what was
        buffered of it is dropped, and ``offset`` counts as handed out."""
        self._messages = deque(m for m in self._messages if m.queue != queue)
        self._ends.pop(queue, None)
        self.handed[queue] = offset

    def keep(self, queues: Collection[MessageQueue]) -> None:
        """Forget every queue but ``queues`` (a new assignment)."""
        self._messages = deque(m for m in self._messages if m.queue in queues)
        self._ends = {q: o for q, o in self._ends.items() if q in queues}
        self.handed = {q: o for q, o in self.handed.items() if q in queues}

    def handed_all(self, pulled: Pulled) -> None:
        """All of ``pulled`` went to the caller (``getmany``), or it had no message."""
        self.handed[pulled.queue] = pulled.position

    def add(self, pulled: Pulled) -> None:
        """Hold ``pulled``'s messages for ``async for`` (none: handed out at once)."""
        if not pulled.messages:
            self.handed_all(pulled)
            return
        self._messages.extend(pulled.messages)
        self._ends[pulled.queue] = pulled.position

    def pop(self) -> ReceivedMessage:
        """The next message, now handed out."""
        message = self._messages.popleft()
        self._handed_out(message)
        return message

    def take(
        self, queues: Collection[MessageQueue], max_records: int | None
    ) -> dict[MessageQueue, list[ReceivedMessage]]:
        """Up to ``max_records`` buffered messages of ``queues``, in order, handed out."""
        taken: dict[MessageQueue, list[ReceivedMessage]] = {}
        kept: deque[ReceivedMessage] = deque()
        count = 0
        for message in self._messages:
            if message.queue in queues and (max_records is None or count < max_records):
                taken.setdefault(message.queue, []).append(message)
                count += 1
            else:
                kept.append(message)
        self._messages = kept
        for messages in taken.values():
            self._handed_out(messages[-1])
        return taken

    def _handed_out(self, last: ReceivedMessage) -> None:
        queue = last.queue
        if any(m.queue == queue for m in self._messages):
            self.handed[queue] = last.queue_offset + 1
        else:
            self.handed[queue] = self._ends.pop(queue, last.queue_offset + 1)
