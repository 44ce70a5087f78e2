"""Adaptive routing sees unanswered attempts: a broker that went slow or silent loses its
share before its first slow answer arrives (fake clock, no I/O)."""

from __future__ import annotations

import random
from collections import Counter

from lf_support import snapshot

from latency_fault import AdaptiveRouter

LAYOUT = {"a": 4, "b": 4, "c": 4}


def warmed_router(latency_ms: int = 2) -> AdaptiveRouter:
    router = AdaptiveRouter(random.Random(3))
    for broker in LAYOUT:
        for t in range(20):
            router.record(broker, latency_ms, isolation=False, now_ms=t)
    return router


def shares(router: AdaptiveRouter, now_ms: int, picks: int = 3000) -> Counter[str]:
    snap = snapshot(LAYOUT)
    return Counter(router.select_queue(snap, None, now_ms).broker_name for _ in range(picks))


def test_unanswered_attempt_to_a_stalled_broker_steers_before_any_answer() -> None:
    router = warmed_router()
    router.on_dispatch("b", 100)  # sent, never answered (yet)
    # 50 ms later b's oldest attempt is 25x its peers' latency: almost no share
    counts = shares(router, now_ms=150)
    assert counts["b"] / 3000 < 0.02
    assert counts["a"] > 1200
    assert counts["c"] > 1200


def test_answered_attempts_leave_no_trace() -> None:
    router = warmed_router()
    for t in range(100, 200):
        router.on_dispatch("b", t)
        router.on_complete("b")
        router.record("b", 2, isolation=False, now_ms=t)
    counts = shares(router, now_ms=5000)
    assert all(0.30 <= counts[b] / 3000 <= 0.37 for b in LAYOUT)


def test_young_outstanding_attempts_do_not_steer() -> None:
    router = warmed_router()
    for broker in LAYOUT:
        router.on_dispatch(broker, 99)
    counts = shares(router, now_ms=100)  # 1 ms old: within normal latency
    assert all(0.30 <= counts[b] / 3000 <= 0.37 for b in LAYOUT)


def test_a_stall_that_ages_every_broker_alike_steers_nothing() -> None:
    """Our own event loop pausing 300 ms delays every answer; no broker is to blame."""
    router = warmed_router()
    for broker in LAYOUT:
        router.on_dispatch(broker, 100)
    counts = shares(router, now_ms=400)
    assert all(0.30 <= counts[b] / 3000 <= 0.37 for b in LAYOUT)


def test_a_ban_applies_within_the_same_millisecond_despite_the_weight_cache() -> None:
    router = warmed_router()
    snap = snapshot(LAYOUT)
    router.select_queue(snap, None, 500)  # weights cached for t=500
    router.record("b", 10, isolation=True, now_ms=500)
    router.record("b", 10, isolation=True, now_ms=500)  # second failure: banned
    assert not router.is_available("b", 500)
    picks = {router.select_queue(snap, None, 500).broker_name for _ in range(200)}
    assert "b" not in picks
