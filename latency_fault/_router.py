"""The producer-facing contract: the `Router` protocol, its factory, and `choose_queue`."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import Protocol

from ._adaptive import AdaptiveRouter
from ._classic import Classic5Router, Classic49Router, OffRouter
from ._keyed import keyed_queue
from ._snapshot import PublishSnapshot, Q

__all__ = ["ROUTER_NAMES", "Router", "choose_queue", "make_router", "spread_batch"]


class Router(Protocol):
    """What the producer calls. One router per producer, shared by all its topics."""

    @property
    def name(self) -> str:
        """The routing name, as ``routing=`` spells it (``ROUTER_NAMES``)."""

    def select_queue(self, snapshot: PublishSnapshot[Q], last_broker: str | None, now_ms: int) -> Q:
        """The queue for the next attempt; on a retry ``last_broker`` is the broker that just
        failed."""

    def record(
        self,
        broker: str,
        latency_ms: float,
        *,
        isolation: bool,
        now_ms: int,
        reachable: bool = True,
    ) -> bool:
        """Feed one outcome (a send or a probe): its latency, and whether the broker should be
        isolated (failed). Returns whether this outcome banned the broker."""

    def on_dispatch(self, broker: str, now_ms: int) -> None:
        """An attempt to ``broker`` was sent at ``now_ms``; paired with one :meth:`on_complete`."""

    def on_complete(self, broker: str) -> None:
        """An attempt to ``broker`` ended: answered, failed or cancelled."""

    def due_probes(self, now_ms: int) -> list[str]:
        """Brokers to probe now (booked by the call: send what it returns)."""

    def retain(self, broker_names: Iterable[str]) -> None:
        """Keep state only for these brokers (the others left the routes)."""

    def forget(self, broker: str) -> None:
        """Drop all state of ``broker``."""

    def is_available(self, broker: str, now_ms: int) -> bool:
        """Whether ``broker`` is not banned at ``now_ms``."""

    def banned(self, now_ms: int) -> dict[str, int]:
        """Brokers banned at ``now_ms``, with the time each ban ends."""

    @property
    def ban_count(self) -> int:
        """Bans imposed since the router was made."""


_FACTORIES: dict[str, Callable[[random.Random], Router]] = {
    "off": lambda rng: OffRouter(),
    "classic_4_9": Classic49Router,
    "classic_5": Classic5Router,
    "adaptive": AdaptiveRouter,
}

#: The names `make_router` accepts, as the producer's `routing=` option spells them.
ROUTER_NAMES: tuple[str, ...] = tuple(_FACTORIES)


def make_router(name: str, rng: random.Random) -> Router:
    """A fresh router by name; `rng` is its only source of randomness."""
    try:
        factory = _FACTORIES[name]
    except KeyError:
        valid = ", ".join(repr(n) for n in ROUTER_NAMES)
        raise ValueError(f"unknown routing {name!r}; valid names: {valid}") from None
    return factory(rng)


def choose_queue(
    router: Router,
    snapshot: PublishSnapshot[Q],
    *,
    last_broker: str | None,
    now_ms: int,
    order_key: str | None = None,
) -> Q:
    """The queue for one attempt of a send.

    With an `order_key` (a keyed or ordered send) it is the queue Java's
    `SelectMessageQueueByHash` picks: `abs(java_string_hash(key)) % n` over the snapshot's
    queues in route order. That choice is final (rule F5): returned even if its broker is
    banned or was the last one, and neither the router nor the snapshot's round-robin
    index is touched. Otherwise the router chooses. An empty snapshot raises
    `EmptySnapshotError` either way."""
    if order_key is not None:
        return keyed_queue(snapshot, order_key)
    return router.select_queue(snapshot, last_broker, now_ms)


def spread_batch(
    router: Router, snapshot: PublishSnapshot[Q], count: int, *, now_ms: int, turn: int = 0
) -> list[tuple[Q, int]]:
    """Where a transparent batch of `count` messages goes: `(queue, how many)` per broker.

    Routing is per message, not per request: the router chooses as it would for each
    message, once per queue of the snapshot at most (a full round-robin cycle when all
    brokers are healthy, so every broker gets its share of this batch, give or take one),
    and the messages are dealt evenly over those picks; picks on one broker merge into one
    part, sent to one of that broker's picked queues (`turn` rotates which, batch to
    batch). An adaptive router's weights thus apply to messages: a pick carries
    `count / picks` of them.
    """
    if count < 1:
        raise ValueError(f"a batch has at least one message, got {count}")
    snapshot.require_queues()
    picks = [router.select_queue(snapshot, None, now_ms) for _ in range(min(count, len(snapshot)))]
    share, extra = divmod(count, len(picks))
    # The remainder goes to evenly spaced picks, not the first ones (often one broker's).
    bonus = {index * len(picks) // extra for index in range(extra)}
    queues: dict[str, list[Q]] = {}
    counts: dict[str, int] = {}
    for index, queue in enumerate(picks):
        broker = queue.broker_name
        queues.setdefault(broker, []).append(queue)
        counts[broker] = counts.get(broker, 0) + share + (index in bonus)
    return [(found[turn % len(found)], counts[broker]) for broker, found in queues.items()]
