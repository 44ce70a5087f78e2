"""The route snapshot: one topic's writable queues and its round-robin index.

This is the part of Java's `TopicPublishInfo` that selection needs: the queue list and
`sendWhichQueue`. The producer builds a new snapshot on every route refresh, as the Java
client builds a new `TopicPublishInfo` (and so a new randomly started index) each time.
"""

from __future__ import annotations

import collections
import random
from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar

__all__ = ["EmptySnapshotError", "PublishSnapshot", "Q", "QueueLike", "RoundRobinIndex"]

# Java's ThreadLocalIndex masks its int to the positive range; we keep the same range so
# index arithmetic (and thus which queue comes next) matches the Java client's.
_POSITIVE_MASK = 0x7FFF_FFFF


class QueueLike(Protocol):
    """Anything naming a broker and a queue id, such as the producer's `MessageQueue`."""

    @property
    def broker_name(self) -> str:
        """The broker the queue lives on."""

    @property
    def queue_id(self) -> int:
        """The queue's id on its broker."""


Q = TypeVar("Q", bound=QueueLike)


class EmptySnapshotError(LookupError):
    """Selection was asked for a queue of a topic that has no writable queue."""

    def __init__(self, topic: str) -> None:
        super().__init__(f"no writable queue to choose from for topic {topic or '<unnamed>'!r}")
        self.topic = topic


class RoundRobinIndex:
    """Java's `ThreadLocalIndex` for one event loop: a counter started at a random value.

    4.9 starts at `abs(nextInt())`, 5.x at `nextInt()`; both return the incremented value
    masked to 31 bits, so a random non-negative start is the same thing.
    """

    __slots__ = ("_value",)

    def __init__(self, rng: random.Random) -> None:
        self._value = rng.randrange(_POSITIVE_MASK + 1)

    def next(self) -> int:
        """`incrementAndGet()`: advance, then return the new non-negative value."""
        self._value = (self._value + 1) & _POSITIVE_MASK
        return self._value

    def reset(self, rng: random.Random) -> None:
        """5.x `ThreadLocalIndex.reset()`: jump to `nextInt(Integer.MAX_VALUE)`."""
        self._value = rng.randrange(_POSITIVE_MASK)

    @property
    def value(self) -> int:
        """The current value (the one :meth:`next` last returned)."""
        return self._value

    def __repr__(self) -> str:
        return f"RoundRobinIndex(value={self._value})"


class PublishSnapshot(Generic[Q]):
    """An immutable list of one topic's writable queues plus its own round-robin index
    (and `owed`, the account `spread_batch` keeps of small transparent groups).

    The queues keep the producer's order (Java sorts queue data by broker name and gives
    each broker ids 0..writeQueueNums-1). Only the index moves; routers move it exactly
    as the Java method they reproduce does, so tests can pin the sequence.
    """

    __slots__ = ("_by_broker", "_index", "_queues", "_turns", "owed", "topic")

    def __init__(self, queues: Sequence[Q], rng: random.Random, *, topic: str = "") -> None:
        self.topic = topic
        self._queues: tuple[Q, ...] = tuple(queues)
        self._index = RoundRobinIndex(rng)
        by_broker: dict[str, list[Q]] = {}
        for queue in self._queues:
            by_broker.setdefault(queue.broker_name, []).append(queue)
        self._by_broker = {name: tuple(qs) for name, qs in by_broker.items()}
        # Per broker, the queue id its next weighted pick takes (Java's sendWhichQueue
        # is one counter per TopicPublishInfo; a weighted walk needs one per broker).
        self._turns: dict[str, int] = {}
        #: Per (broker, queue id): messages of small transparent groups the router's
        #: picks gave the queue (a group's messages shared by its picks), minus those it
        #: was sent (`spread_batch` keeps it).
        self.owed: collections.defaultdict[tuple[str, int], float] = collections.defaultdict(float)

    @property
    def queues(self) -> tuple[Q, ...]:
        """The topic's writable queues, in the producer's order."""
        return self._queues

    @property
    def brokers(self) -> tuple[str, ...]:
        """Broker names in the order their first queue appears."""
        return tuple(self._by_broker)

    @property
    def index(self) -> RoundRobinIndex:
        """This snapshot's round-robin index."""
        return self._index

    def is_empty(self) -> bool:
        """Whether the topic has no writable queue."""
        return not self._queues

    def require_queues(self) -> None:
        """Raise `EmptySnapshotError` when there is nothing to choose from."""
        if not self._queues:
            raise EmptySnapshotError(self.topic)

    def write_queue_nums(self, broker: str) -> int:
        """How many writable queues `broker` has in this route (0 when it has none)."""
        return len(self._by_broker.get(broker, ()))

    def broker_queue(self, broker: str, k: int) -> Q:
        """The queue with id `k % write_queue_nums(broker)` of `broker`.

        This stands in for 4.9's rewrite of a queue's broker name and queue id: since the
        snapshot holds ids 0..n-1 of each writable broker, the queue already exists.
        """
        queues = self._by_broker[broker]
        return queues[k % len(queues)]

    def broker_turn(self, broker: str) -> Q:
        """`broker`'s next queue in its own rotation.

        A weighted walk picks a broker by its weight but, left to the shared index, the
        queue by where the walk happened to stop: the queue just after a skipped block
        took far more than its share (issue 47: 201 on one queue of 8 where 125 was
        even). Rotating each broker's queues on their own counter gives every queue of
        a broker an even part of whatever the broker is given. The rotation starts at
        the shared index, so fresh snapshots do not all begin at queue 0.
        """
        queues = self._by_broker[broker]
        turn = self._turns.get(broker, self._index.value) + 1
        self._turns[broker] = turn
        return queues[turn % len(queues)]

    def round_robin(self) -> Q:
        """`TopicPublishInfo.selectOneMessageQueue()`: advance once, take that queue."""
        self.require_queues()
        return self._queues[self._index.next() % len(self._queues)]

    def step_until(self, accept: Callable[[Q], bool]) -> Q | None:
        """Advance the index once per candidate, at most once round the list.

        This is how 4.9's `selectOneMessageQueue(lastBrokerName)` and 5.x's filtered
        `selectOneMessageQueue(QueueFilter...)` walk: every rejected queue costs an index
        step, so the next call starts after it.
        """
        for _ in range(len(self._queues)):
            queue = self._queues[self._index.next() % len(self._queues)]
            if accept(queue):
                return queue
        return None

    def walk_from_next(self, accept: Callable[[Q], bool]) -> Q | None:
        """Advance the index once, then look at consecutive queues from there.

        This is 4.9's `MQFaultStrategy.selectOneMessageQueue` walk: rejected queues do not
        move the shared index, so the queue after a banned block is chosen repeatedly.
        (Java's `int` would overflow after 2**31 steps; we wrap instead, a once-in-2**31
        difference.)
        """
        start = self._index.next()
        size = len(self._queues)
        for offset in range(size):
            queue = self._queues[(start + offset) % size]
            if accept(queue):
                return queue
        return None

    def __len__(self) -> int:
        return len(self._queues)

    def __repr__(self) -> str:
        counts = {name: len(qs) for name, qs in self._by_broker.items()}
        return f"PublishSnapshot(topic={self.topic!r}, queues={counts}, index={self._index.value})"
