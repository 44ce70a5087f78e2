"""The broker's delayed delivery (``ScheduleMessageService``), pure: times are the caller's.

A put with ``DELAY`` > 0 is stored in ``SCHEDULE_TOPIC_XXXX`` queue ``level - 1`` and
delivered to its real topic once ``store time + delay(level)`` has passed. Each level is
FIFO: a message never overtakes an earlier one of its level (docs/consuming.md 3.3).
"""

from __future__ import annotations

from collections import deque

from producer._remoting.delay_levels import DelayLevels

__all__ = ["SCHEDULE_TOPIC", "DelaySchedule"]

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"


class DelaySchedule:
    """Per-level queues of ``(deliver_ms, commit_log_offset)``."""

    def __init__(self, levels: DelayLevels) -> None:
        self.levels = levels
        self._pending: dict[int, deque[tuple[float, int]]] = {}

    def __repr__(self) -> str:
        return f"DelaySchedule({self.levels!r}, backlog={self.backlog()})"

    def add(self, level: int, commit_log_offset: int, store_ms: float) -> None:
        level = self.levels.clamp(level)
        deliver = store_ms + self.levels.delay_ms(level)
        self._pending.setdefault(level, deque()).append((deliver, commit_log_offset))

    def due(self, now_ms: float) -> list[int]:
        """Commit-log offsets of the messages due by ``now_ms``, level by level, in order."""
        ready: list[int] = []
        for level in sorted(self._pending):
            queue = self._pending[level]
            while queue and queue[0][0] <= now_ms:
                ready.append(queue.popleft()[1])
        return ready

    def backlog(self) -> dict[int, int]:
        """Messages waiting, per level."""
        return {level: len(q) for level, q in sorted(self._pending.items()) if q}
