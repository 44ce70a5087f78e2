"""Classic fault policy: the latency -> not-available-duration tables of the Java client.

Pure data plus one lookup (`MQFaultStrategy.computeNotAvailableDuration`). The tracker
applies the resulting window; the window rule says how a new window meets an old one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["JAVA_4_9", "JAVA_5", "FaultPolicy", "WindowRule"]


class WindowRule(enum.Enum):
    """How an update's not-available window combines with the broker's current one."""

    #: 4.9 `LatencyFaultToleranceImpl.updateFaultItem` sets `startTimestamp = now + d`
    #: on every update, so a fast answer (d = 0) lifts a ban at once.
    OVERWRITE = "overwrite"
    #: 5.x `FaultItem.updateNotAvailableDuration` only moves the window later, and only
    #: for d > 0: a fast answer never shortens a ban.
    EXTEND = "extend"


@dataclass(frozen=True)
class FaultPolicy:
    """One Java version's ban table (rules F1 and F2)."""

    name: str
    latency_max_ms: tuple[int, ...]
    not_available_ms: tuple[int, ...]
    isolation_latency_ms: int
    window_rule: WindowRule

    def __post_init__(self) -> None:
        if len(self.latency_max_ms) != len(self.not_available_ms):
            raise ValueError("latency_max_ms and not_available_ms must have the same length")
        if list(self.latency_max_ms) != sorted(self.latency_max_ms):
            raise ValueError("latency_max_ms must be ascending")

    def not_available_duration(self, latency_ms: float) -> int:
        """`computeNotAvailableDuration`: the duration of the highest step reached.

        Java compares whole milliseconds; a float `x` reaches a step exactly when
        `floor(x)` does, since the steps are whole."""
        for step in range(len(self.latency_max_ms) - 1, -1, -1):
            if latency_ms >= self.latency_max_ms[step]:
                return self.not_available_ms[step]
        return 0

    def ban_duration(self, latency_ms: float, *, isolation: bool) -> int:
        """`updateFaultItem`: an isolated broker is judged as if it took the isolation
        latency; otherwise by the latency it really took."""
        return self.not_available_duration(self.isolation_latency_ms if isolation else latency_ms)


#: rocketmq-all-4.9.4 `MQFaultStrategy`: isolation = 30000 ms -> a 600000 ms (10 min) ban.
JAVA_4_9 = FaultPolicy(
    name="classic_4_9",
    latency_max_ms=(50, 100, 550, 1000, 2000, 3000, 15000),
    not_available_ms=(0, 0, 30000, 60000, 120000, 180000, 600000),
    isolation_latency_ms=30000,
    window_rule=WindowRule.OVERWRITE,
)

#: rocketmq-all-5.3.x `MQFaultStrategy`: isolation = 10000 ms -> a 10000 ms ban.
JAVA_5 = FaultPolicy(
    name="classic_5",
    latency_max_ms=(50, 100, 550, 1800, 3000, 5000, 15000),
    not_available_ms=(0, 0, 2000, 5000, 6000, 10000, 30000),
    isolation_latency_ms=10000,
    window_rule=WindowRule.EXTEND,
)
