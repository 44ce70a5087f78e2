"""The producer-facing contract: the `Router` protocol, its factory, and `choose_queue`."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import Protocol

from ._adaptive import AdaptiveRouter
from ._classic import Classic5Router, Classic49Router, OffRouter
from ._keyed import keyed_queue
from ._snapshot import PublishSnapshot, Q

__all__ = ["ROUTER_NAMES", "Router", "choose_queue", "make_router"]


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
