"""Send statistics for the command line (``send`` and ``demo``): pure, time passed in.

A :class:`SendOutcome` is one finished send; a :class:`Tally` adds outcomes up (a
second, a phase, a whole run); :class:`LiveStats` keeps one tally per phase, per
one-second window and overall. Nothing here reads a clock: callers pass ``now_ms``, so
tests drive it with synthetic samples and no sleeping.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from producer import SendResult
from producer.errors import AttemptOutcome, AttemptRecord, Fate, ProducerError

__all__ = ["BrokerTally", "LiveStats", "SendOutcome", "Tally", "percentile"]

# Outcomes after which the broker may have stored the message although the client got
# no answer: the only way a retried send can leave a duplicate behind.
POSSIBLY_STORED = frozenset(
    {AttemptOutcome.TIMEOUT, AttemptOutcome.CONNECTION_LOST, AttemptOutcome.PROTOCOL_ERROR}
)


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in [0, 100]) of already sorted values; ``None`` if empty."""
    if not sorted_values:
        return None
    rank = math.ceil(q / 100.0 * len(sorted_values))
    return sorted_values[min(max(rank, 1), len(sorted_values)) - 1]


@dataclass(frozen=True, slots=True)
class SendOutcome:
    """One finished send: where it landed (``broker``) or why it failed (``error``)."""

    latency_ms: float
    attempts: tuple[AttemptRecord, ...]
    broker: str | None = None
    error: str | None = None
    fate: Fate | None = None

    @classmethod
    def of_result(cls, result: SendResult, latency_ms: float) -> SendOutcome:
        return cls(latency_ms, result.attempts, broker=result.queue.broker_name)

    @classmethod
    def of_error(cls, error: ProducerError, latency_ms: float) -> SendOutcome:
        return cls(latency_ms, error.attempts, error=type(error).__name__, fate=error.fate)

    @property
    def succeeded(self) -> bool:
        return self.broker is not None

    @property
    def retries(self) -> int:
        return max(len(self.attempts) - 1, 0)


@dataclass(slots=True)
class BrokerTally:
    """What happened on one broker: sends stored there and attempts that failed there."""

    latencies: list[float] = field(default_factory=list)
    failed_attempts: int = 0
    retried_attempts: int = 0  # failed attempts the producer then retried elsewhere

    @property
    def sends(self) -> int:
        return len(self.latencies)


class Tally:
    """Counts and latencies of a set of finished sends."""

    def __init__(self) -> None:
        self.messages = 0
        self.retries = 0
        self.unknown_fate_attempts = 0
        self.latencies: list[float] = []
        self.errors: Counter[str] = Counter()
        self.brokers: dict[str, BrokerTally] = {}

    def add(self, outcome: SendOutcome) -> None:
        self.messages += 1
        self.retries += outcome.retries
        if outcome.broker is not None:
            self.latencies.append(outcome.latency_ms)
            self._broker(outcome.broker).latencies.append(outcome.latency_ms)
        else:
            self.errors[outcome.error or "error"] += 1
        last = len(outcome.attempts) - 1
        for index, attempt in enumerate(outcome.attempts):
            if attempt.outcome is AttemptOutcome.OK:
                continue
            broker = self._broker(attempt.broker_name)
            broker.failed_attempts += 1
            if index < last:
                broker.retried_attempts += 1
            if attempt.outcome in POSSIBLY_STORED:
                self.unknown_fate_attempts += 1

    def _broker(self, name: str) -> BrokerTally:
        tally = self.brokers.get(name)
        if tally is None:
            tally = self.brokers[name] = BrokerTally()
        return tally

    @property
    def succeeded(self) -> int:
        return len(self.latencies)

    @property
    def failed(self) -> int:
        return self.messages - self.succeeded

    @property
    def retries_per_message(self) -> float:
        return self.retries / self.messages if self.messages else 0.0

    def share(self, broker: str) -> float:
        """The fraction of successful sends stored on ``broker`` (0 when there are none)."""
        tally = self.brokers.get(broker)
        return tally.sends / self.succeeded if tally and self.succeeded else 0.0

    def latency(self, q: float, broker: str | None = None) -> float | None:
        """The ``q``-th percentile latency of successful sends (on ``broker``, if given)."""
        if broker is None:
            return percentile(sorted(self.latencies), q)
        tally = self.brokers.get(broker)
        return None if tally is None else percentile(sorted(tally.latencies), q)

    def broker(self, name: str) -> BrokerTally:
        """The broker's tally (an empty one if nothing happened there)."""
        return self.brokers.get(name) or BrokerTally()

    def __repr__(self) -> str:
        return (
            f"Tally(messages={self.messages}, failed={self.failed}, retries={self.retries}, "
            f"brokers={sorted(self.brokers)})"
        )


class LiveStats:
    """Tallies overall, per phase (in order of first use) and per ``window_ms`` window.

    Outcomes are filed in the window of their completion time and the phase the caller
    names (the demo names the phase the send *started* in). Only the last
    ``keep_windows`` windows are kept.
    """

    def __init__(self, *, window_ms: float = 1000.0, keep_windows: int = 5) -> None:
        self.window_ms = window_ms
        self.keep_windows = keep_windows
        self.total = Tally()
        self.phases: dict[str, Tally] = {}
        self._windows: dict[int, Tally] = {}

    def record(self, outcome: SendOutcome, *, now_ms: float, phase: str) -> None:
        index = self.window_index(now_ms)
        for tally in (self.total, self.phase(phase), self._window(index)):
            tally.add(outcome)
        self._prune(index)

    def phase(self, name: str) -> Tally:
        """The phase's tally; naming a phase registers it (so empty phases are listed)."""
        tally = self.phases.get(name)
        if tally is None:
            tally = self.phases[name] = Tally()
        return tally

    def window_index(self, now_ms: float) -> int:
        return int(now_ms // self.window_ms)

    def last_window(self, now_ms: float) -> Tally:
        """The last *complete* window before ``now_ms`` (an empty tally if none)."""
        return self._windows.get(self.window_index(now_ms) - 1) or Tally()

    def throughput(self, tally: Tally) -> float:
        """Messages per second of a one-window tally."""
        return tally.messages * 1000.0 / self.window_ms

    def _window(self, index: int) -> Tally:
        tally = self._windows.get(index)
        if tally is None:
            tally = self._windows[index] = Tally()
        return tally

    def _prune(self, index: int) -> None:
        stale = [i for i in self._windows if i <= index - self.keep_windows]
        for i in stale:
            del self._windows[i]

    def windows(self) -> Iterable[int]:
        return sorted(self._windows)

    def __repr__(self) -> str:
        return f"LiveStats(total={self.total!r}, phases={list(self.phases)})"
