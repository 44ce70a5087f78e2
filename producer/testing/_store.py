"""One broker's topic table and in-memory message store (pure: no I/O, clock injected).

Offsets follow a real 4.9.4 broker: each topic queue counts its messages from 0, and
the commit-log offset advances by the size the message would take in a real commit log
(``CommitLog.calMsgLength``), so offset message ids match the real broker's for the same
sequence of sends.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from producer._remoting.message_codec import make_offset_msg_id
from producer._remoting.properties import encode_properties

__all__ = [
    "AUTO_CREATE_TOPIC",
    "PERM_INHERIT",
    "PERM_READ",
    "PERM_WRITE",
    "BrokerStore",
    "PendingMessage",
    "Put",
    "StoredMessage",
    "TopicConfig",
    "properties_length",
    "stored_size",
]

AUTO_CREATE_TOPIC = "TBW102"  # TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC
PERM_INHERIT = 1
PERM_WRITE = 2
PERM_READ = 4
DEFAULT_TOPIC_QUEUE_NUMS = 8  # BrokerConfig.defaultTopicQueueNums: TBW102's queue count

# CommitLog.calMsgLength without body, topic and properties (IPv4 born and store hosts):
# totalSize 4, magic 4, bodyCRC 4, queueId 4, flag 4, queueOffset 8, physicalOffset 8,
# sysFlag 4, bornTimestamp 8, bornHost 8, storeTimestamp 8, storeHost 8,
# reconsumeTimes 4, preparedTransactionOffset 8, bodyLength 4, topicLength 1,
# propertiesLength 2.
_FIXED_MESSAGE_BYTES = 91


def stored_size(body_len: int, topic_len: int, properties_len: int) -> int:
    """Bytes one message takes in a 4.9.4 commit log (IPv4 hosts)."""
    return _FIXED_MESSAGE_BYTES + body_len + topic_len + properties_len


def properties_length(properties: Mapping[str, str]) -> int:
    """Bytes of ``properties`` as a commit-log record holds them."""
    return len(encode_properties(properties).encode())


@dataclass(frozen=True)
class TopicConfig:
    """A topic as one broker knows it (``perm``: 4 read, 2 write, 1 inherit)."""

    name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int = PERM_READ | PERM_WRITE
    topic_sys_flag: int = 0
    message_type: str = "NORMAL"  # 5.x's ``message.type`` attribute (FIFO, DELAY, ...)
    order: bool = False  # ``updateTopic -o true``'s flag (kept and shown, not enforced)

    @property
    def queue_id_limit(self) -> int:
        """Queue ids below this are accepted (``max(read, write)``, as in ``msgCheck``)."""
        return max(self.read_queue_nums, self.write_queue_nums)

    def describe(self) -> str:
        """``TopicConfig.toString()`` of 4.9.4, used in the broker's error remarks."""
        perm = (
            ("R" if self.perm & PERM_READ else "-")
            + ("W" if self.perm & PERM_WRITE else "-")
            + ("X" if self.perm & PERM_INHERIT else "-")
        )
        return (
            f"TopicConfig [topicName={self.name}, readQueueNums={self.read_queue_nums}, "
            f"writeQueueNums={self.write_queue_nums}, perm={perm}, "
            f"topicFilterType=SINGLE_TAG, topicSysFlag={self.topic_sys_flag}, "
            f"order={str(self.order).lower()}]"
        )


@dataclass(frozen=True, slots=True)
class PendingMessage:
    """A message the broker accepted, before the store gives it offsets."""

    body: bytes
    properties: Mapping[str, str]
    size: int
    born_timestamp: int = 0
    sys_flag: int = 0
    flag: int = 0
    born_host: str = ""
    reconsume_times: int = 0
    wire_body: bytes | None = None  # a compressed body as sent (``body`` is inflated)
    prepared_transaction_offset: int = 0  # a committed transaction's half message


def seed_batch(topic: str, count: int, tags: str) -> list[PendingMessage]:
    """``count`` small messages (body ``seed-<n>``, tag ``tags``) to store without sends."""
    batch: list[PendingMessage] = []
    for n in range(count):
        body = b"seed-%d" % n
        properties = {"TAGS": tags, "WAIT": "true"}
        size = stored_size(len(body), len(topic.encode()), properties_length(properties))
        batch.append(PendingMessage(body, properties, size))
    return batch


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A message as the dev cluster stored it. ``body`` is decompressed (the bytes as sent
    when they do not decode); a compressed body is also kept as sent, in ``wire_body``,
    and a pull returns those bytes with the sysFlag the producer set."""

    topic: str
    queue_id: int
    queue_offset: int
    body: bytes
    properties: Mapping[str, str]
    uniq_key: str | None
    born_timestamp: int
    store_timestamp: int
    broker_name: str
    commit_log_offset: int
    offset_msg_id: str
    sys_flag: int = 0
    flag: int = 0
    born_host: str = ""
    reconsume_times: int = 0
    store_host: str = ""
    wire_body: bytes | None = None
    prepared_transaction_offset: int = 0

    @property
    def tags(self) -> str | None:
        """The message's tag (``TAGS``), or None."""
        return self.properties.get("TAGS")

    @property
    def keys(self) -> list[str]:
        """The message's keys (``KEYS``, split on spaces)."""
        return [k for k in self.properties.get("KEYS", "").split(" ") if k]


class Put(Protocol):
    """How the broker's parts store a message (``Broker.put``): with ``may_delay``, one
    carrying ``DELAY`` (or a 5.x timer property) waits in the schedule topic first."""

    def __call__(
        self, topic: str, queue_id: int, pending: PendingMessage, *, may_delay: bool
    ) -> StoredMessage: ...


@dataclass
class _TopicStats:
    count: int = 0
    uniq_keys: set[str] = field(default_factory=set)


class BrokerStore:
    """Topic configs, per-queue message lists and the commit-log position of one broker.

    ``keep_messages=False`` counts messages without keeping them (sink mode, benchmarks).
    """

    def __init__(
        self,
        broker_name: str,
        *,
        clock_ms: Callable[[], int],
        keep_messages: bool = True,
    ) -> None:
        self.broker_name = broker_name
        self.topics: dict[str, TopicConfig] = {}
        self.commit_log_offset = 0
        self.keep_messages = keep_messages
        self._clock_ms = clock_ms
        self._queues: dict[tuple[str, int], list[StoredMessage]] = {}
        self._next_offset: dict[tuple[str, int], int] = {}
        self._min_offset: dict[tuple[str, int], int] = {}  # raised by drop_before only
        self._stats: dict[str, _TopicStats] = {}
        self._by_commit_offset: dict[int, StoredMessage] = {}
        #: Every stored message in commit-log order (what a slave copies, ``_replication.py``).
        self.log: list[StoredMessage] = []
        self._id_prefix = ""
        self.store_host = ""
        #: Called with ``(topic, queue_id)`` after every append (long polling wakes on it).
        self.on_append: Callable[[str, int], None] | None = None

    def __repr__(self) -> str:
        return (
            f"BrokerStore({self.broker_name}, topics={len(self.topics)}, "
            f"messages={self.message_count()}, commit_log_offset={self.commit_log_offset})"
        )

    def set_store_host(self, host: str, port: int) -> None:
        """The address baked into offset message ids (set once the port is known)."""
        self._id_prefix = make_offset_msg_id(host, port, 0)[:-16]
        self.store_host = f"{host}:{port}"

    # -- topics --------------------------------------------------------------------------

    def put_topic(self, config: TopicConfig) -> None:
        self.topics[config.name] = config

    def topic(self, name: str) -> TopicConfig | None:
        return self.topics.get(name)

    # -- messages ------------------------------------------------------------------------

    def append(self, topic: str, queue_id: int, batch: list[PendingMessage]) -> list[StoredMessage]:
        """Store messages in one queue, consecutively; returns them with their offsets."""
        key = (topic, queue_id)
        queue_offset = self._next_offset.get(key, 0)
        now = self._clock_ms()
        stats = self._stats.get(topic)
        if stats is None:
            stats = self._stats[topic] = _TopicStats()
        stored: list[StoredMessage] = []
        for pending in batch:
            offset = self.commit_log_offset
            uniq_key = pending.properties.get("UNIQ_KEY")
            message = StoredMessage(
                topic=topic,
                queue_id=queue_id,
                queue_offset=queue_offset,
                body=pending.body,
                properties=pending.properties,
                uniq_key=uniq_key,
                born_timestamp=pending.born_timestamp,
                store_timestamp=now,
                broker_name=self.broker_name,
                commit_log_offset=offset,
                offset_msg_id=f"{self._id_prefix}{offset:016X}",
                sys_flag=pending.sys_flag,
                flag=pending.flag,
                born_host=pending.born_host,
                reconsume_times=pending.reconsume_times,
                store_host=self.store_host,
                wire_body=pending.wire_body,
                prepared_transaction_offset=pending.prepared_transaction_offset,
            )
            stored.append(message)
            self.commit_log_offset += pending.size
            queue_offset += 1
            stats.count += 1
            if uniq_key is not None:
                stats.uniq_keys.add(uniq_key)
        self._next_offset[key] = queue_offset
        if self.keep_messages:
            self._keep(stored)
        if self.on_append is not None:
            self.on_append(topic, queue_id)
        return stored

    def _keep(self, stored: list[StoredMessage]) -> None:
        for message in stored:
            self._queues.setdefault((message.topic, message.queue_id), []).append(message)
            self._by_commit_offset[message.commit_log_offset] = message
        self.log.extend(stored)

    def copy_in(self, copied: list[StoredMessage], log_end: int) -> None:
        """Store a master's messages as they are (HA copies the commit log byte for byte:
        the same queue and commit-log offsets, store host and times); ``log_end`` is the
        commit-log offset after the last of them."""
        for message in copied:
            key = (message.topic, message.queue_id)
            self._next_offset[key] = message.queue_offset + 1
            stats = self._stats.setdefault(message.topic, _TopicStats())
            stats.count += 1
            if message.uniq_key is not None:
                stats.uniq_keys.add(message.uniq_key)
        self._keep(copied)
        self.commit_log_offset = log_end
        if self.on_append is not None:
            for topic, queue_id in dict.fromkeys((m.topic, m.queue_id) for m in copied):
                self.on_append(topic, queue_id)

    def read(self, topic: str, queue_id: int, offset: int, max_count: int) -> list[StoredMessage]:
        """Up to ``max_count`` messages of one queue from queue offset ``offset`` on (none
        below the queue's minimum offset: those were dropped)."""
        queue = self._queues.get((topic, queue_id), [])
        start = max(offset, self.min_offset(topic, queue_id))
        return queue[start : start + max_count]

    def min_offset(self, topic: str, queue_id: int) -> int:
        """``getMinOffsetInQueue``: the first offset still stored (0 unless dropped)."""
        return self._min_offset.get((topic, queue_id), 0)

    def drop_before(self, topic: str, queue_id: int, offset: int) -> int:
        """Forget the queue's messages below ``offset`` (clamped to the queue's max), as a
        broker does when its oldest commit-log files are deleted; returns the new minimum.
        The minimum only rises."""
        key = (topic, queue_id)
        new_min = max(self.min_offset(topic, queue_id), min(offset, self.max_offset(*key)))
        self._min_offset[key] = new_min
        return new_min

    def message_at(self, commit_log_offset: int) -> StoredMessage | None:
        """``lookMessageByOffset``: the message stored at a commit-log offset."""
        return self._by_commit_offset.get(commit_log_offset)

    def earliest_store_time(self, topic: str, queue_id: int) -> int:
        """``getEarliestMessageTime``: the store time of the queue's first message, -1 if
        it has none."""
        queue = self._queues.get((topic, queue_id), [])[self.min_offset(topic, queue_id) :]
        return queue[0].store_timestamp if queue else -1

    def offset_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """``getOffsetInQueueByTime``: the offset whose store time is closest to
        ``timestamp_ms`` (the last message's for a later time, 0 for an unknown queue)."""
        first = self.min_offset(topic, queue_id)
        queue = self._queues.get((topic, queue_id), [])[first:]
        if not queue:
            return first
        times = [m.store_timestamp for m in queue]
        index = bisect.bisect_left(times, timestamp_ms)
        if index >= len(queue):
            return first + len(queue) - 1
        if index == 0 or times[index] == timestamp_ms:
            return first + index
        before, after = timestamp_ms - times[index - 1], times[index] - timestamp_ms
        return first + (index - 1 if before <= after else index)

    def max_offset(self, topic: str, queue_id: int) -> int:
        """The next queue offset (``getMaxOffsetInQueue``): 0 for an unknown queue."""
        return self._next_offset.get((topic, queue_id), 0)

    def message_count(self, topic: str | None = None) -> int:
        if topic is not None:
            stats = self._stats.get(topic)
            return 0 if stats is None else stats.count
        return sum(stats.count for stats in self._stats.values())

    def uniq_keys(self, topic: str) -> set[str]:
        stats = self._stats.get(topic)
        return set() if stats is None else set(stats.uniq_keys)

    def counts_by_topic(self) -> dict[str, int]:
        return {topic: stats.count for topic, stats in self._stats.items()}

    def messages(self, topic: str | None = None) -> Iterator[StoredMessage]:
        """Stored messages by queue then offset (only with ``keep_messages``)."""
        for (name, _queue_id), queue in sorted(self._queues.items()):
            if topic is None or name == topic:
                yield from queue
