"""Which replica of a broker group a queue is read from, and when to look at the route
again (sans-I/O: replicas, answers and ``now`` in, decisions out).

Theory of operation. A broker group is a master (brokerId 0) and its slaves (1, 2, ...),
as the route names them. The Java 4.9.4 client reads a queue from the node the broker
last suggested (``PullAPIWrapper.pullFromWhichNodeTable``, set from every pull answer's
``suggestWhichBrokerId``; the master until a first answer), found as
``MQClientInstance.findBrokerAddressInSubscribe(name, id, onlyThisBroker=false)`` finds
it: that id; for a slave id not in the route, the next id; else the first replica of the
group (the lowest id). A master that died is therefore left only once the route stops
naming it - up to Java's 30 s route poll after the name server drops it, plus its 3 s
pull retry delays in between.

:class:`PullNodes` follows the same rules over the replicas it believes reachable: a
transport failure on an address (:meth:`PullNodes.failed`) marks it down for
``down_ms``, and while it is down every queue of its group reads from the next choice, at
once (:meth:`PullNodes.can_retry_at_once` says the shell need not wait its pull retry
delay). The mark lapses by itself, so a master still in the route is tried again every
``down_ms``; a master back in the route after a restart is read again as soon as a
slave's answer suggests it (a 4.x slave always suggests the master). When every replica
is down, the choice falls back to the route alone, as Java's.

While any queue reads from a slave or any address is down (:meth:`PullNodes.degraded`),
the reader should look at the route every ``recheck_ms`` (:meth:`PullNodes.route_due`):
that is how a master's return or a promoted master (a new address for brokerId 0) is
noticed within seconds. Otherwise it looks every ``route_ms`` (3 s, where Java polls every
30 s): a master that hangs with its connections open fails nothing, and the name server's
dropping it (a real one after 120 s of silence) is seen only in the route. A pull in flight
to an address the route no longer names for its broker (:meth:`PullNodes.gone`) is
abandoned, not waited out, and the queue pulled from the replica the route names now; the
shell waits for its next look with :meth:`PullNodes.wait_ms`. The cost: one
GET_ROUTEINFO_BY_TOPIC per read topic every 3 s. The shell owns all I/O and the clock;
this object is owned by one reader's event loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from producer._remoting.route import DEGRADED_ROUTE_POLL_MS, MASTER_ID
from producer._types.message import MessageQueue

__all__ = ["DOWN_MS", "RECHECK_MS", "ROUTE_MS", "Node", "PullNodes", "find_in_subscribe"]

DOWN_MS = 10_000.0  # how long a failed address is passed over before it is tried again
RECHECK_MS = DEGRADED_ROUTE_POLL_MS
#: A reader's route period while nothing looks wrong: a hung master dropped from the route
#: is left within this (plus one pull), not after its long poll's 30 s timeout.
ROUTE_MS = 3_000.0
#: The longest a watch on a pull in flight sleeps between looks at the clock and route
#: (a route read by another queue's pull shows without waiting for this one's period).
WATCH_TICK_MS = 500.0


@dataclass(frozen=True, slots=True)
class Node:
    """One replica chosen: its broker id and address."""

    broker_id: int
    addr: str

    @property
    def is_slave(self) -> bool:
        """A slave stores no committed offset from a pull (Java clears the commit flag)."""
        return self.broker_id != MASTER_ID


def find_in_subscribe(replicas: Mapping[int, str], wanted: int) -> Node | None:
    """``findBrokerAddressInSubscribe(name, wanted, onlyThisBroker=false)``: ``wanted``;
    for a slave id absent, the next id; else the lowest id (Java's ``HashMap`` of small
    ``Long`` keys iterates in id order); ``None`` for a group with no replica."""
    for broker_id in (wanted, wanted + 1) if wanted != MASTER_ID else (wanted,):
        addr = replicas.get(broker_id)
        if addr is not None:
            return Node(broker_id, addr)
    if not replicas:
        return None
    first = min(replicas)
    return Node(first, replicas[first])


class PullNodes:
    """Per queue, the broker's last suggestion; per address, until when it is down."""

    def __init__(
        self,
        *,
        down_ms: float = DOWN_MS,
        recheck_ms: float = RECHECK_MS,
        route_ms: float = ROUTE_MS,
    ) -> None:
        self.down_ms = down_ms
        self.recheck_ms = recheck_ms
        self.route_ms = route_ms
        self._suggested: dict[MessageQueue, int] = {}
        self._down_until: dict[str, float] = {}
        self._on_slave: set[MessageQueue] = set()
        self._checked_at: dict[str, float] = {}  # topic -> when its route was last asked

    def __repr__(self) -> str:
        return (
            f"PullNodes(down={sorted(self._down_until)}, on_slave={len(self._on_slave)}, "
            f"suggested={len(self._suggested)})"
        )

    def is_down(self, addr: str, now_ms: float) -> bool:
        """Whether ``addr`` failed less than ``down_ms`` ago."""
        until = self._down_until.get(addr)
        if until is None:
            return False
        if now_ms >= until:
            del self._down_until[addr]
            return False
        return True

    def live(self, replicas: Mapping[int, str], now_ms: float) -> dict[int, str]:
        """The replicas not down; all of them if every one is (try as Java would)."""
        up = {i: a for i, a in replicas.items() if not self.is_down(a, now_ms)}
        return up or dict(replicas)

    def choose(
        self, queue: MessageQueue, replicas: Mapping[int, str], now_ms: float
    ) -> Node | None:
        """The replica to pull ``queue`` from now (``None``: the group has none)."""
        node = find_in_subscribe(self.live(replicas, now_ms), self._suggested.get(queue, MASTER_ID))
        if node is not None and node.is_slave:
            self._on_slave.add(queue)
        else:
            self._on_slave.discard(queue)
        return node

    def for_offsets(self, replicas: Mapping[int, str], now_ms: float) -> Node | None:
        """Where a committed offset is stored or asked: the master, or with none in the
        route (or it down), the first live replica (``RemoteBrokerOffsetStore``'s
        second ``findBrokerAddressInSubscribe(name, 0, false)``)."""
        return find_in_subscribe(self.live(replicas, now_ms), MASTER_ID)

    def suggest(self, queue: MessageQueue, broker_id: int) -> None:
        """A pull answer's ``suggestWhichBrokerId`` (``updatePullFromWhichNode``)."""
        self._suggested[queue] = broker_id

    def failed(self, addr: str, now_ms: float) -> None:
        """A transport failure on ``addr``: passed over for ``down_ms``, and every
        route due at once (the name server may already know more)."""
        self._down_until[addr] = now_ms + self.down_ms
        self._checked_at.clear()

    def can_retry_at_once(
        self, queue: MessageQueue, replicas: Mapping[int, str], failed_addr: str, now_ms: float
    ) -> bool:
        """After a failure on ``failed_addr``: another live replica can be pulled now."""
        node = find_in_subscribe(self.live(replicas, now_ms), self._suggested.get(queue, MASTER_ID))
        return node is not None and node.addr != failed_addr

    def forget(self, queue: MessageQueue) -> None:
        """The queue is no longer read by this reader."""
        self._suggested.pop(queue, None)
        self._on_slave.discard(queue)

    def degraded(self, now_ms: float) -> bool:
        """Some queue reads from a slave, or some address is down."""
        if self._on_slave:
            return True
        return any(self.is_down(a, now_ms) for a in list(self._down_until))

    def recheck_now(self, topic: str) -> None:
        """The ask :meth:`route_due` counted did not happen: due again at once."""
        self._checked_at.pop(topic, None)

    def routed(self, topic: str, now_ms: float) -> None:
        """``topic``'s route was just read (by whoever asked): its period starts again."""
        self._checked_at[topic] = now_ms

    def period_ms(self, now_ms: float) -> float:
        """How often the route is read now: ``recheck_ms`` degraded, else ``route_ms``."""
        return self.recheck_ms if self.degraded(now_ms) else self.route_ms

    def route_due(self, topic: str, now_ms: float) -> bool:
        """Whether the reader should ask for ``topic``'s route now (never asked, or not
        in the last :meth:`period_ms`); a true answer counts as the ask."""
        last = self._checked_at.get(topic)
        if last is not None and now_ms - last < self.period_ms(now_ms):
            return False
        self._checked_at[topic] = now_ms
        return True

    def wait_ms(self, topic: str, now_ms: float) -> float:
        """How long a watch on a pull in flight sleeps before it looks again: until the
        route is due, at most ``WATCH_TICK_MS``."""
        last = self._checked_at.get(topic)
        left = 0.0 if last is None else last + self.period_ms(now_ms) - now_ms
        return max(0.0, min(left, WATCH_TICK_MS))

    @staticmethod
    def gone(node: Node, replicas: Mapping[int, str]) -> bool:
        """The route no longer names ``node``'s address for its broker: a pull in flight
        there is abandoned (its offset not advanced) and the queue pulled elsewhere."""
        return bool(replicas) and node.addr not in replicas.values()
