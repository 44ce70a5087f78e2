"""What to do with a failed consumption, beyond Java's one answer (docs/consuming.md 2.6).

:class:`ConsumeRetryPolicy` says which listener exceptions are worth a retry (the others
go straight to the dead-letter queue) and which delay level each attempt waits;
:class:`SeenRecently` remembers the ids consumed successfully, so that a re-delivery of
one of them can be dropped before the listener sees it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from producer._consume.received import ReceivedMessage
from producer._remoting.validation import MAX_DELAY_LEVEL
from producer.errors import InvalidOptionError

__all__ = ["DEAD_LETTER", "BROKER_DECIDES", "ConsumeRetryPolicy", "SeenRecently"]

DEAD_LETTER = -1  # the send-back delay level that means "to the DLQ now"
BROKER_DECIDES = 0  # ... and "3 + reconsume times"


@dataclass(frozen=True)
class ConsumeRetryPolicy:
    """Which failures a consumer retries, and how long each retry waits.

    ``retry_on``: exception types worth retrying (default: every ``Exception``);
    ``dead_letter_on``: types sent straight to ``%DLQ%<group>`` (checked first; e.g. a
    message that cannot be parsed will never parse). A failure not retried is
    dead-lettered at once. ``delay_levels[n]`` is the level (1-18) of the retry after the
    n-th failed delivery, the last one repeated; empty: the broker's ``3 + n``. A
    listener's own ``context.delay_level`` wins. Orderly consumers use only the
    exception rules (their retries wait ``suspend_current_queue_time_ms``).
    """

    retry_on: tuple[type[BaseException], ...] = (Exception,)
    dead_letter_on: tuple[type[BaseException], ...] = ()
    delay_levels: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for name in ("retry_on", "dead_letter_on"):
            types = getattr(self, name)
            if not isinstance(types, tuple) or not all(
                isinstance(t, type) and issubclass(t, BaseException) for t in types
            ):
                raise InvalidOptionError(f"{name}={types!r}: a tuple of exception classes")
        levels = self.delay_levels
        count = MAX_DELAY_LEVEL
        if not isinstance(levels, tuple) or not all(
            isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= count for v in levels
        ):
            raise InvalidOptionError(f"delay_levels={levels!r}: a tuple of levels 1..{count}")

    def retries(self, error: BaseException | None) -> bool:
        """Whether a failure (an exception, or ``None`` for RECONSUME_LATER) is retried."""
        if error is None:
            return True
        return not isinstance(error, self.dead_letter_on) and isinstance(error, self.retry_on)

    def delay_level(self, error: BaseException | None, reconsume_times: int) -> int:
        """The send-back level for a message that failed its ``reconsume_times + 1``-th
        delivery with ``error``: -1 (DLQ), 0 (the broker decides) or a level."""
        if not self.retries(error):
            return DEAD_LETTER
        if not self.delay_levels:
            return BROKER_DECIDES
        return self.delay_levels[min(reconsume_times, len(self.delay_levels) - 1)]


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
