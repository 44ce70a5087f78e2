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
    def name(self) -> str: ...

    def select_queue(
        self, snapshot: PublishSnapshot[Q], last_broker: str | None, now_ms: int
    ) -> Q: ...

    def record(
        self,
        broker: str,
        latency_ms: float,
        *,
        isolation: bool,
        now_ms: int,
        reachable: bool = True,
    ) -> bool: ...

    def on_dispatch(self, broker: str, now_ms: int) -> None: ...

    def on_complete(self, broker: str) -> None: ...

    def due_probes(self, now_ms: int) -> list[str]: ...

    def retain(self, broker_names: Iterable[str]) -> None: ...

    def forget(self, broker: str) -> None: ...

    def is_available(self, broker: str, now_ms: int) -> bool: ...

    def banned(self, now_ms: int) -> dict[str, int]: ...

    @property
    def ban_count(self) -> int: ...


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
