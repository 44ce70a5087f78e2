"""Simulation inputs: per-broker traces and scenarios (pure data, seeded draws)."""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass, replace

__all__ = ["BrokerTrace", "Draw", "Fault", "Phase", "Scenario"]


class Fault(enum.Enum):
    NONE = "none"
    #: Connection refused: fails at once (a transport error).
    REFUSE = "refuse"
    #: Accepts and never answers: the attempt times out (a transport error).
    HANG = "hang"


@dataclass(frozen=True)
class Draw:
    """One attempt's outcome, as the producer would see it."""

    latency_ms: float
    failed: bool
    #: False for broker error codes: what 5.x passes as `reachable` for MQBrokerException.
    reachable: bool = True


@dataclass(frozen=True)
class Phase:
    """How a broker behaves from `start_ms` until the next phase.

    Latency is `latency_ms` times a uniform factor in [1 - jitter, 1 + jitter]; a
    successful answer turns into a broker error with probability `error_rate`.
    """

    start_ms: int = 0
    latency_ms: float = 20.0
    jitter: float = 0.2
    error_rate: float = 0.0
    fault: Fault = Fault.NONE

    def draw(self, rng: random.Random, timeout_ms: float, refuse_ms: float = 1.0) -> Draw:
        if self.fault is Fault.REFUSE:
            return Draw(min(refuse_ms, timeout_ms), failed=True)
        if self.fault is Fault.HANG:
            return Draw(timeout_ms, failed=True)
        latency = self.latency_ms * rng.uniform(1.0 - self.jitter, 1.0 + self.jitter)
        if latency >= timeout_ms:
            return Draw(timeout_ms, failed=True)
        if self.error_rate > 0 and rng.random() < self.error_rate:
            return Draw(latency, failed=True, reachable=False)
        return Draw(latency, failed=False)


@dataclass(frozen=True)
class BrokerTrace:
    """A broker's behaviour over virtual time: phases sorted by start time."""

    name: str
    phases: tuple[Phase, ...] = (Phase(),)
    queues: int = 4

    def __post_init__(self) -> None:
        starts = [p.start_ms for p in self.phases]
        if not starts or starts[0] != 0 or starts != sorted(starts):
            raise ValueError("phases must start at 0 and be sorted by start_ms")

    @classmethod
    def steady(
        cls, name: str, latency_ms: float = 20.0, *, jitter: float = 0.2, queues: int = 4
    ) -> BrokerTrace:
        return cls(name, (Phase(0, latency_ms, jitter),), queues)

    def phase_at(self, t_ms: float) -> Phase:
        current = self.phases[0]
        for phase in self.phases:
            if phase.start_ms > t_ms:
                break
            current = phase
        return current

    def with_episode(
        self,
        start_ms: int,
        end_ms: int,
        *,
        latency_ms: float | None = None,
        error_rate: float | None = None,
        fault: Fault | None = None,
    ) -> BrokerTrace:
        """This trace, behaving differently in [start_ms, end_ms), then as before."""
        before = self.phase_at(start_ms)
        during = replace(
            before,
            start_ms=start_ms,
            latency_ms=before.latency_ms if latency_ms is None else latency_ms,
            error_rate=before.error_rate if error_rate is None else error_rate,
            fault=before.fault if fault is None else fault,
        )
        after = replace(self.phase_at(end_ms), start_ms=end_ms)
        kept = [p for p in self.phases if p.start_ms < start_ms or p.start_ms > end_ms]
        phases = sorted([*kept, during, after], key=lambda p: p.start_ms)
        return replace(self, phases=tuple(phases))


@dataclass(frozen=True)
class Scenario:
    """A run: brokers, how long, how messages arrive, and the send loop's budget.

    Arrivals are a fixed-rate open loop: one message every `interval_ms`, whatever is in
    flight, as when a producer is fed by a request stream. A closed loop would slow its
    own arrivals down behind a slow broker and hide the latency cost being measured.
    Each message runs a `sendDefaultImpl`-like loop: up to `attempts` attempts, retried
    at once on failure, within one `budget_ms` deadline; an attempt's timeout is what is
    left of the budget, capped at `attempt_cap_ms` if set (rule S3; Java 4.9 has no cap).
    No attempt starts once the deadline is reached (rule S2; Java's `timeout < costTime`
    test would still start one with a zero timeout exactly at the deadline).
    """

    name: str
    brokers: tuple[BrokerTrace, ...]
    duration_ms: int = 60_000
    interval_ms: int = 5
    attempts: int = 3
    budget_ms: int = 3000
    attempt_cap_ms: int | None = None
    #: How often the harness asks `due_probes`; None: the producer sends no probes.
    probe_tick_ms: int | None = 100
    probe_timeout_ms: int = 500
    window_ms: int = 1000
    #: The broker in trouble and when (for reports); None for healthy runs.
    focus: str | None = None
    episode_ms: tuple[int, int] | None = None

    def attempt_timeout(self, elapsed_ms: float) -> float:
        left = self.budget_ms - elapsed_ms
        return left if self.attempt_cap_ms is None else min(left, self.attempt_cap_ms)
