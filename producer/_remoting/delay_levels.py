"""The broker's delay levels (``messageDelayLevel``) and the level a retry gets.

A consumer's failed message is re-delivered after level ``3 + reconsumeTimes`` (10 s,
30 s, 1 m ... 2 h) unless the listener chose one; levels above the table are clamped.
"""

from __future__ import annotations

import re

from producer.errors import InvalidOptionError

__all__ = [
    "DEFAULT_DELAY_LEVELS",
    "DEFAULT_MAX_RECONSUME_TIMES",
    "DelayLevels",
    "parse_delay_levels",
    "send_back_level",
]

DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
DEFAULT_MAX_RECONSUME_TIMES = 16  # concurrent consumers; the group's retryMaxTimes
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_ITEM = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")


class DelayLevels:
    """Level ``n`` (1-based) waits ``delays_ms[n - 1]``."""

    __slots__ = ("delays_ms",)

    def __init__(self, delays_ms: tuple[float, ...]) -> None:
        if not delays_ms or any(d < 0 for d in delays_ms):
            raise InvalidOptionError("delay levels need at least one non-negative delay")
        self.delays_ms = delays_ms

    def __repr__(self) -> str:
        return f"DelayLevels({len(self.delays_ms)} levels, max {self.delays_ms[-1]:.0f} ms)"

    @property
    def max_level(self) -> int:
        return len(self.delays_ms)

    def delay_ms(self, level: int) -> float:
        """The delay of ``level``, clamped into 1..max_level (as the commit log clamps)."""
        return self.delays_ms[min(max(level, 1), self.max_level) - 1]

    def clamp(self, level: int) -> int:
        return min(max(level, 1), self.max_level)

    @staticmethod
    def retry_level(reconsume_times: int) -> int:
        """The level the broker picks for a message that failed ``reconsume_times`` times
        before (0 on its first delivery): ``3 + reconsumeTimes``."""
        return 3 + reconsume_times


def send_back_level(requested: int, reconsume_times: int) -> int:
    """The level a sent-back message waits at (a broker's ``consumerSendMsgBack``): the
    one asked for when above 0, else ``3 + reconsumeTimes`` (docs/consuming.md 3.1)."""
    return requested if requested > 0 else DelayLevels.retry_level(reconsume_times)


def parse_delay_levels(text: str = DEFAULT_DELAY_LEVELS) -> DelayLevels:
    """Parse a ``messageDelayLevel`` string such as ``"1s 5s 10s"`` (units ms/s/m/h/d)."""
    delays: list[float] = []
    for item in text.split():
        match = _ITEM.fullmatch(item)
        if match is None:
            raise InvalidOptionError(
                f"delay level {item!r} in {text!r} is not a number with a unit (ms, s, m, h, d)"
            )
        delays.append(float(match.group(1)) * _UNIT_MS[match.group(2)])
    return DelayLevels(tuple(delays))
