"""Fault-aware broker routing for the producer (docs/semantics.md section 5), with no I/O.

Nothing here reads a clock, the global random generator, or a socket: the producer passes
monotonic milliseconds (`now_ms`) and a `random.Random` in, and gets decisions out.

The interface the producer uses
-------------------------------
Queues
    Any object with `.broker_name: str` and `.queue_id: int` (`QueueLike`), such as the
    producer's frozen `MessageQueue`. Selection returns one of the snapshot's own queue
    objects, never a new one.

``PublishSnapshot(queues, rng, *, topic="")``
    One topic's writable queues, in route order (broker name, then ids 0..n-1), plus its
    own round-robin index started at a random value drawn from `rng` (Java's per-topic
    `sendWhichQueue`). Build a new one on every route refresh. `is_empty()` says whether
    there is anything to send to.

``make_router(name, rng) -> Router``
    `name` is one of `ROUTER_NAMES`: ``"off"`` (Java's default: round-robin, a retry skips
    the last broker), ``"classic_4_9"``, ``"classic_5"`` (the Java client's fault strategy
    with `sendLatencyFaultEnable`, exactly), ``"adaptive"`` (ours). Any other name raises
    `ValueError` listing the valid ones. One router per producer, shared by all topics.

``Router``
    ``select_queue(snapshot, last_broker, now_ms) -> Q``
        The queue for the next attempt. `last_broker` is the broker of the previous
        attempt of the same send (None on the first). Raises `EmptySnapshotError` (a
        `LookupError`) when the snapshot has no queue.
    ``record(broker, latency_ms, *, isolation, now_ms, reachable=True) -> bool``
        After every attempt (rule S8): success -> ``isolation=False`` with its latency;
        transport, client or broker error -> ``isolation=True`` with the time it took.
        Returns whether this outcome banned the broker: it was available and now is
        not (a ban moved or extended while the broker is already banned is not new).
        On cancellation, record nothing. `reachable=False` reproduces 5.x's flag (Java
        5.x passes it for broker error codes); only ``classic_5`` reads it. Probe
        outcomes are recorded the same way.
    ``due_probes(now_ms) -> list[str]``
        Brokers the producer should probe now (e.g. GET_MAX_OFFSET, as 5.x's detector
        does); call it on a timer (every 100 ms is plenty) and record each outcome with
        `record`. Each broker is returned at most once per probe interval: the call
        books the probe. Only ``adaptive`` asks for probes: brokers that are banned, on
        trial, or slow and quiet. Without probes a healed broker waits out its ban
        (at most 30 s) instead of coming back within a probe interval.
    ``retain(broker_names)`` / ``forget(broker)``
        Drop the state of brokers that left every route (call `retain` with the union
        of all current routes after each refresh).
    ``is_available(broker, now_ms) -> bool``, ``banned(now_ms) -> {broker: until_ms}``:
    for telemetry. ``ban_count`` is how many `record` calls returned True (kept until
    the producer reads `record`'s answer instead). ``repr()`` shows the live state.

    The adaptive router's knobs are `AdaptiveConfig`; build `AdaptiveRouter(rng,
    AdaptiveConfig(...))` directly to change them.

``choose_queue(router, snapshot, *, last_broker, now_ms, order_key=None) -> Q``
    The one call the producer makes per attempt. Without `order_key` it asks the router.
    With one (a keyed or ordered send, rule F5) it returns the queue Java's
    `SelectMessageQueueByHash` picks, `abs(java_string_hash(key)) % n` over the snapshot's
    queues in route order, so Python and Java producers put a key on the same queue; that
    choice is final (never steered, even onto a banned broker) and touches neither the
    router nor the round-robin index. Recording its outcome is fine.

``spread_batch(router, snapshot, count, *, now_ms) -> [(queue, n), ...]``
    Where a transparent group of `count` messages goes, one part per queue, routed per
    message. A group of at least `MIN_PART` (4) messages per queue is one pick per queue
    carrying `count // queues`, plus one pick per remaining message: healthy brokers
    give every queue its share, give or take one, and the round-robin index moves on by
    `count` (when the cycle skips a queue, its broker banned or slow, each message is a
    pick). A smaller group makes up to one cycle of picks, each picked queue owed an even
    share (`PublishSnapshot.owed`), and leaves in runs of `MIN_PART` to
    `RUN_BUDGET // queues` messages, one to each picked queue owed most, so successive
    small groups spread over all queues in few requests.

``java_string_hash(text) -> int``
    Java's `String.hashCode()` (UTF-16 code units, signed 32-bit).

The seeded simulation that replays latency/error traces through any router on a virtual
clock lives outside the package, in the source tree's `benchmarks/routing_sim.py`.
"""

from __future__ import annotations

from . import _policy, _router
from ._adaptive import AdaptiveRouter
from ._classic import Classic5Router, Classic49Router, OffRouter
from ._health import AdaptiveConfig, BrokerHealth, BrokerState
from ._keyed import java_string_hash
from ._policy import FaultPolicy, WindowRule
from ._router import (
    Router,
    choose_queue,
    make_router,
    spread_batch,
)
from ._snapshot import EmptySnapshotError, PublishSnapshot, QueueLike, RoundRobinIndex
from ._tracker import FaultItem, FaultTracker

JAVA_4_9 = _policy.JAVA_4_9
"""Java 4.9.4's fault policy (``MQFaultStrategy``, ``routing="classic_4_9"``): a failed
send, counted as 30,000 ms of latency, bans its broker for 600,000 ms (10 min)."""
JAVA_5 = _policy.JAVA_5
"""Java 5.3's fault policy (``routing="classic_5"``): a failed send, counted as
10,000 ms of latency, bans its broker for 10,000 ms."""
MIN_PART = _router.MIN_PART
"""The fewest messages :func:`spread_batch` puts in a part while a group has fewer than
this many per queue (a small group goes to a few queues, not as requests of one or two)."""
ROUTER_NAMES = _router.ROUTER_NAMES
"""The names :func:`make_router` takes, spelled as the producer's ``routing=`` option."""
RUN_BUDGET = _router.RUN_BUDGET
"""Messages in one run of a burst, shared by the queues (``RUN_BUDGET // queues`` each):
see :func:`spread_batch`."""

__all__ = [
    # what the producer needs
    "MIN_PART",
    "ROUTER_NAMES",
    "RUN_BUDGET",
    "EmptySnapshotError",
    "PublishSnapshot",
    "QueueLike",
    "Router",
    "choose_queue",
    "java_string_hash",
    "make_router",
    "spread_batch",
    # the strategies
    "AdaptiveRouter",
    "Classic49Router",
    "Classic5Router",
    "OffRouter",
    # their parts
    "JAVA_4_9",
    "JAVA_5",
    "AdaptiveConfig",
    "BrokerHealth",
    "BrokerState",
    "FaultItem",
    "FaultPolicy",
    "FaultTracker",
    "RoundRobinIndex",
    "WindowRule",
]
