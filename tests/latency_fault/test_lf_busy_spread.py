"""The spread on a busy machine (issue 47): equal brokers stay equal when a loaded
machine's scheduling noise lands on their latencies, and the queue inside a broker
rotates whatever picks the broker; a real brown-out is still avoided.

The model (pure, seeded, injected clock): a producer sends `PER_TICK` messages a tick
(1 ms); each answer comes back one tick later, and with probability `STALL_P` a broker's
answers of that tick were held up by a stall of the loop of 0-30 ms (one connection's
answers are read together), so the same noise hits every broker alike and only chance
decides which broker's estimate looks slower for a while: the loaded machine of issue 47
(two CPU-bound processes beside the producer and a 2x4 dev cluster)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from latency_fault import AdaptiveConfig, AdaptiveRouter, Router, make_router, spread_batch
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
    slow: dict[str, float] | None = None,
    router: Router | None = None,
    group: int = 1,
) -> list[Counter[tuple[str, int]]]:
    """Messages per queue of each burst, sent back to back by one fresh producer (with
    `router`, default adaptive; `slow`: extra ms on each answer of those brokers), in
    transparent groups of `group` dealt by `spread_batch` (1: each send picks alone)."""
    rng = random.Random(seed)
    router = router or make_router("adaptive", random.Random(seed))
    snap = snapshot(layout, seed=seed)
    slow = slow or {}
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
                latency = float(now - at) + stalls[broker] + slow.get(broker, 0.0)
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


def assert_even(totals: Counter[tuple[str, int]], layout: dict[str, int]) -> None:
    """Each queue within 25% of an even share, each broker within 3 points of its own."""
    sent = sum(totals.values())
    even = sent / sum(layout.values())
    for broker, queues in layout.items():
        for queue_id in range(queues):
            got = totals[broker, queue_id]
            assert abs(got - even) <= 0.25 * even, (broker, queue_id, got, even, totals)
        share = sum(n for (b, _), n in totals.items() if b == broker) / sent
        assert abs(share - queues / sum(layout.values())) <= 0.03, (broker, share, totals)


ISSUE_BURSTS = [1000, 1000, 300, 1000]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(
    ("layout", "group", "bursts"),
    [
        (TWO, 1, ISSUE_BURSTS),
        (TWO, 8, ISSUE_BURSTS),
        (TWO, 20, ISSUE_BURSTS),
        (THREE, 1, ISSUE_BURSTS),
        # 300 in groups of 20 over 12 queues goes in runs of 10, so 20 or 30 where 25
        # is even: a broker 3.3 points off by the runs' grain (issue 35), noise or not.
        (THREE, 20, [1000, 1000, 1000]),
    ],
    ids=["2x4-lone", "2x4-groups-of-8", "2x4-groups-of-20", "3x4-lone", "3x4-groups-of-20"],
)
def test_equal_brokers_under_loop_stalls_keep_even_shares(
    layout: dict[str, int], group: int, bursts: list[int], seed: int
) -> None:
    # The issue's bursts: 1,000, a second 1,000 (the one that went 73% to one broker),
    # and 300 (which put 55 on one queue of 8, share 37); sent one by one or dealt in
    # transparent groups as the producer deals a burst.
    for totals in burst_counts(layout, seed, bursts, group=group):
        assert_even(totals, layout)


@pytest.mark.parametrize("seed", range(6))
def test_a_300ms_brown_out_under_loop_stalls_is_still_avoided(seed: int) -> None:
    layout = {"a": 4, "b": 4, "c": 4}
    first, second = burst_counts(layout, seed, [2000, 2000], slow={"b": 300.0})
    for totals in (first, second):
        b = sum(n for (broker, _), n in totals.items() if broker == "b")
        assert b / sum(totals.values()) < 0.05, totals
        # and the healthy brokers' queues still share evenly
        assert_even(Counter({k: n for k, n in totals.items() if k[0] != "b"}), {"a": 4, "c": 4})


@pytest.mark.parametrize("seed", range(40))
def test_a_brokers_queues_share_evenly_whatever_picks_the_broker(seed: int) -> None:
    # With no floor the stalls do steer, weights swing from pick to pick, and the walk
    # stops just after whichever block it skipped: each broker's own queues must still
    # share its part evenly (within 25%), because the queue rotates per broker.
    layout = {"a": 4, "b": 4, "c": 4}
    router = AdaptiveRouter(random.Random(seed), AdaptiveConfig(steer_floor_ms=0.0))
    for totals in burst_counts(layout, seed, [1000, 1000, 300, 1000], router=router):
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
