"""F4: the adaptive router's rules, one at a time, with a fake clock."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from lf_support import snapshot

from latency_fault import AdaptiveConfig, AdaptiveRouter, BrokerState

pytestmark = pytest.mark.timeout(60)

CFG = AdaptiveConfig()
LAYOUT = {"a": 4, "b": 4, "c": 4}


def _router(seed: int = 0) -> AdaptiveRouter:
    return AdaptiveRouter(random.Random(seed))


def _fail(router: AdaptiveRouter, broker: str, now: int, times: int = 1) -> None:
    for _ in range(times):
        router.record(broker, 3, isolation=True, now_ms=now)


def _shares(
    router: AdaptiveRouter, n: int, now: int = 0, feed: dict[str, int] | None = None
) -> Counter[str]:
    snap = snapshot(LAYOUT)
    counts: Counter[str] = Counter()
    for i in range(n):
        broker = router.select_queue(snap, None, now + i).broker_name
        counts[broker] += 1
        if feed is not None:
            router.record(broker, feed[broker], isolation=False, now_ms=now + i)
    return counts


def test_f4_unknown_brokers_get_exact_round_robin() -> None:
    assert _shares(_router(), 300) == {"a": 100, "b": 100, "c": 100}


def test_f4_jitter_within_tolerance_keeps_exact_round_robin() -> None:
    router = _router()
    rng = random.Random(1)
    snap = snapshot(LAYOUT)
    counts: Counter[str] = Counter()
    for i in range(3000):
        broker = router.select_queue(snap, None, i).broker_name
        counts[broker] += 1
        router.record(broker, round(20 * rng.uniform(0.8, 1.2)), isolation=False, now_ms=i)
    assert counts == {"a": 1000, "b": 1000, "c": 1000}


def test_f4a_a_broker_10x_slower_than_its_peers_loses_most_of_its_share() -> None:
    router = _router()
    counts = _shares(router, 6000, feed={"a": 20, "b": 20, "c": 200})
    assert counts["c"] / 6000 < 0.02
    health = router.health("c")
    assert health is not None
    assert health.last_weight < 0.05


def test_f4a_weight_is_relative_to_the_median_broker_with_slack() -> None:
    router = _router()
    for broker, latency in {"a": 1, "b": 1, "c": 5}.items():
        router.record(broker, latency, isolation=False, now_ms=0)
    # 5x slower, but (5 + 5) / (1 + 5) < 2: not worth steering
    assert _shares(router, 300, now=1) == {"a": 100, "b": 100, "c": 100}


def _warm(router: AdaptiveRouter, latencies: dict[str, float], rounds: int = 40) -> int:
    """Feed every broker `rounds` answers at its latency, 1 ms apart; returns the time."""
    now = 0
    for _ in range(rounds):
        for broker, latency in latencies.items():
            router.record(broker, latency, isolation=False, now_ms=now)
        now += 1
    return now


def test_f4a_two_of_three_slow_brokers_lose_their_share_to_the_healthy_one() -> None:
    router = _router()
    now = _warm(router, {"a": 1, "b": 300, "c": 300})
    counts = _shares(router, 3000, now=now)
    assert counts["a"] > 2900, counts


def test_f4_one_latency_spike_is_clipped() -> None:
    router = _router()
    now = _warm(router, {"a": 20, "b": 20, "c": 20})
    health = router.health("c")
    assert health is not None and health.latency_ms is not None
    before = health.latency_ms
    router.record("c", 5000, isolation=False, now_ms=now)
    # counted as 4x the estimate, both with the 5 ms slack: 4 * (20 + 5) - 5 = 95 ms
    limit = CFG.spike_clip * (before + CFG.latency_slack_ms) - CFG.latency_slack_ms
    assert health.latency_ms == pytest.approx(before + CFG.latency_alpha * (limit - before))
    assert _shares(router, 300, now=now + 1) == {"a": 100, "b": 100, "c": 100}


def test_f4_spikes_in_a_row_are_a_slowdown_and_get_through() -> None:
    router = _router()
    now = _warm(router, {"a": 20, "b": 20, "c": 20})
    health = router.health("c")
    assert health is not None
    for _ in range(3):
        router.record("c", 400, isolation=False, now_ms=now)
    assert health.latency_ms is not None and health.latency_ms > 150
    assert _shares(router, 3000, now=now + 1)["c"] < 100  # of a fair 1000
    # ...while a normal answer in between resets the count: spike, normal, spike
    router = _router()
    now = _warm(router, {"a": 20, "b": 20, "c": 20})
    for latency in (400, 20, 400):
        router.record("c", latency, isolation=False, now_ms=now)
    health = router.health("c")
    assert health is not None and health.latency_ms is not None
    assert health.latency_ms < 60  # each spike clipped at 4x: 35, 32, 54 ms
    assert health.spikes_in_a_row == 1


def test_f4_the_slack_is_the_clip_floor_so_sub_ms_estimates_still_see_300ms() -> None:
    router = _router()
    now = _warm(router, {"a": 0.3, "b": 0.3, "c": 0.3})
    router.record("c", 300, isolation=False, now_ms=now)
    health = router.health("c")
    assert health is not None and health.latency_ms is not None
    # not 1.6 x 0.3 ms: the limit is 4 * (0.3 + 5) - 5 = 16.2 ms
    assert health.latency_ms == pytest.approx(0.3 + 0.2 * (16.2 - 0.3), abs=0.01)


def test_f4_a_first_answer_is_weighed_against_the_peers_not_taken_whole() -> None:
    router = _router()
    now = _warm(router, {"a": 1, "b": 1})
    router.record("c", 77, isolation=False, now_ms=now)  # c's cold first answer
    health = router.health("c")
    assert health is not None and health.latency_ms is not None
    # from the peers' 1 ms: limit 4 * (1 + 5) - 5 = 19 ms, weighed 0.2
    assert health.latency_ms == pytest.approx(1 + 0.2 * (19 - 1), abs=0.01)
    assert _shares(router, 300, now=now + 1) == {"a": 100, "b": 100, "c": 100}


def test_f4_a_first_answer_with_no_peer_known_is_weighed_against_zero() -> None:
    router = _router()
    router.record("a", 77, isolation=False, now_ms=0)
    health = router.health("a")
    assert health is not None
    assert health.latency_ms == pytest.approx(0.2 * (4 * 5 - 5))


def test_f4_a_sample_after_a_long_silence_counts_for_more() -> None:
    router = _router()
    router.record("c", 200, isolation=False, now_ms=0)
    router.record("c", 20, isolation=False, now_ms=3000)  # 3 s later: weight 1 - e^-3
    health = router.health("c")
    assert health is not None and health.latency_ms is not None
    assert health.latency_ms < 30


def test_f4_one_failure_does_not_ban_the_second_in_a_row_does() -> None:
    router = _router()
    _fail(router, "b", 100)
    assert router.state("b", 100) is BrokerState.HEALTHY
    router.record("b", 20, isolation=False, now_ms=110)
    _fail(router, "b", 120)
    assert router.is_available("b", 120)
    _fail(router, "b", 130)
    assert router.state("b", 130) is BrokerState.BANNED
    assert router.banned(130) == {"b": 130 + CFG.base_ban_ms}
    assert router.ban_count == 1


def test_f4_bans_double_with_each_strike_up_to_the_cap() -> None:
    router = _router()
    now = 0
    _fail(router, "b", now, times=2)
    durations = []
    for _ in range(8):
        until = router.banned(now)["b"]
        durations.append(until - now)
        now = until  # ban over: half-open
        assert router.state("b", now) is BrokerState.HALF_OPEN
        _fail(router, "b", now)  # the trial fails
    assert durations == [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]


def test_f4_strikes_decay_with_quiet_time() -> None:
    router = _router()
    _fail(router, "b", 0, times=2)  # strike 1
    _fail(router, "b", 1000)  # half-open trial fails: strike 2, 2 s
    assert router.banned(1000)["b"] == 3000
    for i in range(3):
        router.record("b", 20, isolation=False, now_ms=3000 + i)  # trials pass
    assert router.state("b", 3003) is BrokerState.HEALTHY
    quiet = 3000 + 2 * CFG.strike_decay_ms  # two decay periods after the ban ended
    _fail(router, "b", quiet, times=2)  # both strikes forgiven: back to the base ban
    assert router.banned(quiet)["b"] == quiet + CFG.base_ban_ms


def test_f4_failures_while_banned_are_not_new_strikes() -> None:
    router = _router()
    _fail(router, "b", 0, times=2)
    _fail(router, "b", 10, times=50)  # in-flight stragglers
    assert router.banned(10) == {"b": CFG.base_ban_ms}
    assert router.ban_count == 1


def test_f4_banned_broker_is_due_a_probe_once_per_interval() -> None:
    router = _router()
    _fail(router, "b", 0, times=2)
    assert router.due_probes(0) == []
    assert router.due_probes(CFG.probe_interval_ms) == ["b"]
    assert router.due_probes(CFG.probe_interval_ms + 1) == []  # booked
    assert router.due_probes(2 * CFG.probe_interval_ms) == ["b"]


def test_f4_probe_success_cuts_the_ban_short_then_trials_close_the_breaker() -> None:
    router = AdaptiveRouter(random.Random(0), AdaptiveConfig(base_ban_ms=20_000))
    _fail(router, "b", 0, times=2)
    router.record("b", 20, isolation=False, now_ms=1000)  # the probe answered
    assert router.state("b", 1000) is BrokerState.HALF_OPEN
    router.record("b", 20, isolation=False, now_ms=1100)
    router.record("b", 20, isolation=False, now_ms=1200)
    assert router.state("b", 1200) is BrokerState.HALF_OPEN
    router.record("b", 20, isolation=False, now_ms=1300)
    assert router.state("b", 1300) is BrokerState.HEALTHY


def test_f4_half_open_lets_one_trial_at_a_time_through() -> None:
    router = _router()
    _fail(router, "b", 0, times=2)
    snap = snapshot(LAYOUT)
    now = CFG.base_ban_ms
    picks = [router.select_queue(snap, None, now).broker_name for _ in range(30)]
    assert picks.count("b") == 1
    # no answer yet: no second trial, however long we wait short of the trial timeout
    later = now + CFG.trial_timeout_ms - 1
    assert "b" not in {router.select_queue(snap, None, later).broker_name for _ in range(30)}
    # the trial answered: the next one goes at once
    router.record("b", 20, isolation=False, now_ms=later)
    picks = [router.select_queue(snap, None, later).broker_name for _ in range(30)]
    assert picks.count("b") == 1
    # an unanswered (e.g. cancelled) trial frees the gate after the trial timeout
    picks = [
        router.select_queue(snap, None, later + CFG.trial_timeout_ms).broker_name for _ in range(30)
    ]
    assert picks.count("b") == 1


def test_f4_healed_broker_keeps_no_more_errors_than_the_tolerance() -> None:
    router = _router()
    _fail(router, "b", 0, times=2)
    for i in range(CFG.trials_to_close):
        router.record("b", 20, isolation=False, now_ms=1000 + i)
    health = router.health("b")
    assert health is not None
    assert health.error_rate <= CFG.error_tolerance
    assert health.weight(health.latency_ms, 20.0, CFG) == 1.0


def test_f4_a_real_error_rate_costs_share() -> None:
    router = _router()
    for i in range(40):
        router.record("c", 20, isolation=(i % 3 == 0), now_ms=i)
    health = router.health("c")
    assert health is not None
    assert 0.2 < health.error_rate < 0.45
    assert health.weight(health.latency_ms, 20.0, CFG) < 0.6


def test_f4_starved_slow_broker_is_offered_a_probe() -> None:
    router = _router()
    now = _warm(router, {"a": 20, "b": 20, "c": 400})
    snap = snapshot(LAYOUT)
    router.select_queue(snap, None, now)  # weights computed: c is slow
    health = router.health("c")
    assert health is not None and health.last_weight < 1
    assert router.due_probes(now + 500) == []
    assert router.due_probes(now + CFG.probe_interval_ms) == ["c"]


def test_f4_retry_avoids_the_last_broker_when_another_is_usable() -> None:
    router = _router()
    snap = snapshot(LAYOUT)
    assert {router.select_queue(snap, "a", 0).broker_name for _ in range(40)} == {"b", "c"}
    _fail(router, "b", 0, times=2)
    _fail(router, "c", 0, times=2)
    # a is the only usable broker: the retry goes back to it
    assert {router.select_queue(snap, "a", 10).broker_name for _ in range(10)} == {"a"}


def test_f4_retry_prefers_a_slow_broker_over_the_one_that_just_failed() -> None:
    router = _router()
    for broker, latency in {"a": 20, "b": 500}.items():
        router.record(broker, latency, isolation=False, now_ms=0)
    snap = snapshot({"a": 2, "b": 2})
    assert {router.select_queue(snap, "a", 1).broker_name for _ in range(20)} == {"b"}


def test_f4_everything_banned_picks_the_ban_that_ends_first() -> None:
    router = _router()
    _fail(router, "a", 0, times=2)
    _fail(router, "b", 500, times=2)
    _fail(router, "c", 300, times=2)
    snap = snapshot(LAYOUT)
    assert {router.select_queue(snap, None, 600).broker_name for _ in range(10)} == {"a"}
    # ...unless it was the last broker and another exists
    assert {router.select_queue(snap, "a", 600).broker_name for _ in range(10)} == {"c"}


def test_f4_retain_and_forget_drop_departed_brokers() -> None:
    router = _router()
    for broker in "abcd":
        _fail(router, broker, 0, times=2)
    router.retain(["a", "b", "c"])
    assert router.health("d") is None
    router.forget("a")
    assert router.health("a") is None
    assert set(router.banned(10)) == {"b", "c"}


def test_f4_repr_shows_live_state() -> None:
    router = _router()
    _warm(router, {"a": 20})
    _fail(router, "b", 5, times=2)
    text = repr(router)
    assert "'a': 'healthy lat=20.0ms" in text
    assert "'b': 'banned" in text
    assert "until=1005" in text
    assert "bans=1" in text
