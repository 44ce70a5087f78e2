"""What a 5.x broker remembers about pops: check points and orderly queue locks (no I/O).

A **check point** (``PopCheckPoint``) is written for every queue a pop read from: the
group, the topic actually read (the pop retry topic for retried copies), the queue, the
first offset read (``startOffset``), the pop time, the invisible time, the revive queue
and the offsets handed out. An ack marks one offset of one check point (found by the
receipt handle's ckQueueOffset and popTime); once the pop time plus the invisible time
has passed, :meth:`CheckPoints.due` hands out the check points to revive: every offset
not acked is copied into the pop retry topic (``PopReviveService``).

An **orderly lock** (``ConsumerOrderInfoManager``) holds a queue for the group while
the messages of an orderly pop are un-acked and invisible; it counts how often each
offset was delivered (``orderCountInfo``). The queue's consumer offset moves past a
message only when the messages before it are acked.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

__all__ = ["CheckPoint", "CheckPoints", "OrderLock", "OrderLocks"]


@dataclass
class CheckPoint:
    """One pop of one queue, un-revived."""

    group: str
    topic: str  # the topic read: normal, or the pop retry topic
    queue_id: int
    start_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    offsets: list[int]
    acked: set[int] = field(default_factory=set)

    @property
    def due_ms(self) -> int:
        return self.pop_time + self.invisible_time

    @property
    def is_done(self) -> bool:
        return self.acked.issuperset(self.offsets)


CkKey = tuple[str, str, int, int, int, int]  # group, topic, queue, start, popTime, reviveQid


class CheckPoints:
    """Every check point not yet revived, by (group, topic, queue, start offset, popTime,
    revive queue): what an ack's handle names. Two can share a key (a change in the
    millisecond of its pop); an ack marks the first that still holds its offset."""

    def __init__(self) -> None:
        self._cks: dict[CkKey, list[CheckPoint]] = {}

    def __len__(self) -> int:
        return sum(len(cks) for cks in self._cks.values())

    def add(self, ck: CheckPoint) -> None:
        key = (ck.group, ck.topic, ck.queue_id, ck.start_offset, ck.pop_time, ck.revive_qid)
        self._cks.setdefault(key, []).append(ck)

    def adopt(self, other: CheckPoints) -> None:
        """Take copies of ``other``'s check points (a promoted slave's, from its master)."""
        for key, cks in other._cks.items():
            self._cks.setdefault(key, []).extend(copy.deepcopy(cks))

    def ack(self, key: CkKey, offset: int) -> bool:
        """Mark ``offset`` acked on its check point; False when there is none (a stale
        handle, a check point already revived, a double ack)."""
        cks = self._cks.get(key, [])
        for ck in cks:
            if offset in ck.offsets and offset not in ck.acked:
                ck.acked.add(offset)
                if ck.is_done:
                    cks.remove(ck)
                    if not cks:
                        del self._cks[key]
                return True
        return False

    def due(self, now_ms: int) -> list[CheckPoint]:
        """Check points whose invisible time ran out, removed (the caller revives them)."""
        found: list[CheckPoint] = []
        for key in list(self._cks):
            cks = self._cks[key]
            found += [ck for ck in cks if ck.due_ms <= now_ms]
            kept = [ck for ck in cks if ck.due_ms > now_ms]
            if kept:
                self._cks[key] = kept
            else:
                del self._cks[key]
        return found


@dataclass
class OrderLock:
    """An orderly pop's hold on one queue for one group."""

    pop_time: int
    invisible_time: int
    offsets: list[int]
    acked: set[int] = field(default_factory=set)

    def is_held(self, now_ms: int) -> bool:
        return (
            not self.acked.issuperset(self.offsets) and now_ms < self.pop_time + self.invisible_time
        )


class OrderLocks:
    """Orderly locks and delivery counts per (group, topic, queue)."""

    def __init__(self) -> None:
        self._locks: dict[tuple[str, str, int], OrderLock] = {}
        self._counts: dict[tuple[str, str, int], dict[int, int]] = {}

    def get(self, group: str, topic: str, queue_id: int) -> OrderLock | None:
        return self._locks.get((group, topic, queue_id))

    def adopt(self, other: OrderLocks) -> None:
        """Take copies of ``other``'s locks and delivery counts (a promoted slave's)."""
        self._locks.update(copy.deepcopy(other._locks))
        self._counts.update(copy.deepcopy(other._counts))

    def lock(self, group: str, topic: str, queue_id: int, lock: OrderLock) -> dict[int, int]:
        """Hold the queue; returns each offset's earlier deliveries (then counts this one)."""
        key = (group, topic, queue_id)
        self._locks[key] = lock
        counts = self._counts.setdefault(key, {})
        before = {offset: counts.get(offset, 0) for offset in lock.offsets}
        for offset in lock.offsets:
            counts[offset] = counts.get(offset, 0) + 1
        return before

    def acked(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        lock = self._locks.get((group, topic, queue_id))
        if lock is not None and offset in lock.offsets:
            lock.acked.add(offset)
            self._counts.get((group, topic, queue_id), {}).pop(offset, None)
