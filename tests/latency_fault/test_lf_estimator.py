"""F4: the adaptive router's latency estimate under load (issue 10), on a virtual clock.

Fed as the producer feeds it (`lf_load.drive`): float latencies, whole-millisecond clock,
`on_dispatch`/`on_complete` around every send, probes on the upkeep's 1 s tick.
"""

from __future__ import annotations

import random

import pytest
from lf_load import LatencyModel, drive, jittered

from latency_fault import AdaptiveRouter

pytestmark = pytest.mark.timeout(60)

THREE = {"a": 4, "b": 4, "c": 4}
TWO = {"a": 4, "b": 4}
BROWNOUT_MS = 2000.0  # b turns slow here
AFTER_MS = 10_000.0  # and is watched this long


def _brownout(healthy_ms: float, slow_ms: float = 300.0, seed: int = 7) -> LatencyModel:
    rng = random.Random(seed)

    def latency(broker: str, t_ms: float, n: int) -> float:
        slow = broker == "b" and t_ms >= BROWNOUT_MS
        return jittered(slow_ms if slow else healthy_ms, rng)

    return latency


@pytest.mark.parametrize("rate", [300, 3000])
@pytest.mark.parametrize(
    "healthy_ms",
    [
        0.3,  # loopback
        0.0,  # the same answers timed by a clock that rounds sub-millisecond to 0
    ],
)
def test_f4a_a_sub_ms_broker_that_turns_300ms_is_out_within_1s_and_stays_out(
    rate: int, healthy_ms: float
) -> None:
    router = AdaptiveRouter(random.Random(5))
    run = drive(
        router,
        THREE,
        _brownout(healthy_ms),
        duration_ms=BROWNOUT_MS + AFTER_MS,
        rate_per_s=rate,
    )
    assert run.share("b", 0, BROWNOUT_MS) == pytest.approx(1 / 3, abs=0.02)
    later = run.window_shares("b", BROWNOUT_MS + 1000, BROWNOUT_MS + AFTER_MS)
    assert len(later) == 9
    assert max(later) < 0.005, [f"{s:.4f}" for s in later]


def _cold_a(seed: int = 3) -> LatencyModel:
    """Both healthy at ~1 ms; broker a's very first answer takes 77 ms (a cold JVM)."""
    rng = random.Random(seed)

    def latency(broker: str, t_ms: float, n: int) -> float:
        if broker == "a" and n == 0:
            return 77.0
        return jittered(1.0, rng)

    return latency


@pytest.mark.parametrize(
    "load",
    [{"loops": 1}, {"loops": 8}, {"rate_per_s": 1000}, {"rate_per_s": 5000}],
    ids=["sequential", "8_concurrent", "1000_per_s", "5000_per_s"],
)
def test_f4c_one_slow_first_answer_does_not_starve_a_healthy_broker(
    load: dict[str, int],
) -> None:
    router = AdaptiveRouter(random.Random(5))
    run = drive(router, TWO, _cold_a(), duration_ms=2000, window_ms=100, **load)  # type: ignore[arg-type]
    shares = run.window_shares("a", 100, 2000)
    assert all(0.45 <= s <= 0.55 for s in shares), [f"{s:.3f}" for s in shares]
