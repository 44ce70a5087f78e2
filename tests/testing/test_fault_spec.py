"""FaultSpec validation, its JSON form, and the seeded per-request decision (pure)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from producer.testing import FaultSpec, FaultSpecError
from producer.testing._faults import NO_FAULT, decide


def test_default_spec_is_healthy_and_has_an_empty_json_form() -> None:
    assert FaultSpec().is_healthy
    assert FaultSpec().to_json() == {}
    assert not FaultSpec(down=True).is_healthy


def test_json_round_trip_keeps_only_the_set_fields() -> None:
    spec = FaultSpec(latency_ms=20, jitter_ms=5, error_code=2, error_probability=0.25)
    data = spec.to_json()
    assert data == {"latency_ms": 20, "jitter_ms": 5, "error_code": 2, "error_probability": 0.25}
    assert FaultSpec.from_json(data) == spec


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"latency_ms": -1}, "latency_ms"),
        ({"latency_ms": "10"}, "latency_ms"),
        ({"jitter_ms": float("inf")}, "jitter_ms"),
        ({"error_probability": 1.5}, "error_probability"),
        ({"latency_probability": True}, "latency_probability"),
        ({"store_status": 0}, "store_status"),
        ({"store_status": 13}, "store_status"),
        ({"error_code": 0}, "error_code"),
        ({"error_code": "2"}, "error_code"),
        ({"error_code": 70000}, "error_code"),
        ({"down": "yes"}, "down"),
        ({"blackhole": 1}, "blackhole"),
        ({"latency": 5}, "unknown fault field"),
        ([1, 2], "JSON object"),
        (None, "JSON object"),
    ],
)
def test_bad_specs_are_refused_with_a_message_naming_the_field(data: object, message: str) -> None:
    with pytest.raises(FaultSpecError, match=message):
        FaultSpec.from_json(data)


def test_a_healthy_spec_draws_nothing_from_the_generator() -> None:
    rng = random.Random(7)
    state = rng.getstate()
    assert decide(FaultSpec(), rng, is_send=True) is NO_FAULT
    assert decide(FaultSpec(error_code=2), rng, is_send=False) is NO_FAULT  # not a send
    assert decide(FaultSpec(latency_ms=5), rng, is_send=True).delay == 0.005
    assert rng.getstate() == state


def test_error_wins_over_store_status_and_only_sends_get_them() -> None:
    spec = FaultSpec(error_code=14, store_status=10, latency_ms=1)
    decision = decide(spec, random.Random(0), is_send=True)
    assert (decision.error_code, decision.store_status, decision.delay) == (14, None, 0.001)
    status_only = decide(FaultSpec(store_status=12), random.Random(0), is_send=True)
    assert status_only.store_status == 12 and status_only.error_code is None
    assert decide(spec, random.Random(0), is_send=False).error_code is None


@given(seed=st.integers(0, 2**32), p=st.floats(0.05, 0.95))
def test_decisions_are_a_function_of_the_seed(seed: int, p: float) -> None:
    spec = FaultSpec(
        latency_ms=3, jitter_ms=4, latency_probability=p, error_code=2, error_probability=p
    )

    def run() -> list[tuple[float, int | None]]:
        rng = random.Random(seed)
        return [
            (d.delay, d.error_code) for d in (decide(spec, rng, is_send=True) for _ in range(50))
        ]

    first = run()
    assert first == run()
    assert all(d == 0 or 0.003 <= d < 0.007 for d, _ in first)


def test_probability_is_roughly_honoured() -> None:
    rng = random.Random(1)
    spec = FaultSpec(error_code=1, error_probability=0.3)
    hits = sum(decide(spec, rng, is_send=True).error_code == 1 for _ in range(2000))
    assert 500 < hits < 700
