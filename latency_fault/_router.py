"""The producer-facing contract: the `Router` protocol, its factory, and `choose_queue`."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Iterable
from typing import Protocol

from ._adaptive import AdaptiveRouter
from ._classic import Classic5Router, Classic49Router, OffRouter
from ._keyed import keyed_queue
from ._snapshot import PublishSnapshot, Q

__all__ = [
    "MIN_PART",
    "ROUTER_NAMES",
    "RUN_BUDGET",
    "Router",
    "choose_queue",
    "make_router",
    "spread_batch",
]


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


#: The fewest messages a part carries while a group has fewer than this many per queue:
#: a small group goes to a few queues at a time rather than as requests of one or two.
MIN_PART = 4
#: A small group's run holds up to this many messages divided among the queues (at least
#: `MIN_PART`): as few requests as can be while no queue falls behind by more than one
#: run, an eighth of its share of 1,000 sends (128 // 8 queues = 16: a group of 15 is one
#: request, as one queue's share of a batch was before).
RUN_BUDGET = 128


def spread_batch(
    router: Router, snapshot: PublishSnapshot[Q], count: int, *, now_ms: int
) -> list[tuple[Q, int]]:
    """Where a transparent group of `count` messages goes: `(queue, how many)` per queue.

    Routing is per message, not per request. For a group of at least `MIN_PART` messages
    per queue of the snapshot the router makes one cycle of picks; when they are every
    queue once (healthy brokers), each carries `count // len(snapshot)` messages and each
    remaining message is one more pick: every queue gets its share give or take one, and
    the round-robin index ends where `count` sends made one at a time would leave it.
    When the cycle skipped a queue (a broker banned or slow), every message is a pick of
    its own, so an adaptive router's weights apply per message.

    A smaller group makes one pick per message, up to one cycle; each picked queue is
    owed an even share of the group (`PublishSnapshot.owed` keeps the account across
    groups). The messages leave in as few even runs as hold at most
    `RUN_BUDGET // len(snapshot)` messages each (at least `MIN_PART`), one run to each of
    the picked queues owed most: successive small groups spread over every queue, none
    more than about one run from its share, in few requests.

    Picks of one queue merge into one part.
    """
    if count < 1:
        raise ValueError(f"a batch has at least one message, got {count}")
    snapshot.require_queues()
    size = len(snapshot)
    pick = functools.partial(router.select_queue, snapshot, None, now_ms)
    if count >= MIN_PART * size:
        cycle = [pick() for _ in range(size)]
        if len({(q.broker_name, q.queue_id) for q in cycle}) == size:  # a whole cycle
            share, extra = divmod(count, size)
            loads = [(q, share) for q in cycle] + [(pick(), 1) for _ in range(extra)]
        else:  # a broker skipped (banned, slow): every message is a pick of its own
            loads = [(q, 1) for q in cycle] + [(pick(), 1) for _ in range(count - size)]
    else:
        loads = _runs(snapshot, count, [pick() for _ in range(min(count, size))])
    parts: dict[tuple[str, int], tuple[Q, int]] = {}
    for queue, load in loads:
        key = (queue.broker_name, queue.queue_id)
        parts[key] = (queue, parts[key][1] + load if key in parts else load)
    return list(parts.values())


def _runs(snapshot: PublishSnapshot[Q], count: int, picks: list[Q]) -> list[tuple[Q, int]]:
    """A small group of `count` messages over `picks` (at most one cycle of the router's
    choices): each pick's queue is owed `count / len(picks)` more; the messages are cut
    into as few even runs as hold at most `RUN_BUDGET // queues` each (at least
    `MIN_PART`), and the runs go to the picked queues owed most, one run each."""
    owed = snapshot.owed
    credit = count / len(picks)
    distinct: dict[tuple[str, int], Q] = {}
    for queue in picks:
        key = (queue.broker_name, queue.queue_id)
        owed[key] += credit
        distinct[key] = queue
    longest = max(MIN_PART, RUN_BUDGET // len(snapshot))
    runs = max(1, min(count // MIN_PART, -(-count // longest)))
    # Ties go by queue id, then pick order: brokers take turns, so that whichever queues
    # are a run ahead at any moment are spread over the brokers, not one broker's block.
    ranked = sorted(distinct, key=lambda key: (-owed[key], key[1]))
    loads: list[tuple[Q, int]] = []
    for index in range(runs):
        key = ranked[index % len(ranked)]
        load = (index + 1) * count // runs - index * count // runs
        owed[key] -= load
        loads.append((distinct[key], load))
    return loads
