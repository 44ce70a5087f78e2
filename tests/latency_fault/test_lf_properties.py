"""Hypothesis properties of selection and of the fault windows."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from lf_support import snapshot

from latency_fault import JAVA_5, Classic5Router, FaultTracker, Router, WindowRule, make_router

pytestmark = pytest.mark.timeout(60)

BROKERS = "abcde"

layouts = st.dictionaries(
    st.sampled_from(BROKERS), st.integers(min_value=1, max_value=4), min_size=1, max_size=5
)
# (broker index, latency ms, isolation, reachable, ms since the previous event)
events = st.lists(
    st.tuples(
        st.integers(0, len(BROKERS) - 1),
        st.integers(0, 20_000),
        st.booleans(),
        st.booleans(),
        st.integers(0, 5000),
    ),
    max_size=40,
)


def _replay(router: Router, history: list[tuple[int, int, bool, bool, int]]) -> int:
    now = 0
    for broker, latency, isolation, reachable, gap in history:
        now += gap
        router.record(
            BROKERS[broker], latency, isolation=isolation, now_ms=now, reachable=reachable
        )
    return now


@settings(max_examples=150, deadline=None)
@example(  # found by CI: a half-open broker whose probation just began was passed over
    name="adaptive",
    layout={"b": 1, "d": 1},
    history=[
        (1, 0, True, False, 0),
        (1, 0, True, False, 0),
        (3, 0, True, False, 0),
        (0, 0, False, False, 451),
        (3, 0, True, False, 0),
    ],
    later=549,
    last=None,
    seed=0,
)
@given(
    name=st.sampled_from(["classic_4_9", "adaptive"]),
    layout=layouts,
    history=events,
    later=st.integers(0, 40_000),
    last=st.none() | st.sampled_from(BROKERS),
    seed=st.integers(0, 2**32),
)
def test_never_an_unavailable_broker_while_an_available_one_exists(
    name: str,
    layout: dict[str, int],
    history: list[tuple[int, int, bool, bool, int]],
    later: int,
    last: str | None,
    seed: int,
) -> None:
    router = make_router(name, random.Random(seed))
    now = _replay(router, history) + later
    snap = snapshot(layout, seed=seed)
    for _ in range(5):
        picked = router.select_queue(snap, last, now).broker_name
        if any(router.is_available(b, now) for b in layout):
            assert router.is_available(picked, now)
        last = picked


@settings(max_examples=150, deadline=None)
@given(
    layout=layouts,
    history=events,
    later=st.integers(0, 40_000),
    last=st.none() | st.sampled_from(BROKERS),
    seed=st.integers(0, 2**32),
)
def test_5_never_an_unavailable_broker_while_an_available_other_than_last_exists(
    layout: dict[str, int],
    history: list[tuple[int, int, bool, bool, int]],
    later: int,
    last: str | None,
    seed: int,
) -> None:
    """5.x ranks "reachable, not the last broker" above "available, but the last"."""
    router = Classic5Router(random.Random(seed))
    now = _replay(router, history) + later
    snap = snapshot(layout, seed=seed)
    picked = router.select_queue(snap, last, now).broker_name
    if any(router.is_available(b, now) and b != last for b in layout):
        assert router.is_available(picked, now)
        assert picked != last


@settings(max_examples=200, deadline=None)
@given(history=events)
def test_f2_5_windows_never_move_earlier(history: list[tuple[int, int, bool, bool, int]]) -> None:
    tracker = FaultTracker(WindowRule.EXTEND, random.Random(0))
    now = 0
    ends: dict[str, int] = {}
    for broker, latency, isolation, reachable, gap in history:
        now += gap
        name = BROKERS[broker]
        duration = JAVA_5.ban_duration(latency, isolation=isolation)
        tracker.update(name, latency, duration, reachable=reachable, now_ms=now)
        item = tracker.item(name)
        assert item is not None
        assert item.start_timestamp >= ends.get(name, 0)
        if duration > 0:
            assert item.start_timestamp >= now + duration
        ends[name] = item.start_timestamp


@settings(max_examples=200, deadline=None)
@given(history=events)
def test_f1_4_9_window_is_always_the_last_update(
    history: list[tuple[int, int, bool, bool, int]],
) -> None:
    tracker = FaultTracker(WindowRule.OVERWRITE, random.Random(0))
    now = 0
    for broker, latency, _isolation, reachable, gap in history:
        now += gap
        tracker.update(BROKERS[broker], latency, latency * 3, reachable=reachable, now_ms=now)
        item = tracker.item(BROKERS[broker])
        assert item is not None
        assert item.start_timestamp == now + latency * 3


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(["off", "classic_4_9", "classic_5", "adaptive"]),
    layout=layouts.filter(lambda d: len(d) >= 2),
    spread=st.lists(st.floats(1.0, 1.5), min_size=5, max_size=5),
    seed=st.integers(0, 2**32),
    data=st.data(),
)
def test_healthy_spread_stays_within_10_percent_of_round_robin(
    name: str, layout: dict[str, int], spread: list[float], seed: int, data: st.DataObject
) -> None:
    """Brokers within 1.5x of each other, each sample +-20%: every broker's share of
    60 rounds of the queue list is within 10% (relative) of its queue share.

    Healthy for the Java tables means every sample under 550 ms (base <= 300 ms);
    the adaptive router has no absolute threshold, so any base up to 5 s."""
    base = data.draw(st.integers(5, 5000 if name == "adaptive" else 300), label="base")
    router = make_router(name, random.Random(seed))
    noise = random.Random(seed)
    typical = {b: base * spread[i] for i, b in enumerate(sorted(layout))}
    snap = snapshot(layout, seed=seed)
    rounds = 60 * len(snap)
    counts: Counter[str] = Counter()
    now = 0
    for _ in range(rounds):
        broker = router.select_queue(snap, None, now).broker_name
        counts[broker] += 1
        latency = round(typical[broker] * noise.uniform(0.8, 1.2))
        now += latency
        router.record(broker, latency, isolation=False, now_ms=now)
    for broker, n in layout.items():
        fair = n / len(snap)
        assert abs(counts[broker] / rounds - fair) <= 0.1 * fair, (broker, counts)
