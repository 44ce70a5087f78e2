"""Helpers shared by the latency_fault tests (not a test module)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from latency_fault import PublishSnapshot


@dataclass(frozen=True)
class MQ:
    """Shaped like the producer's MessageQueue."""

    topic: str
    broker_name: str
    queue_id: int


def queues(layout: dict[str, int], topic: str = "T") -> list[MQ]:
    """Route-ordered queues: brokers by name, ids 0..n-1 each."""
    return [MQ(topic, b, i) for b in sorted(layout) for i in range(layout[b])]


def snapshot(layout: dict[str, int], seed: int = 1, topic: str = "T") -> PublishSnapshot[MQ]:
    return PublishSnapshot(queues(layout, topic), random.Random(seed), topic=topic)


def park(snap: PublishSnapshot[MQ], position: int) -> None:
    """Advance the index until its next step lands on queue `position`."""
    while (snap.index.value + 1) % len(snap) != position:
        snap.index.next()
