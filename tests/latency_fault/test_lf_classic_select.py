"""F3: queue selection of the Java client, step for step (index moves included).

References: rocketmq-all-4.9.4 `MQFaultStrategy.selectOneMessageQueue(tpInfo,
lastBrokerName)` and `TopicPublishInfo.selectOneMessageQueue(lastBrokerName)`;
rocketmq-all-5.3.x `MQFaultStrategy.selectOneMessageQueue(tpInfo, lastBrokerName,
resetIndex)` with `BrokerFilter`, `availableFilter`, `reachableFilter`.
"""

from __future__ import annotations

import random

import pytest
from lf_support import park, snapshot

from latency_fault import Classic5Router, Classic49Router, OffRouter

pytestmark = pytest.mark.timeout(60)

LAYOUT = {"a": 2, "b": 2, "c": 2}  # queues: a0 a1 b0 b1 c0 c1


def _names(qs: list[object]) -> list[str]:
    return [f"{q.broker_name}{q.queue_id}" for q in qs]  # type: ignore[attr-defined]


def test_f3_off_is_round_robin_from_a_random_start() -> None:
    snap = snapshot(LAYOUT, seed=4)
    start = snap.index.value
    router = OffRouter()
    picks = [router.select_queue(snap, None, 0) for _ in range(7)]
    assert picks == [snap.queues[(start + k) % 6] for k in range(1, 8)]
    other = snapshot(LAYOUT, seed=5)
    assert other.index.value != start


def test_f3_off_retry_skips_the_last_broker_stepping_the_index_per_candidate() -> None:
    snap = snapshot(LAYOUT)
    park(snap, 0)  # next queue: a0
    before = snap.index.value
    picked = OffRouter().select_queue(snap, "a", 0)
    assert _names([picked]) == ["b0"]
    assert snap.index.value == before + 3  # a0, a1 rejected; b0 taken


def test_f3_off_retry_with_a_single_broker_falls_back_to_round_robin() -> None:
    snap = snapshot({"a": 3})
    picked = OffRouter().select_queue(snap, "a", 0)
    assert picked.broker_name == "a"


def test_f3_off_ignores_outcomes() -> None:
    router = OffRouter()
    router.record("a", 20_000, isolation=True, now_ms=0)
    assert router.is_available("a", 0)
    assert router.banned(0) == {}
    assert router.ban_count == 0
    assert router.due_probes(0) == []


def test_f3_4_9_skips_unavailable_brokers() -> None:
    router = Classic49Router(random.Random(1))
    router.record("b", 5, isolation=True, now_ms=0)
    snap = snapshot(LAYOUT)
    picks = {router.select_queue(snap, None, 1000).broker_name for _ in range(60)}
    assert picks == {"a", "c"}


@pytest.mark.parametrize(
    ("position", "expected"),
    [(0, "a0"), (1, "a1"), (2, "c0"), (3, "c0"), (4, "c0"), (5, "c1")],
)
def test_f3_4_9_walk_advances_the_index_once_so_the_queue_after_a_ban_repeats(
    position: int, expected: str
) -> None:
    router = Classic49Router(random.Random(1))
    router.record("b", 600, isolation=False, now_ms=0)  # 550 ms+ -> 30 s ban
    snap = snapshot(LAYOUT)
    park(snap, position)
    before = snap.index.value
    assert _names([router.select_queue(snap, None, 10)]) == [expected]
    assert snap.index.value == before + 1


def test_f3_4_9_with_tracking_does_not_avoid_the_last_broker() -> None:
    router = Classic49Router(random.Random(1))
    router.record("a", 30, isolation=False, now_ms=0)
    snap = snapshot(LAYOUT)
    park(snap, 0)
    assert router.select_queue(snap, "a", 10).broker_name == "a"


def test_f3_4_9_all_banned_uses_pick_one_at_least_and_its_write_queue() -> None:
    router = Classic49Router(random.Random(1))
    # All isolated (600 s); the table keeps each attempt's real latency: b failed fastest.
    router.record("a", 40, isolation=True, now_ms=0)
    router.record("b", 7, isolation=True, now_ms=0)
    router.record("c", 900, isolation=True, now_ms=0)
    snap = snapshot(LAYOUT)
    before = snap.index.value
    picked = router.select_queue(snap, None, 10)
    assert picked.broker_name == "b"  # pickOneAtLeast: three items, half = 1, the best
    # index: walk (+1), tpInfo.selectOneMessageQueue() (+1), queue id (+1)
    assert snap.index.value == before + 3
    assert picked.queue_id == (before + 3) % 2
    assert picked in snap.queues


def test_f3_4_9_all_banned_and_best_is_not_in_this_route_removes_it() -> None:
    router = Classic49Router(random.Random(1))
    router.record("a", 5, isolation=True, now_ms=0)
    router.record("b", 5, isolation=True, now_ms=0)
    router.record("other_topic_broker", 5, isolation=False, now_ms=0)  # available
    snap = snapshot({"a": 2, "b": 2})
    before = snap.index.value
    picked = router.select_queue(snap, None, 10)
    assert router.tracker.item("other_topic_broker") is None
    assert picked == snap.queues[(before + 2) % 4]  # walk (+1), then plain round-robin


def test_f3_5_first_tier_available_and_not_last_broker() -> None:
    router = Classic5Router(random.Random(1))
    router.record("c", 5, isolation=True, now_ms=0)
    snap = snapshot(LAYOUT)
    picks = {router.select_queue(snap, "a", 100).broker_name for _ in range(30)}
    assert picks == {"b"}


def test_f3_5_second_tier_prefers_reachable_unavailable_over_the_last_broker() -> None:
    router = Classic5Router(random.Random(1))
    router.record("b", 5, isolation=True, now_ms=0, reachable=True)
    router.record("c", 5, isolation=True, now_ms=0, reachable=False)  # broker error code
    snap = snapshot(LAYOUT)
    # a is available but was the last broker; b is banned but reachable.
    picks = {router.select_queue(snap, "a", 100).broker_name for _ in range(30)}
    assert picks == {"b"}
    # first attempt: a is the only available broker
    assert {router.select_queue(snap, None, 100).broker_name for _ in range(30)} == {"a"}


def test_f3_5_third_tier_is_plain_round_robin_over_everything() -> None:
    router = Classic5Router(random.Random(1))
    router.record("b", 5, isolation=True, now_ms=0, reachable=False)
    router.record("c", 5, isolation=True, now_ms=0, reachable=False)
    snap = snapshot(LAYOUT)
    picks = {router.select_queue(snap, "a", 100).broker_name for _ in range(60)}
    assert picks == {"a", "b", "c"}


def test_f3_5_retry_resets_the_index_from_the_router_rng() -> None:
    rng = random.Random(9)
    router = Classic5Router(rng)
    snap = snapshot(LAYOUT)
    twin = random.Random()
    twin.setstate(rng.getstate())
    expected_start = twin.randrange(0x7FFF_FFFF)  # ThreadLocalIndex.reset()
    steps = next(k for k in range(1, 7) if snap.queues[(expected_start + k) % 6].broker_name != "b")
    picked = router.select_queue(snap, "b", 0)
    assert picked == snap.queues[(expected_start + steps) % 6]
    assert snap.index.value == expected_start + steps


def test_f3_5_first_attempt_keeps_the_index_sequence() -> None:
    router = Classic5Router(random.Random(9))
    snap = snapshot(LAYOUT)
    start = snap.index.value
    picks = [router.select_queue(snap, None, 0) for _ in range(6)]
    assert picks == [snap.queues[(start + k) % 6] for k in range(1, 7)]


def test_f2_5_fast_success_does_not_lift_a_ban_but_4_9_does() -> None:
    r5 = Classic5Router(random.Random(1))
    r49 = Classic49Router(random.Random(1))
    for router in (r5, r49):
        router.record("a", 5, isolation=True, now_ms=0)
        router.record("a", 5, isolation=False, now_ms=100)
    assert not r5.is_available("a", 100)
    assert r49.is_available("a", 100)


def test_classic_repr_and_telemetry_show_live_bans() -> None:
    router = Classic49Router(random.Random(1))
    router.record("b", 5, isolation=True, now_ms=1000)
    router.record("a", 20, isolation=False, now_ms=1000)
    assert router.banned(1000) == {"b": 601_000}
    assert router.ban_count == 1
    assert "'b': 601000" in repr(router)
    assert "bans=1" in repr(router)
    router.forget("b")
    router.retain(["a"])
    assert router.banned(1000) == {}
    assert router.due_probes(1000) == []
