"""The demo's ROUTING bound (issue 34): what adaptive routing may let reach the broker the
brown-out slowed, derived from the router's configuration and what the demo measured."""

from __future__ import annotations

import dataclasses
import math

import pytest

from latency_fault import AdaptiveConfig, BrokerHealth
from producer.cli.demo_bound import (
    BrownOutMeasure,
    allowance,
    brown_out_line,
    detection_rounds,
    measure_brown_out,
    slow_weight,
    stall_threshold_ms,
)
from producer.cli.stats import SendOutcome, Tally
from producer.errors import AttemptOutcome, AttemptRecord

CONFIG = AdaptiveConfig()
BROKERS = ("broker-a", "broker-b", "broker-c")
# A 2 s brown-out of +300 ms at 400 msg/s, healthy brokers answering in 1.3 ms.
MEASURE = BrownOutMeasure(
    sends=800, slow_sends=0, seconds=2.0, healthy_ms=1.3, tick_ms=7.0, brokers=3
)


def outcome(broker: str, latency_ms: float) -> SendOutcome:
    ok = AttemptRecord(broker, 0, AttemptOutcome.OK, None, latency_ms)
    return SendOutcome(latency_ms, (ok,), broker=broker)


def tally(latencies_by_broker: dict[str, list[float]]) -> Tally:
    result = Tally()
    for broker, latencies in latencies_by_broker.items():
        for latency in latencies:
            result.add(outcome(broker, latency))
    return result


def test_trials_and_probes_are_counted_at_their_configured_intervals() -> None:
    bound = allowance(MEASURE, 300, CONFIG)
    assert bound.trials == 7  # one at a time, each answered after 300 ms at least: 2000 / 300
    assert bound.probes == 2  # one per 1000 ms probe interval
    slower = allowance(MEASURE, 300, dataclasses.replace(CONFIG, probe_interval_ms=500))
    assert slower.probes == 4 and slower.total == bound.total + 2
    assert bound.total == bound.detection + bound.trials + bound.probes + bound.slow_share


def test_a_broker_within_the_trial_and_probe_allowance_held() -> None:
    # The slowed broker took every send the allowance grants, trials and probes included:
    # a bound that left them out would call this routing broken.
    bound = allowance(MEASURE, 300, CONFIG)
    granted = bound.detection + bound.trials + bound.probes + bound.slow_share
    at_bound = dataclasses.replace(MEASURE, slow_sends=granted)
    healthy = tally({b: [1.0] * 100 for b in BROKERS})
    brown_out = tally(
        {
            "broker-a": [1.0] * 400,
            "broker-b": [300.0] * granted,
            "broker-c": [1.0] * (400 - granted),
        }
    )
    line = brown_out_line(healthy, brown_out, at_bound, "broker-b", 300, CONFIG)
    assert f"it stored {granted} of the brown-out's 800 sends" in line
    assert f"{bound.trials} trials, {bound.probes} after probes" in line
    assert "set aside" not in line
    assert line.endswith(": held (brown-out p99 300.0 ms, healthy p99 1.0 ms)"), line
    over = dataclasses.replace(MEASURE, slow_sends=granted + 1)
    assert ": did NOT hold (" in brown_out_line(healthy, brown_out, over, "broker-b", 300, CONFIG)


def test_the_slow_share_follows_the_documented_weight_not_the_router() -> None:
    # (tolerance / ratio) ** exponent past the 2x tolerance, with the 5 ms slack, floored
    # at min_weight: a router that broke its weights must not widen its own allowance.
    assert slow_weight(300, 30, CONFIG) == pytest.approx((2 / (305 / 35)) ** 3)
    assert slow_weight(300, 1.3, CONFIG) == CONFIG.min_weight
    assert slow_weight(300, 200, CONFIG) == 1.0  # under 2x slower: a full share
    busy = dataclasses.replace(MEASURE, healthy_ms=30.0)
    assert allowance(busy, 300, CONFIG).slow_share == math.ceil(800 * slow_weight(300, 30, CONFIG))


def test_detection_takes_the_rounds_the_clipped_estimate_needs() -> None:
    # One answer per round trip (the slowest catch-up): the first round has no answer,
    # each later one follows an answer that left the estimate short of "slow".
    rounds = detection_rounds(1.3, 300, CONFIG)
    health = BrokerHealth(latency_ms=1.3)
    for answer in range(1, rounds + 1):
        assert health.weight(health.latency_ms, 1.3, CONFIG) == 1.0  # still looks healthy
        health.on_success(300, answer * 300, CONFIG)
    assert health.weight(health.latency_ms, 1.3, CONFIG) < 1.0
    gentler = dataclasses.replace(CONFIG, spike_clip=1.5)  # the estimate catches up slower
    assert detection_rounds(1.3, 300, gentler) > rounds
    # Each round lets the broker take the sends issued before its fresh send is seen old.
    bound = allowance(MEASURE, 300, CONFIG)
    window_ms = 2 * (1.3 + 5) - 5 + MEASURE.tick_ms  # slow threshold + one pacer tick
    assert bound.detection == rounds * -(-800 * window_ms // 2000)


def test_a_stall_long_enough_to_hide_the_delay_is_set_aside() -> None:
    # 300 ms + 5 ms slack over the 2x tolerance: a 147.5 ms stall ages the healthy
    # brokers' sends in flight to half the slowed one's.
    assert stall_threshold_ms(300, CONFIG) == 147.5
    brown_out = tally({"broker-a": [1.0] * 400, "broker-b": [300.0] * 60, "broker-c": [2.0] * 400})
    after_stall = tally({"broker-a": [150.0] * 50, "broker-b": [300.0] * 50})
    measure = measure_brown_out(
        brown_out, after_stall, "broker-b", seconds=2.0, ticks=[6.0, 7.0, 200.0], brokers=BROKERS
    )
    assert measure == BrownOutMeasure(
        sends=760, slow_sends=10, seconds=2.0, healthy_ms=1.0, tick_ms=7.0, brokers=3
    )
    healthy = tally({b: [1.0] * 100 for b in BROKERS})
    line = brown_out_line(healthy, brown_out, measure, "broker-b", 300, CONFIG)
    assert "; 100 sends issued after our event loop stalled set aside: held (" in line


def test_a_routing_that_ignores_the_brown_out_does_not_hold() -> None:
    ignored = dataclasses.replace(MEASURE, slow_sends=800 // 3)
    healthy = tally({b: [1.0] * 100 for b in BROKERS})
    brown_out = tally({"broker-a": [1.0] * 267, "broker-b": [300.0] * 266, "broker-c": [1.0] * 267})
    line = brown_out_line(healthy, brown_out, ignored, "broker-b", 300, CONFIG)
    assert "it stored 266 of the brown-out's 800 sends (33.2%)" in line
    assert ": did NOT hold (" in line


def test_a_bound_near_the_round_robin_share_judges_nothing() -> None:
    # Healthy brokers as slow as 80 ms: the slowed one is under 4x slower, keeps a real
    # weight, and the allowance nears a third; the verdict says it cannot judge.
    loose = dataclasses.replace(MEASURE, healthy_ms=80.0, slow_sends=5)
    healthy = tally({b: [80.0] * 100 for b in BROKERS})
    brown_out = tally({"broker-a": [80.0] * 400, "broker-b": [300.0] * 5})
    line = brown_out_line(healthy, brown_out, loose, "broker-b", 300, CONFIG)
    assert ": not judged (the allowance is near a routing that ignores the brown-out) (" in line


def test_nothing_to_judge_says_so() -> None:
    healthy = tally({b: [1.0] * 10 for b in BROKERS})
    assert (
        measure_brown_out(Tally(), Tally(), "broker-b", seconds=2, ticks=[], brokers=BROKERS)
        is None
    )
    line = brown_out_line(healthy, Tally(), None, "broker-b", 300, CONFIG)
    assert line == "ROUTING: not enough sends to judge the brown-out of broker-b"
