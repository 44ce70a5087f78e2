"""The Java client's routers, step for step: tracking off, classic 4.9, classic 5.x.

Each method names the Java method it reproduces (rocketmq-all-4.9.4 and -5.3.x,
`MQFaultStrategy`, `TopicPublishInfo`); where a step moves the snapshot's round-robin
index, it moves it as often as Java does, so the chosen sequence is the same.

Deliberate differences, none of which changes which broker is avoided:
- One index per snapshot instead of one per thread (`ThreadLocalIndex`): we have one loop.
- 4.9.4's all-banned fallback rewrites the broker and queue id of a queue object shared
  by the route (later 4.9.x builds a new one and counts only writable queue data); we
  return the snapshot's existing queue with that broker and id, counting the snapshot's
  writable queues, as later 4.9.x does.
- `pickOneAtLeast` sorts a `ConcurrentHashMap`'s items (arbitrary order for ties); we sort
  stably in insertion order.
- 5.x's reachability detector (`startDetectorEnable`, off by default) is not modelled:
  `classic_5` asks for no probes, and only a later successful `record` makes an
  unreachable broker reachable again.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from ._policy import JAVA_4_9, JAVA_5, FaultPolicy
from ._snapshot import PublishSnapshot, Q
from ._tracker import FaultTracker

__all__ = ["Classic49Router", "Classic5Router", "OffRouter"]


class _AnswersOnly:
    """The Java strategies learn from answers only: nothing to note when a request
    leaves or completes, and no probes (5.x's detector is off by default,
    ``startDetectorEnable=false``; 4.9 has none)."""

    def on_dispatch(self, broker: str, now_ms: int) -> None:
        return None

    def on_complete(self, broker: str) -> None:
        return None

    def due_probes(self, now_ms: int) -> list[str]:
        return []


class OffRouter(_AnswersOnly):
    """Tracking off (`sendLatencyFaultEnable=false`, the Java default).

    4.9 `TopicPublishInfo.selectOneMessageQueue(lastBrokerName)` and 5.x
    `selectOneMessageQueue(BrokerFilter)` agree: step round the queues skipping the last
    broker; if every queue is on it, plain round-robin. Outcomes are ignored, as
    `updateFaultItem` returns early when tracking is off.
    """

    name = "off"

    def select_queue(self, snapshot: PublishSnapshot[Q], last_broker: str | None, now_ms: int) -> Q:
        """Round-robin, skipping ``last_broker`` on a retry when another broker has a queue."""
        snapshot.require_queues()
        if last_broker is None:
            return snapshot.round_robin()
        queue = snapshot.step_until(lambda q: q.broker_name != last_broker)
        return queue if queue is not None else snapshot.round_robin()

    def record(
        self,
        broker: str,
        latency_ms: float,
        *,
        isolation: bool,
        now_ms: int,
        reachable: bool = True,
    ) -> bool:
        """Ignored (tracking is off); never bans."""
        return False

    def retain(self, broker_names: Iterable[str]) -> None:
        """Nothing is tracked: nothing to do."""
        return None

    def forget(self, broker: str) -> None:
        """Nothing is tracked: nothing to do."""
        return None

    def is_available(self, broker: str, now_ms: int) -> bool:
        """Always True: with tracking off every broker is available."""
        return True

    def banned(self, now_ms: int) -> dict[str, int]:
        """Always empty: this router bans nothing."""
        return {}

    @property
    def ban_count(self) -> int:
        """Always 0."""
        return 0

    def __repr__(self) -> str:
        return "OffRouter()"


class _ClassicBase(_AnswersOnly):
    """What both classic versions share: a fault table fed by the version's policy."""

    name = ""

    def __init__(self, policy: FaultPolicy, rng: random.Random) -> None:
        self._policy = policy
        self._rng = rng
        self._tracker = FaultTracker(policy.window_rule, rng)
        self._bans = 0
        self._last_now = 0

    @property
    def policy(self) -> FaultPolicy:
        return self._policy

    @property
    def tracker(self) -> FaultTracker:
        return self._tracker

    def record(
        self,
        broker: str,
        latency_ms: float,
        *,
        isolation: bool,
        now_ms: int,
        reachable: bool = True,
    ) -> bool:
        """`MQFaultStrategy.updateFaultItem(broker, latency, isolation[, reachable])`.
        Returns whether it banned the broker (it was available, and now is not)."""
        self._last_now = max(self._last_now, now_ms)
        duration = self._policy.ban_duration(latency_ms, isolation=isolation)
        banned = self._tracker.update(
            broker, latency_ms, duration, reachable=reachable, now_ms=now_ms
        )
        self._bans += banned
        return banned

    def retain(self, broker_names: Iterable[str]) -> None:
        self._tracker.retain(broker_names)

    def forget(self, broker: str) -> None:
        self._tracker.remove(broker)

    def is_available(self, broker: str, now_ms: int) -> bool:
        return self._tracker.is_available(broker, now_ms)

    def is_reachable(self, broker: str) -> bool:
        return self._tracker.is_reachable(broker)

    def banned(self, now_ms: int) -> dict[str, int]:
        return self._tracker.banned(now_ms)

    @property
    def ban_count(self) -> int:
        """How many `record` calls returned True."""
        return self._bans

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(banned_until={self._tracker.banned(self._last_now)}, "
            f"items={len(self._tracker)}, bans={self._bans})"
        )


class Classic49Router(_ClassicBase):
    """rocketmq-all-4.9.4 with `sendLatencyFaultEnable=true` (rules F1, F3)."""

    name = "classic_4_9"

    def __init__(self, rng: random.Random, policy: FaultPolicy = JAVA_4_9) -> None:
        super().__init__(policy, rng)

    def select_queue(self, snapshot: PublishSnapshot[Q], last_broker: str | None, now_ms: int) -> Q:
        """`MQFaultStrategy.selectOneMessageQueue`: first available queue from the index.

        4.9.4 ignores `lastBrokerName` here: a retry may go back to the broker that just
        failed if its window is still open (a fast, non-isolated outcome).
        """
        snapshot.require_queues()
        self._last_now = max(self._last_now, now_ms)
        queue = snapshot.walk_from_next(lambda q: self._tracker.is_available(q.broker_name, now_ms))
        if queue is not None:
            return queue
        return self._least_bad(snapshot, now_ms)

    def _least_bad(self, snapshot: PublishSnapshot[Q], now_ms: int) -> Q:
        """The `pickOneAtLeast` fallback when every broker of the route is banned.

        If the picked broker has write queues here, Java takes a queue (moving the index
        once) and rewrites it to that broker with queue id `index.next() % writeQueueNums`;
        otherwise it drops the broker from the table and takes plain round-robin.
        """
        broker = self._tracker.pick_one_at_least(now_ms)
        if broker is not None and snapshot.write_queue_nums(broker) > 0:
            snapshot.round_robin()
            return snapshot.broker_queue(broker, snapshot.index.next())
        if broker is not None:
            self._tracker.remove(broker)
        return snapshot.round_robin()


class Classic5Router(_ClassicBase):
    """rocketmq-all-5.3.x with `sendLatencyEnable=true`, detector off (rules F2, F3)."""

    name = "classic_5"

    def __init__(self, rng: random.Random, policy: FaultPolicy = JAVA_5) -> None:
        super().__init__(policy, rng)

    def select_queue(self, snapshot: PublishSnapshot[Q], last_broker: str | None, now_ms: int) -> Q:
        """`MQFaultStrategy.selectOneMessageQueue(tpInfo, lastBrokerName, resetIndex)`.

        A retry (`times > 0`, exactly when a last broker exists) re-randomises the index;
        then three tiers: available and not the last broker, reachable and not the last
        broker, any queue.
        """
        snapshot.require_queues()
        self._last_now = max(self._last_now, now_ms)
        if last_broker is not None:
            snapshot.index.reset(self._rng)
        tracker = self._tracker
        queue = snapshot.step_until(
            lambda q: tracker.is_available(q.broker_name, now_ms) and q.broker_name != last_broker
        )
        if queue is None:
            queue = snapshot.step_until(
                lambda q: tracker.is_reachable(q.broker_name) and q.broker_name != last_broker
            )
        return queue if queue is not None else snapshot.round_robin()
