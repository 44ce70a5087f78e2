"""The queue inside a broker rotates whatever picks the broker (issue 47): when adaptive
weights steer, each broker's part of the load still spreads evenly over its queues.

The noisy model (pure, seeded, injected clock): a producer sends `PER_TICK` messages a
tick (1 ms); each answer comes back one tick later, and with probability `STALL_P` a
broker's answers of that tick were held up by a stall of the loop of 0-30 ms (one
connection's answers are read together). The same noise hits every broker alike, yet
adaptive routing steers on it (whichever broker's estimate looks slower for a while):
issue 47's "steers on scheduling noise", left open here (see docs/benchmarks.md), which
makes the weights swing from pick to pick - the case the rotation must hold in."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from latency_fault import Router, make_router, spread_batch
from tests.latency_fault.lf_support import snapshot

PER_TICK = 20
STALL_P = 0.3
STALL_MS = 30.0
TWO = {"a": 4, "b": 4}
THREE = {"a": 4, "b": 4, "c": 4}


def burst_counts(
    layout: dict[str, int],
    seed: int,
    bursts: list[int],
    router: Router | None = None,
    group: int = 1,
) -> list[Counter[tuple[str, int]]]:
    """Messages per queue of each burst, sent back to back by one fresh producer (with
    `router`, default adaptive), in
    transparent groups of `group` dealt by `spread_batch` (1: each send picks alone)."""
    rng = random.Random(seed)
    router = router or make_router("adaptive", random.Random(seed))
    snap = snapshot(layout, seed=seed)
    now = 0
    pending: list[tuple[str, int]] = []
    counts: list[Counter[tuple[str, int]]] = []
    for size in bursts:
        totals: Counter[tuple[str, int]] = Counter()
        sent = 0
        while sent < size or pending:
            now += 1
            # One connection's answers are read together: a stall holds them all.
            stalls = {
                b: rng.uniform(0.0, STALL_MS) if rng.random() < STALL_P else 0.0 for b in layout
            }
            for broker, at in pending:
                latency = float(now - at) + stalls[broker]
                router.on_complete(broker)
                router.record(broker, latency, isolation=False, now_ms=now)
            pending = []
            for _ in range(PER_TICK // group):
                count = min(group, size - sent)
                if count == 0:
                    break
                parts = (
                    [(router.select_queue(snap, None, now), 1)]
                    if count == 1
                    else spread_batch(router, snap, count, now_ms=now)
                )
                for queue, n in parts:
                    for _ in range(n):
                        router.on_dispatch(queue.broker_name, now)
                        pending.append((queue.broker_name, now))
                    totals[queue.broker_name, queue.queue_id] += n
                sent += count
        counts.append(totals)
    return counts


@pytest.mark.parametrize("seed", range(40))
def test_a_brokers_queues_share_evenly_whatever_picks_the_broker(seed: int) -> None:
    # The stalls steer, weights swing from pick to pick, and the walk stops just after
    # whichever block it skipped: each broker's own queues must still share its part
    # evenly (within 25%), because the queue rotates per broker. (Lone sends: a
    # transparent group's runs put 4+ messages on one queue by design, issue 35.)
    layout = {"a": 4, "b": 4, "c": 4}
    for totals in burst_counts(layout, seed, [1000, 1000, 300, 1000]):
        for broker in layout:
            mine = [totals[broker, q] for q in range(layout[broker])]
            even = sum(mine) / len(mine)
            assert max(abs(n - even) for n in mine) <= 0.25 * even, (broker, mine, totals)


@pytest.mark.parametrize("slow_ms", [74.4, 90.0, 120.0])
def test_a_slow_brokers_sliver_rotates_over_its_queues(slow_ms: float) -> None:
    # b 3.2x slower than a (74.4 ms against 20): weight 1/4, so a walk adding a quarter
    # credit per look at b's 4 queues came back to the same few: 238, 232, 92, 237.
    router = make_router("adaptive", random.Random(1))
    snap = snapshot(TWO)
    for now in range(0, 400, 10):
        router.record("a", 20.0, isolation=False, now_ms=now)
        router.record("b", slow_ms, isolation=False, now_ms=now)
    picks = Counter(router.select_queue(snap, None, 400) for _ in range(4000))
    for broker in TWO:
        mine = [n for queue, n in picks.items() if queue.broker_name == broker]
        assert len(mine) == TWO[broker], picks
        even = sum(mine) / len(mine)
        assert max(abs(n - even) for n in mine) <= max(1.0, 0.02 * even), (broker, picks)
