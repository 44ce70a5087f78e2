"""The adaptive router (rule F4): weighted round-robin with a circuit breaker per broker.

Selection walks the snapshot's round-robin index like Java and accepts each queue by
its broker's weight (1 = full share; weight w takes one look in 1/w, evenly spaced). A
healthy cluster therefore gets Java's exact round-robin, jitter and all; only a broker
clearly slower than the fastest healthy one, or one with a real error rate, loses share
in proportion to the evidence. Failing brokers are banned with escalating, decaying
bans, probed while banned, and readmitted through one trial send at a time.

Why not power-of-two-choices on latency: "take the lower of two" turns any persistent
ordering of noisy estimates into skew (with three equal brokers the one that happens to
look fastest gets up to 2/3 of the load), so it needs a dead band anyway, and with the
dead band it is round-robin plus randomness. Rejection over round-robin gives the same
steering with no noise when nothing is wrong.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from ._health import AdaptiveConfig, BrokerHealth, BrokerState
from ._snapshot import PublishSnapshot, Q

__all__ = ["AdaptiveRouter"]


class AdaptiveRouter:
    """Our strategy: latency- and error-weighted round-robin, bans, probes, trials."""

    name = "adaptive"

    def __init__(self, rng: random.Random, config: AdaptiveConfig | None = None) -> None:
        self._rng = rng
        self._config = config if config is not None else AdaptiveConfig()
        self._health: dict[str, BrokerHealth] = {}
        self._bans = 0
        self._last_now = 0
        # Weights are recomputed at most once per millisecond and route, and at once
        # after a change of state (ban, readmission, trial): a latency sample may wait a
        # millisecond to count, a ban may not.
        self._cached_weights: dict[str, float] = {}
        self._cache_key: tuple[int, tuple[str, ...]] | None = None
        self._all_full = True

    @property
    def config(self) -> AdaptiveConfig:
        """The tuning this router runs with."""
        return self._config

    def select_queue(self, snapshot: PublishSnapshot[Q], last_broker: str | None, now_ms: int) -> Q:
        """Choose a queue; on a retry, avoid `last_broker` whenever another is usable."""
        snapshot.require_queues()
        self._last_now = max(self._last_now, now_ms)
        weights = self._weights(snapshot.brokers, now_ms)
        if last_broker is None and self._all_full:
            return snapshot.round_robin()  # what the walk below does when all accept
        queue = snapshot.step_until(
            lambda q: q.broker_name != last_broker and self._accepts(q.broker_name, weights)
        )
        queue = snapshot.broker_turn(
            queue.broker_name
            if queue is not None
            else self._fallback(snapshot, weights, last_broker, now_ms)
        )
        health = self._health.get(queue.broker_name)
        if health is not None and health.tripped and health.state(now_ms) is BrokerState.HALF_OPEN:
            health.book_trial(now_ms, self._config)
            self._cache_key = None
        return queue

    def on_dispatch(self, broker: str, now_ms: int) -> None:
        """An attempt to `broker` was sent; pair it with one `on_complete`."""
        self._health_of(broker).dispatched(now_ms)

    def on_complete(self, broker: str) -> None:
        """An attempt to `broker` ended: answered, failed or cancelled."""
        health = self._health.get(broker)
        if health is not None:
            health.completed()

    def _health_of(self, broker: str) -> BrokerHealth:
        health = self._health.get(broker)
        if health is None:
            # A random start desynchronises producers sharing a slow broker.
            health = self._health[broker] = BrokerHealth(credit=self._rng.random())
        return health

    def _weights(self, brokers: tuple[str, ...], now_ms: int) -> dict[str, float]:
        """Each broker's share of a full round-robin share; 0 means do not send."""
        key = (now_ms, brokers)
        if key != self._cache_key:
            self._cached_weights = self._compute_weights(brokers, now_ms)
            # Only plain round-robin may skip the walk: a half-open broker's full weight
            # means "one trial now", which the walk books.
            self._all_full = all(w >= 1.0 for w in self._cached_weights.values()) and not any(
                h.tripped for h in (self._health.get(b) for b in brokers) if h is not None
            )
            self._cache_key = key
        return self._cached_weights

    def _compute_weights(self, brokers: tuple[str, ...], now_ms: int) -> dict[str, float]:
        effective: dict[str, float | None] = {}
        healthy: list[float] = []
        for broker in brokers:
            health = self._health.get(broker)
            latency = None if health is None else health.effective_latency(now_ms)
            effective[broker] = latency
            if latency is not None and health is not None and not health.tripped:
                healthy.append(latency)
        # The fastest healthy broker: with two of three brokers slow, a median would call
        # slow normal and steer nothing. Jitter cannot make it "the luckiest one": only a
        # broker over 2x slower (after the slack) loses share. Effective latencies on both
        # sides: a stall of our own event loop ages every broker alike and steers nothing.
        reference = min(healthy) if healthy else None
        weights: dict[str, float] = {}
        for broker in brokers:
            weights[broker] = self._weight_of(broker, effective[broker], reference, now_ms)
        return weights

    def _weight_of(
        self, broker: str, latency: float | None, reference: float | None, now_ms: int
    ) -> float:
        health = self._health.get(broker)
        if health is None:
            return 1.0
        state = health.state(now_ms)
        if state is BrokerState.BANNED:
            weight = 0.0
        elif state is BrokerState.HALF_OPEN:
            weight = 1.0 if health.is_trial_open(now_ms) else 0.0
        else:
            weight = health.weight(latency, reference, self._config)
        health.last_weight = weight
        return weight

    def _accepts(self, broker: str, weights: dict[str, float]) -> bool:
        weight = weights[broker]
        if weight >= 1.0:
            return True
        if weight <= 0.0:
            return False
        # A partial weight is credit earned per look: a broker at weight w is taken once
        # every 1/w looks, evenly spaced, never in a burst of lucky draws.
        health = self._health[broker]
        health.credit += weight
        if health.credit < 1.0:
            return False
        health.credit -= 1.0
        return True

    def _fallback(
        self,
        snapshot: PublishSnapshot[Q],
        weights: dict[str, float],
        last_broker: str | None,
        now_ms: int,
    ) -> str:
        """Nothing accepted in one round: the broker to send to. In order: the heaviest
        usable broker other than the last one; the last one if it is usable; a broker
        that is not banned (one whose half-open trial is out is still available: better
        a second trial than a banned broker); else the broker whose ban ends first, the
        last one only if it is alone (something must be tried; a ban is a guess)."""
        others = [b for b in snapshot.brokers if b != last_broker]
        usable = [b for b in others if weights[b] > 0]
        available = [b for b in snapshot.brokers if self.is_available(b, now_ms)]
        if usable:
            broker = max(usable, key=lambda b: weights[b])
        elif last_broker is not None and weights.get(last_broker, 0.0) > 0:
            broker = last_broker
        elif available:
            broker = min(available, key=lambda b: (b == last_broker, self._ban_end(b)))
        else:
            return min(others or snapshot.brokers, key=self._ban_end)
        return broker

    def _ban_end(self, broker: str) -> int:
        health = self._health.get(broker)
        return 0 if health is None else health.banned_until_ms

    def record(
        self,
        broker: str,
        latency_ms: float,
        *,
        isolation: bool,
        now_ms: int,
        reachable: bool = True,
    ) -> bool:
        """Feed one outcome (a send or a probe); returns whether it banned the broker.
        `reachable` is 5.x's flag: ignored."""
        self._last_now = max(self._last_now, now_ms)
        health = self._health_of(broker)
        was_tripped = health.tripped
        banned = False
        if not isolation:
            prior = self._peer_latency(broker) if health.latency_ms is None else None
            health.on_success(latency_ms, now_ms, self._config, prior_ms=prior)
        else:
            banned = health.on_failure(now_ms, self._config)
        self._bans += banned
        if health.tripped or was_tripped:
            self._cache_key = None  # bans and readmissions take effect at once
        return banned

    def _peer_latency(self, broker: str) -> float | None:
        """The low median latency estimate of the other healthy brokers (None if none)."""
        peers = sorted(
            h.latency_ms
            for b, h in self._health.items()
            if b != broker and h.latency_ms is not None and not h.tripped
        )
        return peers[(len(peers) - 1) // 2] if peers else None

    def due_probes(self, now_ms: int) -> list[str]:
        """Brokers to probe now. Each is returned at most once per probe interval: the
        call books the probe, so call it on a timer and send what it returns."""
        due = [b for b, h in self._health.items() if h.is_probe_due(now_ms, self._config)]
        for broker in due:
            self._health[broker].book_probe(now_ms, self._config)
        return due

    def retain(self, broker_names: Iterable[str]) -> None:
        """Forget every broker not in ``broker_names`` (the route no longer has it)."""
        keep = set(broker_names)
        for broker in [b for b in self._health if b not in keep]:
            del self._health[broker]
        self._cache_key = None

    def forget(self, broker: str) -> None:
        """Drop what is known of ``broker``; it starts healthy again."""
        self._health.pop(broker, None)
        self._cache_key = None

    def state(self, broker: str, now_ms: int) -> BrokerState:
        """``broker``'s state at ``now_ms`` (healthy if nothing is known of it)."""
        health = self._health.get(broker)
        return BrokerState.HEALTHY if health is None else health.state(now_ms)

    def health(self, broker: str) -> BrokerHealth | None:
        """The live estimate of `broker` (for telemetry and tests; do not mutate)."""
        return self._health.get(broker)

    def is_available(self, broker: str, now_ms: int) -> bool:
        """Whether ``broker`` may be sent to at ``now_ms`` (not banned)."""
        return self.state(broker, now_ms) is not BrokerState.BANNED

    def banned(self, now_ms: int) -> dict[str, int]:
        """The brokers banned at ``now_ms``, each with the time its ban ends."""
        return {
            b: h.banned_until_ms
            for b, h in self._health.items()
            if h.state(now_ms) is BrokerState.BANNED
        }

    @property
    def ban_count(self) -> int:
        """How many bans this router has imposed since it was made."""
        return self._bans

    def __repr__(self) -> str:
        now = self._last_now
        brokers = {b: h.describe(now) for b, h in self._health.items()}
        return f"AdaptiveRouter(brokers={brokers}, bans={self._bans})"
