"""Which failures a consumer retries and how long each retry waits (docs/consuming.md 2.6)."""

from __future__ import annotations

from dataclasses import dataclass

from producer._remoting.validation import MAX_DELAY_LEVEL
from producer.errors import InvalidOptionError

__all__ = ["BROKER_DECIDES", "DEAD_LETTER", "ConsumeRetryPolicy"]

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
