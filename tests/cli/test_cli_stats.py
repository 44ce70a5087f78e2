"""The statistics behind ``send`` and ``demo``, driven with synthetic outcomes (no clock)."""

from __future__ import annotations

import pytest

from producer.cli.stats import LiveStats, SendOutcome, Tally, percentile
from producer.errors import AttemptOutcome, AttemptRecord, Fate

OK, TIMEOUT, CONNECT = AttemptOutcome.OK, AttemptOutcome.TIMEOUT, AttemptOutcome.CONNECT_ERROR


def attempt(broker: str, outcome: AttemptOutcome = OK) -> AttemptRecord:
    return AttemptRecord(broker, 0, outcome, None, 1.0)


def landed(broker: str, latency_ms: float, *failed_first: AttemptRecord) -> SendOutcome:
    return SendOutcome(latency_ms, (*failed_first, attempt(broker)), broker=broker)


def failed(error: str, *attempts: AttemptRecord, fate: Fate = Fate.NOT_STORED) -> SendOutcome:
    return SendOutcome(3000.0, attempts, error=error, fate=fate)


@pytest.mark.parametrize(
    ("q", "expected"), [(0, 1.0), (50, 5.0), (90, 9.0), (99, 10.0), (99.9, 10.0), (100, 10.0)]
)
def test_percentile_is_nearest_rank(q: float, expected: float) -> None:
    assert percentile([float(v) for v in range(1, 11)], q) == expected


def test_percentile_of_nothing_is_none() -> None:
    assert percentile([], 99) is None


def test_tally_counts_shares_latencies_and_retries() -> None:
    tally = Tally()
    for latency in (1.0, 2.0, 3.0):
        tally.add(landed("broker-a", latency))
    tally.add(landed("broker-b", 10.0, attempt("broker-c", CONNECT)))
    assert (tally.messages, tally.succeeded, tally.failed) == (4, 4, 0)
    assert tally.share("broker-a") == 0.75
    assert tally.share("broker-c") == 0.0
    assert tally.latency(50) == 2.0
    assert tally.latency(99, "broker-b") == 10.0
    assert tally.latency(99, "broker-x") is None
    assert tally.retries == 1
    assert tally.retries_per_message == 0.25
    assert tally.broker("broker-c").failed_attempts == 1
    assert tally.broker("broker-c").retried_attempts == 1
    assert tally.broker("broker-c").sends == 0


def test_failures_count_by_error_and_unknown_fate_attempts() -> None:
    tally = Tally()
    tally.add(failed("SendTimeout", attempt("broker-a", TIMEOUT), attempt("broker-b", TIMEOUT)))
    tally.add(failed("NoRouteError"))  # no attempt at all
    tally.add(landed("broker-c", 5.0, attempt("broker-a", TIMEOUT)))
    assert tally.errors == {"SendTimeout": 1, "NoRouteError": 1}
    assert (tally.failed, tally.succeeded) == (2, 1)
    assert tally.unknown_fate_attempts == 3
    # the last attempt of a failed send was not retried
    assert tally.broker("broker-b").failed_attempts == 1
    assert tally.broker("broker-b").retried_attempts == 0
    assert tally.broker("broker-a").retried_attempts == 2
    assert tally.latency(50) == 5.0  # only successful sends have a latency


def test_empty_tally_is_all_zero() -> None:
    tally = Tally()
    assert (tally.messages, tally.retries_per_message, tally.share("broker-a")) == (0, 0.0, 0.0)
    assert tally.latency(50) is None


def test_live_stats_files_outcomes_by_window_and_phase() -> None:
    stats = LiveStats(window_ms=1000)
    stats.record(landed("broker-a", 1.0), now_ms=100, phase="healthy")
    stats.record(landed("broker-b", 2.0), now_ms=999, phase="healthy")
    stats.record(landed("broker-b", 300.0), now_ms=1500, phase="brown-out")
    # during the second window, the last complete one is the first
    window = stats.last_window(1600)
    assert window.messages == 2
    assert window.share("broker-a") == 0.5
    assert stats.throughput(window) == 2.0
    assert stats.last_window(2000).latency(50) == 300.0
    assert stats.last_window(500).messages == 0  # no complete window yet
    assert [(name, t.messages) for name, t in stats.phases.items()] == [
        ("healthy", 2),
        ("brown-out", 1),
    ]
    assert stats.total.messages == 3


def test_live_stats_files_by_the_phase_given_not_by_time() -> None:
    stats = LiveStats()
    stats.record(landed("broker-b", 300.0), now_ms=5300, phase="brown-out")
    assert stats.phase("brown-out").messages == 1
    assert stats.phase("healed").messages == 0
    assert list(stats.phases) == ["brown-out", "healed"]  # naming a phase lists it


def test_live_stats_keeps_only_recent_windows() -> None:
    stats = LiveStats(window_ms=1000, keep_windows=3)
    for second in range(10):
        stats.record(landed("broker-a", 1.0), now_ms=second * 1000 + 10, phase="p")
    assert list(stats.windows()) == [7, 8, 9]
    assert stats.last_window(1500).messages == 0  # pruned
    assert stats.total.messages == 10


def test_window_length_is_configurable() -> None:
    stats = LiveStats(window_ms=250)
    for t in (0, 100, 200):
        stats.record(landed("broker-a", 1.0), now_ms=t, phase="p")
    assert stats.throughput(stats.last_window(300)) == 12.0
