"""F1/F2: the Java ban tables and the fault item table, pinned with a fake clock.

References: rocketmq-all-4.9.4 and rocketmq-all-5.3.x,
client/src/main/java/org/apache/rocketmq/client/latency/{MQFaultStrategy,
LatencyFaultToleranceImpl}.java.
"""

from __future__ import annotations

import itertools
import random

import pytest

from latency_fault import JAVA_4_9, JAVA_5, FaultPolicy, FaultTracker, WindowRule

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(
    ("latency", "duration"),
    [
        (0, 0),
        (49, 0),
        (50, 0),
        (100, 0),
        (549, 0),
        (550, 30_000),
        (999, 30_000),
        (1000, 60_000),
        (1999, 60_000),
        (2000, 120_000),
        (2999, 120_000),
        (3000, 180_000),
        (14_999, 180_000),
        (15_000, 600_000),
        (10**9, 600_000),
    ],
)
def test_f1_4_9_compute_not_available_duration_table(latency: int, duration: int) -> None:
    assert JAVA_4_9.not_available_duration(latency) == duration
    assert JAVA_4_9.ban_duration(latency, isolation=False) == duration


@pytest.mark.parametrize(
    ("latency", "duration"),
    [
        (0, 0),
        (549, 0),
        (550, 2000),
        (1799, 2000),
        (1800, 5000),
        (2999, 5000),
        (3000, 6000),
        (4999, 6000),
        (5000, 10_000),
        (14_999, 10_000),
        (15_000, 30_000),
    ],
)
def test_f2_5_compute_not_available_duration_table(latency: int, duration: int) -> None:
    assert JAVA_5.not_available_duration(latency) == duration


def test_f1_4_9_isolation_counts_as_30000ms_so_one_error_bans_for_10_minutes() -> None:
    assert JAVA_4_9.isolation_latency_ms == 30_000
    assert JAVA_4_9.ban_duration(3, isolation=True) == 600_000


def test_f2_5_isolation_counts_as_10000ms() -> None:
    assert JAVA_5.isolation_latency_ms == 10_000
    assert JAVA_5.ban_duration(3, isolation=True) == 10_000


def test_f1_f2_a_400ms_broker_is_never_banned_by_either_table() -> None:
    assert JAVA_4_9.ban_duration(400, isolation=False) == 0
    assert JAVA_5.ban_duration(549, isolation=False) == 0


def test_policy_rejects_mismatched_tables() -> None:
    with pytest.raises(ValueError, match="same length"):
        FaultPolicy("x", (1, 2), (0,), 10, WindowRule.EXTEND)
    with pytest.raises(ValueError, match="ascending"):
        FaultPolicy("x", (2, 1), (0, 0), 10, WindowRule.EXTEND)


def _tracker(rule: WindowRule) -> FaultTracker:
    return FaultTracker(rule, random.Random(3))


def test_f1_4_9_update_fault_item_overwrites_window_even_shortening_it() -> None:
    t = _tracker(WindowRule.OVERWRITE)
    assert t.update("b", 600, 30_000, reachable=True, now_ms=0)
    assert not t.is_available("b", 29_999)
    assert t.is_available("b", 30_000)  # `now - startTimestamp >= 0`
    # A fast answer during the ban sets startTimestamp = now + 0: the ban is lifted.
    assert not t.update("b", 10, 0, reachable=True, now_ms=1000)
    assert t.is_available("b", 1000)
    assert t.update("b", 10, 600_000, reachable=True, now_ms=2000)  # banned anew
    # a window rewritten while b is banned is not a new ban
    assert not t.update("b", 10, 600_000, reachable=True, now_ms=3000)
    assert not t.is_available("b", 602_999)


def test_f2_5_update_not_available_duration_only_extends() -> None:
    t = _tracker(WindowRule.EXTEND)
    assert t.update("b", 2000, 5000, reachable=True, now_ms=0)
    assert not t.update("b", 600, 2000, reachable=True, now_ms=1000)  # 3000 < 5000
    assert not t.update("b", 10, 0, reachable=True, now_ms=2000)  # d = 0: untouched
    assert not t.is_available("b", 4999)
    # extended to 10 s, but b was banned already: not a new ban
    assert not t.update("b", 3000, 6000, reachable=True, now_ms=4000)
    item = t.item("b")
    assert item is not None
    assert item.start_timestamp == 10_000
    assert item.current_latency == 3000
    assert t.update("b", 600, 2000, reachable=True, now_ms=10_000)  # over, banned again


def test_f2_5_new_item_with_zero_duration_is_available_at_once() -> None:
    t = _tracker(WindowRule.EXTEND)
    t.update("b", 20, 0, reachable=True, now_ms=5000)
    assert t.is_available("b", 5000)


def test_f2_5_reachable_flag_follows_the_last_update() -> None:
    t = _tracker(WindowRule.EXTEND)
    assert t.is_reachable("unknown")
    assert t.is_available("unknown", 0)
    t.update("b", 20, 10_000, reachable=False, now_ms=0)
    assert not t.is_reachable("b")
    t.update("b", 20, 0, reachable=True, now_ms=1)
    assert t.is_reachable("b")


def test_f1_4_9_pick_one_at_least_round_robins_over_the_better_half() -> None:
    t = _tracker(WindowRule.OVERWRITE)
    now = 1000
    t.update("slow_ok", 100, 0, reachable=True, now_ms=0)  # available, 100 ms
    t.update("banned_fast", 5, 600_000, reachable=True, now_ms=0)  # banned, 5 ms
    t.update("fast_ok", 50, 0, reachable=True, now_ms=0)  # available, 50 ms
    t.update("banned_late", 5, 600_000, reachable=True, now_ms=10)  # banned, later start
    # compareTo: available first, then latency, then start: fast_ok, slow_ok | banned...
    picks = [t.pick_one_at_least(now) for _ in range(6)]
    assert set(picks) == {"fast_ok", "slow_ok"}
    assert all(a != b for a, b in itertools.pairwise(picks))  # whichItemWorst % half


def test_f1_4_9_pick_one_at_least_ties_on_latency_prefer_earlier_start() -> None:
    t = _tracker(WindowRule.OVERWRITE)
    t.update("late", 5, 30_000, reachable=True, now_ms=20)
    t.update("early", 5, 30_000, reachable=True, now_ms=10)
    t.update("third", 900, 30_000, reachable=True, now_ms=0)
    # three items: half = 1, so always the first after sorting
    assert {t.pick_one_at_least(100) for _ in range(5)} == {"early"}


def test_f1_4_9_pick_one_at_least_single_item_and_empty() -> None:
    t = _tracker(WindowRule.OVERWRITE)
    assert t.pick_one_at_least(0) is None
    t.update("only", 5, 30_000, reachable=True, now_ms=0)
    assert t.pick_one_at_least(0) == "only"


def test_remove_retain_and_banned_view() -> None:
    t = _tracker(WindowRule.EXTEND)
    for name in "abc":
        t.update(name, 5, 10_000, reachable=True, now_ms=0)
    assert t.banned(5000) == {"a": 10_000, "b": 10_000, "c": 10_000}
    t.remove("a")
    assert t.is_available("a", 0)
    t.retain(["b"])
    assert t.banned(0) == {"b": 10_000}
    assert len(t) == 1
    assert "start_timestamp=10000" in repr(t)
