"""What to do with a failed consumption, beyond Java's one answer (docs/consuming.md 2.6).

:class:`ConsumeRetryPolicy` says which listener exceptions are worth a retry (the others
go straight to the dead-letter queue) and which delay level each attempt waits;
:class:`SeenRecently` remembers the ids consumed successfully, so that a re-delivery of
one of them can be dropped before the listener sees it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence

from producer._types.consumer.received import ReceivedMessage
from producer.errors import InvalidOptionError

__all__ = ["SeenRecently"]


class SeenRecently:
    """Message ids (UNIQ_KEY) consumed successfully in the last ``window_ms``, at most
    ``max_ids`` of them (the oldest forgotten first). Times are the caller's ms."""

    __slots__ = ("_ids", "max_ids", "window_ms")

    def __init__(self, window_ms: float, max_ids: int = 100_000) -> None:
        if isinstance(window_ms, bool) or not isinstance(window_ms, (int, float)) or window_ms <= 0:
            raise InvalidOptionError(f"idempotency_window_ms={window_ms!r}: a number > 0")
        if isinstance(max_ids, bool) or not isinstance(max_ids, int) or max_ids < 1:
            raise InvalidOptionError(f"idempotency_max_ids={max_ids!r}: an integer >= 1")
        self.window_ms = float(window_ms)
        self.max_ids = max_ids
        self._ids: OrderedDict[str, float] = OrderedDict()

    def __len__(self) -> int:
        return len(self._ids)

    def __repr__(self) -> str:
        return f"SeenRecently({len(self)} ids, window={self.window_ms:g} ms)"

    def split(
        self, messages: Sequence[ReceivedMessage], now_ms: float
    ) -> tuple[list[ReceivedMessage], list[ReceivedMessage]]:
        """``(fresh, repeated)``: messages not consumed successfully within the window,
        and those that were (and can be settled without the listener)."""
        self._expire(now_ms)
        fresh = [m for m in messages if m.msg_id not in self._ids]
        return fresh, [m for m in messages if m.msg_id in self._ids]

    def remember(self, messages: Iterable[ReceivedMessage], now_ms: float) -> None:
        for message in messages:
            self._ids[message.msg_id] = now_ms
            self._ids.move_to_end(message.msg_id)
        while len(self._ids) > self.max_ids:
            self._ids.popitem(last=False)

    def _expire(self, now_ms: float) -> None:
        while self._ids:
            oldest, at_ms = next(iter(self._ids.items()))
            if now_ms - at_ms <= self.window_ms:
                return
            del self._ids[oldest]
