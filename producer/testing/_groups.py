"""A broker's consumer-group state (pure; times are the caller's ms).

* :class:`GroupConfig` - a subscription group (``subscriptionGroup.json`` defaults).
* :class:`ConsumerRegistry` - who consumes what, by heartbeat (``ConsumerManager``):
  channels expire 120 s after their last heartbeat, leave on close or UNREGISTER_CLIENT.
* :class:`LockTable` - orderly consumers' queue locks (``RebalanceLockManager``, 60 s).
* :class:`ConsumerOffsets` - committed offsets per ``(topic, group, queue)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from producer._remoting.subscription import Subscription
from producer._types.message import MessageQueue
from producer.testing._server import Channel

__all__ = [
    "CHANNEL_EXPIRY_MS",
    "LOCK_EXPIRY_MS",
    "ConsumerOffsets",
    "ConsumerRegistry",
    "GroupConfig",
    "LockTable",
    "RegisteredConsumer",
]

CHANNEL_EXPIRY_MS = 120_000  # ConsumerManager.CHANNEL_EXPIRED_TIMEOUT
LOCK_EXPIRY_MS = 60_000  # rocketmq.broker.rebalance.lockMaxLiveTime


@dataclass
class GroupConfig:
    """A subscription group as 4.9.4 auto-creates it."""

    name: str
    retry_max_times: int = 16
    retry_queue_nums: int = 1
    consume_enable: bool = True
    consume_broadcast_enable: bool = True


@dataclass
class RegisteredConsumer:
    """One client of a group: its channel, model and subscriptions (topic -> (sub, version))."""

    client_id: str
    channel: Channel
    model: str
    subscriptions: dict[str, tuple[Subscription, int]] = field(default_factory=dict)
    last_heartbeat_ms: float = 0.0
    # what GET_CONSUMER_CONNECTION_LIST echoes (ConsumerData, the heartbeat's header)
    consume_type: str = "CONSUME_PASSIVELY"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    language: str = "JAVA"
    version: int = 0


class ConsumerRegistry:
    """Groups and their live consumers."""

    def __init__(self) -> None:
        self.groups: dict[str, GroupConfig] = {}
        self._members: dict[str, dict[str, RegisteredConsumer]] = {}

    def __repr__(self) -> str:
        sizes = {g: len(m) for g, m in self._members.items()}
        return f"ConsumerRegistry(groups={len(self.groups)}, members={sizes})"

    def group(self, name: str, *, create: bool = True) -> GroupConfig | None:
        config = self.groups.get(name)
        if config is None and create:
            config = self.groups[name] = GroupConfig(name)
        return config

    def register(self, group: str, consumer: RegisteredConsumer) -> bool:
        """Add or refresh ``consumer``; ``True`` when the group changed (a new member, or
        topics subscribed or dropped): its members must then be notified. A higher
        ``subVersion`` alone is recorded without a notice, as ``updateSubscription`` does
        (the capture's re-stamped heartbeats, frames 116, 119, 387, 401, get none)."""
        self.group(group)
        members = self._members.setdefault(group, {})
        known = members.get(consumer.client_id)
        members[consumer.client_id] = consumer
        if known is None or known.channel is not consumer.channel:
            return True
        return set(known.subscriptions) != set(consumer.subscriptions)

    def unregister(self, group: str, client_id: str) -> bool:
        members = self._members.get(group, {})
        return members.pop(client_id, None) is not None

    def drop_channel(self, channel: Channel) -> list[str]:
        """Forget every registration on ``channel``; returns the groups that changed."""
        changed = []
        for group, members in self._members.items():
            gone = [cid for cid, c in members.items() if c.channel is channel]
            for cid in gone:
                del members[cid]
            if gone:
                changed.append(group)
        return changed

    def expire(self, now_ms: float) -> list[str]:
        """Drop members silent for 120 s; returns the groups that changed."""
        changed = []
        for group, members in self._members.items():
            stale = [
                cid
                for cid, c in members.items()
                if now_ms - c.last_heartbeat_ms > CHANNEL_EXPIRY_MS or not c.channel.is_open
            ]
            for cid in stale:
                del members[cid]
            if stale:
                changed.append(group)
        return changed

    def members(self, group: str) -> list[RegisteredConsumer]:
        return list(self._members.get(group, {}).values())

    def client_ids(self, group: str) -> list[str]:
        return list(self._members.get(group, {}))

    def subscription(self, group: str, topic: str) -> tuple[Subscription, int] | None:
        """The newest registered subscription of ``topic`` in ``group``, if any."""
        best: tuple[Subscription, int] | None = None
        for member in self._members.get(group, {}).values():
            found = member.subscriptions.get(topic)
            if found is not None and (best is None or found[1] > best[1]):
                best = found
        return best

    def is_registered(self, group: str) -> bool:
        return bool(self._members.get(group))

    def snapshot(self) -> dict[str, dict[str, frozenset[str]]]:
        """Live members: group -> client id -> the topics its heartbeat subscribed."""
        return {
            group: {c: frozenset(m.subscriptions) for c, m in members.items()}
            for group, members in sorted(self._members.items())
            if members
        }


class LockTable:
    """Queue locks per group: granted when free, expired, or already the caller's."""

    def __init__(self) -> None:
        self._locks: dict[tuple[str, MessageQueue], tuple[str, float]] = {}

    def __repr__(self) -> str:
        return f"LockTable({len(self._locks)} locks)"

    def try_lock(
        self, group: str, queues: list[MessageQueue], client_id: str, now_ms: float
    ) -> list[MessageQueue]:
        """The queues of ``queues`` now held by ``client_id``, in request order."""
        granted = []
        for queue in queues:
            held = self._locks.get((group, queue))
            if held is None or held[0] == client_id or now_ms - held[1] > LOCK_EXPIRY_MS:
                self._locks[(group, queue)] = (client_id, now_ms)
                granted.append(queue)
        return granted

    def snapshot(self, now_ms: float) -> dict[str, dict[str, str]]:
        """Unexpired locks: ``{group: {"topic@broker/queue": client_id}}``."""
        held: dict[str, dict[str, str]] = {}
        for (group, queue), (client_id, at_ms) in sorted(self._locks.items(), key=str):
            if now_ms - at_ms <= LOCK_EXPIRY_MS:
                held.setdefault(group, {})[str(queue)] = client_id
        return held

    def unlock(self, group: str, queues: list[MessageQueue], client_id: str) -> None:
        for queue in queues:
            held = self._locks.get((group, queue))
            if held is not None and held[0] == client_id:
                del self._locks[(group, queue)]


class ConsumerOffsets:
    """``ConsumerOffsetManager``: stores unconditionally (an update may move back)."""

    def __init__(self) -> None:
        self._offsets: dict[tuple[str, str, int], int] = {}

    def __repr__(self) -> str:
        return f"ConsumerOffsets({len(self._offsets)} entries)"

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self._offsets[(topic, group, queue_id)] = offset

    def query(self, group: str, topic: str, queue_id: int) -> int | None:
        return self._offsets.get((topic, group, queue_id))

    def put_all(self, other: ConsumerOffsets) -> None:
        """``getOffsetTable().putAll``: ``other``'s entries overwrite these; the rest stay."""
        self._offsets.update(other._offsets)

    def remove_group(self, group: str) -> None:
        """``removeOffset``: forget every offset ``group`` committed."""
        for key in [k for k in self._offsets if k[1] == group]:
            del self._offsets[key]

    def topics_of(self, group: str) -> list[str]:
        """``whichTopicByConsumer``: the topics ``group`` committed offsets in."""
        return sorted({topic for topic, g, _ in self._offsets if g == group})

    def groups_of(self, topic: str) -> list[str]:
        """``whichGroupByTopic``: the groups that committed offsets in ``topic``."""
        return sorted({g for t, g, _ in self._offsets if t == topic})

    def snapshot(self) -> dict[str, dict[int, int]]:
        """``consumerOffset.json``'s shape: ``{"topic@group": {queue: offset}}``."""
        table: dict[str, dict[int, int]] = {}
        for (topic, group, queue_id), offset in sorted(self._offsets.items()):
            table.setdefault(f"{topic}@{group}", {})[queue_id] = offset
        return table
