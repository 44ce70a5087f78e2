"""Classic per-broker state: Java's `LatencyFaultToleranceImpl` with the clock passed in.

One `FaultItem` per broker that has ever been updated; a broker without one is available
and reachable. Both Java versions share this table; they differ in how a window is
updated (`WindowRule`), and only 4.9 falls back to `pickOneAtLeast` (5.x's selection
never calls its own, so it is not reproduced).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

from ._policy import WindowRule
from ._snapshot import RoundRobinIndex

__all__ = ["FaultItem", "FaultTracker"]


@dataclass
class FaultItem:
    """`LatencyFaultToleranceImpl.FaultItem`: last latency and when the broker is usable."""

    name: str
    current_latency: float = 0.0
    start_timestamp: int = 0
    reachable: bool = True

    def is_available(self, now_ms: int) -> bool:
        # Java: `now - startTimestamp >= 0` (4.9), `now >= startTimestamp` (5.x).
        """Whether the broker is out of its not-available window at ``now_ms``."""
        return now_ms >= self.start_timestamp

    def sort_key(self, now_ms: int) -> tuple[bool, float, int]:
        """`FaultItem.compareTo`: available first, then lower latency, then earlier start."""
        return (not self.is_available(now_ms), self.current_latency, self.start_timestamp)


class FaultTracker:
    """The fault item table of one producer, shared by all its topics (as in Java)."""

    def __init__(self, rule: WindowRule, rng: random.Random) -> None:
        self._rule = rule
        self._items: dict[str, FaultItem] = {}
        # `whichItemWorst`: its own randomly started index, used by 4.9's pickOneAtLeast.
        self._which_item_worst = RoundRobinIndex(rng)

    @property
    def rule(self) -> WindowRule:
        """How an update moves a broker's window (4.9 overwrites, 5.x only extends)."""
        return self._rule

    def update(
        self, name: str, latency_ms: float, duration_ms: int, *, reachable: bool, now_ms: int
    ) -> bool:
        """`updateFaultItem`; returns whether it banned a broker that was available (a
        window moved while the broker is already banned is not a new ban)."""
        item = self._items.setdefault(name, FaultItem(name))
        was_available = item.is_available(now_ms)
        item.current_latency = latency_ms
        item.reachable = reachable
        until = now_ms + duration_ms
        # 4.9 sets the window on every update; 5.x only ever moves it later.
        extends = duration_ms > 0 and until > item.start_timestamp
        if self._rule is WindowRule.OVERWRITE or extends:
            item.start_timestamp = until
        return was_available and not item.is_available(now_ms)

    def item(self, name: str) -> FaultItem | None:
        """The fault item of ``name``, or None if it was never updated."""
        return self._items.get(name)

    def is_available(self, name: str, now_ms: int) -> bool:
        """Java's ``isAvailable``: True for a broker without an item."""
        item = self._items.get(name)
        return item is None or item.is_available(now_ms)

    def is_reachable(self, name: str) -> bool:
        """5.x's ``isReachable``: the last update's flag, True for a broker without an item."""
        item = self._items.get(name)
        return item is None or item.reachable

    def remove(self, name: str) -> None:
        """Java's ``remove``: drop the item of ``name``."""
        self._items.pop(name, None)

    def retain(self, names: Iterable[str]) -> None:
        """Drop the items of brokers not in ``names``."""
        keep = set(names)
        for name in [n for n in self._items if n not in keep]:
            del self._items[name]

    def banned(self, now_ms: int) -> dict[str, int]:
        """Brokers not available at `now_ms`, with the time each becomes available."""
        return {
            name: item.start_timestamp
            for name, item in self._items.items()
            if not item.is_available(now_ms)
        }

    def pick_one_at_least(self, now_ms: int) -> str | None:
        """4.9 `pickOneAtLeast`: sort every item; round-robin over the better half.

        With a single item, that item. Java sorts a `ConcurrentHashMap`'s elements, whose
        order is arbitrary; we sort (stably) in insertion order.
        """
        ranked = sorted(self._items.values(), key=lambda item: item.sort_key(now_ms))
        if not ranked:
            return None
        half = len(ranked) // 2
        if half <= 0:
            return ranked[0].name
        return ranked[self._which_item_worst.next() % half].name

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"FaultTracker(rule={self._rule.value}, items={list(self._items.values())})"
