"""``spread_batch``: a batch is routed per message - one router pick per queue at most,
messages dealt evenly over the picks, picks merged per broker."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from latency_fault import OffRouter, make_router, spread_batch
from tests.latency_fault.lf_support import snapshot

LAYOUT = {"a": 4, "b": 4, "c": 4}


@given(count=st.integers(1, 2000), start=st.integers(0, 11), turn=st.integers(0, 50))
def test_round_robin_gives_each_broker_its_share_of_every_batch(
    count: int, start: int, turn: int
) -> None:
    snap = snapshot(LAYOUT, seed=start)
    parts = spread_batch(OffRouter(), snap, count, now_ms=0, turn=turn)
    assert sum(n for _, n in parts) == count
    assert len({q.broker_name for q, _ in parts}) == len(parts)  # one part per broker
    if count >= len(snap):  # a whole round-robin cycle: exact thirds, give or take one
        assert sorted(n for _, n in parts)[-1] - sorted(n for _, n in parts)[0] <= 1


def test_small_batches_continue_the_round_robin_where_it_stood() -> None:
    snap = snapshot(LAYOUT)
    totals: dict[str, int] = {}
    for _ in range(12):  # 12 batches of 5: 60 messages, 5 per queue
        for queue, n in spread_batch(OffRouter(), snap, 5, now_ms=0):
            totals[queue.broker_name] = totals.get(queue.broker_name, 0) + n
    assert totals == {"a": 20, "b": 20, "c": 20}


def test_turn_rotates_the_queue_a_broker_part_goes_to() -> None:
    snap = snapshot(LAYOUT)
    seen = {
        queue.queue_id
        for turn in range(4)
        for queue, _ in spread_batch(OffRouter(), snap, 12, now_ms=0, turn=turn)
        if queue.broker_name == "a"
    }
    assert seen == {0, 1, 2, 3}


def test_adaptive_weights_apply_to_messages() -> None:
    router = make_router("adaptive", random.Random(3))
    snap = snapshot(LAYOUT)
    now = 1_000
    for _ in range(20):  # broker c answers 20x slower than a and b
        for broker, latency in (("a", 10.0), ("b", 10.0), ("c", 200.0)):
            router.record(broker, latency, isolation=False, now_ms=now)
        now += 10
    totals = {"a": 0, "b": 0, "c": 0}
    for _ in range(200):
        for queue, n in spread_batch(router, snap, 256, now_ms=now):
            totals[queue.broker_name] += n
    assert totals["c"] / sum(totals.values()) < 0.02  # slow broker: a sliver, per message
    assert abs(totals["a"] - totals["b"]) / sum(totals.values()) < 0.03


def test_an_empty_batch_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one message"):
        spread_batch(OffRouter(), snapshot(LAYOUT), 0, now_ms=0)
