"""Adaptive per-broker state: latency and error estimates plus a circuit breaker.

One `BrokerHealth` per broker. It answers two questions for the router: how much traffic
the broker should get relative to its peers (`weight`), and whether it is due a probe.
All times are monotonic milliseconds passed in; nothing here reads a clock.
"""

from __future__ import annotations

import enum
import math
from collections import deque
from dataclasses import dataclass, field

__all__ = ["AdaptiveConfig", "BrokerHealth", "BrokerState"]

# Past this many, the clip limit (spike_clip ** n) no longer matters; it stops growing.
_MAX_SPIKES_IN_A_ROW = 8


class BrokerState(enum.Enum):
    """A broker's state in the adaptive router: healthy, banned, or half-open (on trial)."""

    HEALTHY = "healthy"
    #: Failing: no traffic until the ban ends or a probe succeeds.
    BANNED = "banned"
    #: Ban over (or a probe succeeded): one trial send at a time decides.
    HALF_OPEN = "half_open"


@dataclass(frozen=True)
class AdaptiveConfig:
    """Knobs of the adaptive router; defaults are what the simulation tests pin."""

    #: Weight of one latency sample. 0.2 averages ~10 samples: +-20% jitter moves the
    #: estimate by ~4%, while a real 10x step shows within ~5 samples.
    latency_alpha: float = 0.2
    #: A sample after a silence of this long replaces ~63% of the estimate (more after
    #: longer ones): an estimate is only as fresh as its last sample, and a starved
    #: broker that healed must not need dozens of samples to prove it.
    latency_memory_ms: float = 1000.0
    #: A sample counts as at most this multiple of the estimate, both measured with
    #: `latency_slack_ms` added (the scale on which brokers are compared), so one GC
    #: pause cannot swing the estimate. The slack is the floor: a 0.3 ms estimate lets a
    #: sample count up to 4 * 5.3 - 5 = 16 ms, not 1.2 ms. Each further clipped sample
    #: in a row multiplies the limit by this again (x4, x16, x64): a lasting slowdown
    #: is evidence from several samples, and gets through in about three.
    spike_clip: float = 4.0
    #: Weight of one outcome in the error rate estimate.
    error_alpha: float = 0.1
    #: Error rates up to this cost nothing: one stray error must not move load.
    error_tolerance: float = 0.1
    #: A broker is slow when its latency exceeds this multiple of the fastest healthy
    #: broker's (each with the slack added). Healthy jitter stays far below it, so
    #: healthy load stays exactly round-robin; brokers a real 2x apart (another zone)
    #: do share unevenly.
    slow_tolerance: float = 2.0
    #: Beyond the tolerance, weight falls as (tolerance / ratio) ** exponent.
    slow_exponent: float = 3.0
    #: Added to both latencies before comparing: 1 ms against 5 ms is not worth steering.
    latency_slack_ms: float = 5.0
    #: A slow broker keeps this fraction of a full weight, so its estimate stays fresh
    #: even without probes. Its route share is about half of it (its queues sit together,
    #: and a selection entering them tries each), evenly spaced: at 300 msg/s a 300 ms
    #: broker gets one send in ~7 s, far out of p99 and under 0.5% of every second.
    min_weight: float = 0.001
    #: Consecutive failures that ban a healthy broker: one stray error is retried
    #: elsewhere without banning; a dead broker is banned on its second failure.
    failures_to_ban: int = 2
    #: The first ban; each further strike doubles it, up to `max_ban_ms`.
    base_ban_ms: int = 1000
    max_ban_ms: int = 30000
    #: One strike is forgiven per this much time without a new ban.
    strike_decay_ms: int = 10000
    #: How often a banned or starved broker is offered for a probe.
    probe_interval_ms: int = 1000
    #: Half-open: one trial send at a time. The next may go when the last one answered,
    #: or after this long without an answer (it hung, or the caller cancelled it).
    trial_timeout_ms: int = 3000
    #: This many successes in a row close the breaker. One success proves little
    #: against a broker failing 30% of sends; three cost a healed one three round trips.
    trials_to_close: int = 3


@dataclass
class BrokerHealth:
    """What we know of one broker. Mutated only through `on_success`/`on_failure`."""

    latency_ms: float | None = None
    error_rate: float = 0.0
    consecutive_failures: int = 0
    strikes: int = 0
    tripped: bool = False
    banned_until_ms: int = 0
    next_probe_ms: int = 0
    next_trial_ms: int = 0
    trial_successes: int = 0
    last_sample_ms: int = 0
    #: Consecutive samples above the clip limit (see `AdaptiveConfig.spike_clip`).
    spikes_in_a_row: int = 0
    last_weight: float = 1.0
    #: Partial-weight credit, in [0, 1): each look at one of the broker's queues adds its
    #: weight, and a look that brings it to 1 takes the queue (and pays 1).
    credit: float = 0.0
    #: Dispatch times of the attempts still in flight, oldest first. An answer ends the
    #: oldest: exact for the age of the oldest when answers come in order, and an
    #: underestimate otherwise, which can only delay steering, never cause it.
    outstanding: deque[int] = field(default_factory=deque)

    def dispatched(self, now_ms: int) -> None:
        """Note an attempt sent at ``now_ms`` (the oldest unanswered one ages the latency)."""
        self.outstanding.append(now_ms)

    def completed(self) -> None:
        """An attempt ended (answered, failed or cancelled): the oldest one in flight is done."""
        if self.outstanding:
            self.outstanding.popleft()

    def effective_latency(self, now_ms: int) -> float | None:
        """The latency estimate, or the age of the oldest unanswered attempt if that is
        longer: a broker that went slow is seen at once, not one round trip later."""
        latency = self.latency_ms
        if self.outstanding:
            age = float(now_ms - self.outstanding[0])
            if latency is None or age > latency:
                return age
        return latency

    def state(self, now_ms: int) -> BrokerState:
        """Healthy until tripped; then banned until ``banned_until_ms``, half-open after."""
        if not self.tripped:
            return BrokerState.HEALTHY
        return BrokerState.BANNED if now_ms < self.banned_until_ms else BrokerState.HALF_OPEN

    def on_success(
        self,
        latency_ms: float,
        now_ms: int,
        config: AdaptiveConfig,
        *,
        prior_ms: float | None = None,
    ) -> None:
        """Account one answer. `prior_ms` is what to believe of a broker that has no
        estimate yet (its peers' reference latency; None: nothing known, 0)."""
        gap_ms = max(0, now_ms - self.last_sample_ms)
        self.last_sample_ms = max(self.last_sample_ms, now_ms)
        self.consecutive_failures = 0
        self._add_latency(max(0.0, latency_ms), gap_ms, config, prior_ms)
        if self.tripped:
            self._recover(now_ms, config)
        else:
            self.error_rate *= 1.0 - config.error_alpha

    def on_failure(self, now_ms: int, config: AdaptiveConfig) -> bool:
        """Account one failure; returns whether it started a ban."""
        self.last_sample_ms = max(self.last_sample_ms, now_ms)
        state = self.state(now_ms)
        if state is BrokerState.BANNED:
            # Stragglers sent before the ban, or a failed probe: already accounted for.
            return False
        self.consecutive_failures += 1
        self.error_rate += config.error_alpha * (1.0 - self.error_rate)
        if state is BrokerState.HALF_OPEN or self.consecutive_failures >= config.failures_to_ban:
            self._ban(now_ms, config)
            return True
        return False

    def _add_latency(
        self, sample: float, gap_ms: int, config: AdaptiveConfig, prior_ms: float | None
    ) -> None:
        alpha = config.latency_alpha
        if self.latency_ms is None:
            # The first answer is one sample like any other, weighed against a prior: a
            # cold first answer (a JVM warming up, a connection being set up) must not
            # become the estimate and starve a healthy broker of the samples to undo it.
            estimate = 0.0 if prior_ms is None else prior_ms
        else:
            estimate = self.latency_ms
            alpha = max(alpha, 1.0 - math.exp(-gap_ms / config.latency_memory_ms))
        slack = config.latency_slack_ms
        if sample + slack > config.spike_clip * (estimate + slack):
            self.spikes_in_a_row = min(self.spikes_in_a_row + 1, _MAX_SPIKES_IN_A_ROW)
            limit = config.spike_clip**self.spikes_in_a_row * (estimate + slack) - slack
            sample = min(sample, limit)
        else:
            self.spikes_in_a_row = 0
        self.latency_ms = estimate + alpha * (sample - estimate)

    def _ban(self, now_ms: int, config: AdaptiveConfig) -> None:
        # Quiet time is counted from the end of the last ban: time spent banned proves
        # nothing, or a broker failing every trial would never reach the longer bans.
        forgiven = max(0, now_ms - self.banned_until_ms) // config.strike_decay_ms
        self.strikes = max(0, self.strikes - forgiven) + 1
        duration = min(config.base_ban_ms * 2 ** (self.strikes - 1), config.max_ban_ms)
        self.tripped = True
        self.banned_until_ms = now_ms + duration
        self.next_probe_ms = now_ms + config.probe_interval_ms
        self.next_trial_ms = 0
        self.trial_successes = 0

    def _recover(self, now_ms: int, config: AdaptiveConfig) -> None:
        if self.state(now_ms) is BrokerState.BANNED:
            # A probe (or a late answer) succeeded: cut the ban short, try one send.
            self.banned_until_ms = now_ms
            return
        self.trial_successes += 1
        if self.trial_successes < config.trials_to_close:
            self.next_trial_ms = now_ms  # answered: the next trial may go at once
            return
        # The trials passed. The ban already acted on the old errors; keeping them all
        # would starve the healed broker, so keep no more than the tolerance: a full
        # share now, and a relapse shows at once. Strikes stay: a relapse bans longer.
        self.tripped = False
        self.error_rate = min(self.error_rate, config.error_tolerance)

    def weight(
        self, latency_ms: float | None, reference_ms: float | None, config: AdaptiveConfig
    ) -> float:
        """Relative share of traffic while healthy (1 is a full share), given this
        broker's effective latency and the reference (fastest healthy) one."""
        return self._latency_weight(latency_ms, reference_ms, config) * self._error_weight(config)

    @staticmethod
    def _latency_weight(
        latency_ms: float | None, reference_ms: float | None, config: AdaptiveConfig
    ) -> float:
        if latency_ms is None or reference_ms is None:
            return 1.0
        slack = config.latency_slack_ms
        ratio = (latency_ms + slack) / (reference_ms + slack)
        if ratio <= config.slow_tolerance:
            return 1.0
        weight: float = (config.slow_tolerance / ratio) ** config.slow_exponent
        return max(config.min_weight, weight)

    def _error_weight(self, config: AdaptiveConfig) -> float:
        if self.error_rate <= config.error_tolerance:
            return 1.0
        healthy = (1.0 - self.error_rate) / (1.0 - config.error_tolerance)
        return max(config.min_weight, healthy**2)

    def is_trial_open(self, now_ms: int) -> bool:
        """Half-open only: may one more trial send go out now?"""
        return now_ms >= self.next_trial_ms

    def book_trial(self, now_ms: int, config: AdaptiveConfig) -> None:
        """A half-open trial went out at ``now_ms``: no other until it ends or times out."""
        self.next_trial_ms = now_ms + config.trial_timeout_ms

    def is_probe_due(self, now_ms: int, config: AdaptiveConfig) -> bool:
        """Banned or half-open brokers are probed on a fixed cadence; a healthy broker
        only when it gets less than a full share and has gone quiet."""
        if now_ms < self.next_probe_ms:
            return False
        if self.tripped:
            return True
        is_starved = now_ms - self.last_sample_ms >= config.probe_interval_ms
        return self.last_weight < 1.0 and is_starved

    def book_probe(self, now_ms: int, config: AdaptiveConfig) -> None:
        """A probe went out at ``now_ms``: the next is due one probe interval later."""
        self.next_probe_ms = now_ms + config.probe_interval_ms

    def describe(self, now_ms: int) -> str:
        """A one-line summary for logs and ``repr``: state, latency, error rate, weight, in flight.
        A one-line summary for logs and ``repr``: state, latency, error rate, weight, in flight."""
        latency = "?" if self.latency_ms is None else f"{self.latency_ms:.1f}ms"
        text = f"{self.state(now_ms).value} lat={latency} err={self.error_rate:.2f}"
        text += f" w={self.last_weight:.2f}"
        if self.outstanding:
            text += f" inflight={len(self.outstanding)} oldest={now_ms - self.outstanding[0]}ms"
        if self.tripped:
            text += f" until={self.banned_until_ms} strikes={self.strikes}"
        return text
