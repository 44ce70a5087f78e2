"""A broker's answers to ``mqadmin``'s everyday requests (``AdminBrokerProcessor`` of
rocketmq-all-4.9.4 and 5.2.0; bodies encoded by :mod:`producer._remoting.admin`).

* UPDATE_AND_CREATE_TOPIC (17): ``TopicValidator.validateTopic`` (blank, characters,
  length) and ``isSystemTopic`` (the static set, ``rmq_sys_*``, the cluster's and this
  broker's names, ``<cluster>_REPLY_TOPIC``) refuse with SYSTEM_ERROR; otherwise the
  config replaces any earlier one and the broker registers it with the name server at
  once (``registerIncrementBrokerData``). SUCCESS keeps the remark a Java response starts
  with, ``not set any response code``, as the real answer has it.
* DELETE_TOPIC_IN_BROKER (215): the same checks; the topic's config goes (the name server
  is told separately, by DELETE_TOPIC_IN_NAMESRV).
* GET_TOPIC_STATS_INFO (202): min/max offset and the last message's store time of each
  write queue; TOPIC_NOT_EXIST ``topic[X] not exist``.
* GET_CONSUME_STATS (208): per read queue of the topic (or of every topic the group has
  offsets for), skipping topics the group's live consumers do not subscribe; 5.x adds
  ``pullOffset`` (here the committed offset: pull positions are not tracked), and a pop
  group's offsets are where its pops committed (``_pop_committed``).
* GET_CONSUMER_CONNECTION_LIST (203): the group's heartbeats; CONSUMER_NOT_ONLINE.
* GET_BROKER_RUNTIME_INFO (28): the figures ``clusterList`` and ``brokerStatus`` print;
  rates and thread-pool queues are 0 (not measured), counts and offsets are the store's.
* GET_MAX_OFFSET (30): a queue's max offset (also what consumers ask);
* QUERY_TOPIC_CONSUME_BY_WHO (300): the groups consuming a topic (by heartbeat or offset);
* VIEW_MESSAGE_BY_ID (33): the record at a commit-log offset, else SYSTEM_ERROR
  ``can not find message by the offset, N``;
* a 5.x broker's QUERY_ASSIGNMENT (400) and SET_MESSAGE_REQUEST_MODE (401):
  ``_assignment.py`` (a 4.9.4 broker does not know them); subscription groups (200, 207):
  ``_sub_groups.py``.

Maps are written in Java's ``HashMap`` order (``_java_order.py``), as the real answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

from latency_fault import java_string_hash
from producer._remoting.admin import (
    ClientConnection,
    OffsetWrapper,
    TopicOffset,
    consume_stats_body,
    consumer_connection_body,
    group_list_body,
    kv_table_body,
    parse_create_topic,
    topic_stats_body,
)
from producer._remoting.command import RemotingCommand
from producer._remoting.consumer_requests import subscription_json
from producer._remoting.java_hash_map import java_hash_order
from producer._remoting.request_codes import (
    POP_BROKER_VERSION,
    V5_0_0,
    RequestCode,
    version_name,
)
from producer._remoting.route import TopicRouteData
from producer._remoting.send_header import HeaderFieldError
from producer._remoting.store_record import encode_record
from producer._remoting.validation import is_system_topic
from producer._response_codes import ResponseCode
from producer._types.message import MessageQueue
from producer.testing._assignment import ASSIGNMENT_CODES, Assignments
from producer.testing._consume_fields import Refused, int_field, need, pulled_record
from producer.testing._consume_side import ConsumeSide
from producer.testing._java_order import queue_hash
from producer.testing._pop import PopSide
from producer.testing._send_checks import MAX_MESSAGE_SIZE, SendRefusal, check_topic_name
from producer.testing._store import BrokerStore, StoredMessage, TopicConfig
from producer.testing._sub_groups import SUB_GROUP_CODES, answer_sub_group

__all__ = ["ADMIN_CODES", "BrokerAdmin"]

ADMIN_CODES = frozenset(
    {
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.GET_TOPIC_STATS_INFO,
        RequestCode.GET_CONSUME_STATS,
        RequestCode.GET_CONSUMER_CONNECTION_LIST,
        RequestCode.GET_BROKER_RUNTIME_INFO,
        RequestCode.VIEW_MESSAGE_BY_ID,
        RequestCode.QUERY_TOPIC_CONSUME_BY_WHO,
        RequestCode.GET_MAX_OFFSET,
    }
)
_REMOTING_EXCEPTION = "org.apache.rocketmq.remoting.exception.RemotingCommandException"
_NO_CODE_SET = "not set any response code"  # RemotingCommand.createResponseCommand's remark
_ATTRIBUTE_MESSAGE_TYPE = "message.type"
_ZERO_RATE = "0.0  "  # StatsItem's "%.1f  " style figures, as a quiet broker shows them
# DefaultMessageStore.getRuntimeInfo's HashMap<>(64), which KVTable writes as it iterates.
_RUNTIME_TABLE_CAPACITY = 64
K = TypeVar("K")
V = TypeVar("V")


class BrokerAdmin:
    """The admin requests of one broker; ``registered(config)`` tells the name server, a
    5.x broker's assignments (``_assignment.py``) ask ``route_of(topic)``."""

    def __init__(
        self,
        store: BrokerStore,
        consume: ConsumeSide,
        *,
        broker_name: str,
        cluster_name: str,
        version: int,
        clock_ms: Callable[[], int],
        registered: Callable[[TopicConfig], None],
        route_of: Callable[[str], TopicRouteData | None],
        pop: PopSide | None = None,
    ) -> None:
        self.store = store
        self.consume = consume
        self.broker_name = broker_name
        self.cluster_name = cluster_name
        self.version = version
        self._clock_ms = clock_ms
        self._registered = registered
        self.pop = pop
        self.boot_ms = clock_ms()
        self.assignments = (
            Assignments(consume.registry, route_of) if version >= POP_BROKER_VERSION else None
        )
        # the codes this broker answers here (a 4.9.4 one: not the 5.x assignment codes)
        self.codes = ADMIN_CODES | SUB_GROUP_CODES
        self.codes |= ASSIGNMENT_CODES if self.assignments else frozenset()

    def __repr__(self) -> str:
        return f"BrokerAdmin({self.broker_name}, {version_name(self.version)})"

    def process(self, request: RemotingCommand) -> RemotingCommand:
        try:
            return self._dispatch(request)
        except Refused as refused:
            return request.make_response(refused.code, remark=refused.remark)

    def _dispatch(self, request: RemotingCommand) -> RemotingCommand:
        code = request.code
        if code in ASSIGNMENT_CODES and self.assignments is not None:
            return self.assignments.process(request)
        if code in SUB_GROUP_CODES:
            return answer_sub_group(request, self.consume.registry, self.consume.offsets)
        if code == RequestCode.UPDATE_AND_CREATE_TOPIC:
            return self._create_topic(request)
        if code == RequestCode.DELETE_TOPIC_IN_BROKER:
            topic = need(request, "topic")
            self._check_admin_topic(topic)
            self.store.topics.pop(topic, None)
            return request.make_response(ResponseCode.SUCCESS)
        if code == RequestCode.GET_TOPIC_STATS_INFO:
            return self._topic_stats(request)
        if code == RequestCode.GET_CONSUME_STATS:
            return self._consume_stats(request)
        if code == RequestCode.GET_CONSUMER_CONNECTION_LIST:
            return self._connections(request)
        if code == RequestCode.QUERY_TOPIC_CONSUME_BY_WHO:
            return self._consumed_by(request)
        if code == RequestCode.GET_MAX_OFFSET:  # getMaxOffset: the queue's, 0 if unknown
            high = self.store.max_offset(need(request, "topic"), int_field(request, "queueId"))
            return request.make_response(ResponseCode.SUCCESS, ext_fields={"offset": str(high)})
        if code == RequestCode.GET_BROKER_RUNTIME_INFO:
            figures = dict(self.runtime_figures())
            ordered = _hash_ordered(figures, java_string_hash, capacity=_RUNTIME_TABLE_CAPACITY)
            body = kv_table_body(ordered)
            return request.make_response(ResponseCode.SUCCESS, body=body)
        return self._view_message(request)

    # -- topics --------------------------------------------------------------------------

    def _check_admin_topic(self, topic: str) -> None:
        """``TopicValidator.validateTopic`` then ``isSystemTopic``, both SYSTEM_ERROR."""
        try:
            check_topic_name(topic)
        except SendRefusal as refusal:
            if refusal.code != ResponseCode.SYSTEM_ERROR:  # a send-only rule
                raise Refused(ResponseCode.SYSTEM_ERROR, _system_topic(topic)) from None
            raise Refused(ResponseCode.SYSTEM_ERROR, refusal.remark) from None
        if self._is_system_topic(topic):
            raise Refused(ResponseCode.SYSTEM_ERROR, _system_topic(topic))

    def _is_system_topic(self, topic: str) -> bool:
        # TopicConfigManager adds the cluster's and the broker's own names and the reply
        # topic to the validator's (JVM-wide) set: another broker's name is not in it.
        own = {self.cluster_name, self.broker_name, f"{self.cluster_name}_REPLY_TOPIC"}
        return is_system_topic(topic) or topic in own

    def _create_topic(self, request: RemotingCommand) -> RemotingCommand:
        try:
            header = parse_create_topic(request.ext_fields)
        except HeaderFieldError as exc:
            remark = f"{_REMOTING_EXCEPTION}: the custom field <{exc.field}> is null"
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=remark)
        self._check_admin_topic(header.topic)
        attributes = _parse_attributes(request.field("attributes"))
        config = TopicConfig(
            header.topic,
            header.read_queue_nums,
            header.write_queue_nums,
            header.perm,
            header.topic_sys_flag,
            message_type=attributes.get(_ATTRIBUTE_MESSAGE_TYPE, "NORMAL"),
            order=header.order,
        )
        self.store.put_topic(config)
        self._registered(config)
        return request.make_response(ResponseCode.SUCCESS, remark=_NO_CODE_SET)

    def _topic_stats(self, request: RemotingCommand) -> RemotingCommand:
        topic = need(request, "topic")
        config = self.store.topic(topic)
        if config is None:
            raise Refused(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        lines = {}
        for queue_id in range(config.write_queue_nums):
            high = self.store.max_offset(topic, queue_id)
            lines[MessageQueue(topic, self.broker_name, queue_id)] = TopicOffset(
                min_offset=self.store.min_offset(topic, queue_id),
                max_offset=high,
                last_update_timestamp=self._store_time(topic, queue_id, high - 1),
            )
        body = topic_stats_body(_hash_ordered(lines, queue_hash))
        return request.make_response(ResponseCode.SUCCESS, body=body)

    def _store_time(self, topic: str, queue_id: int, offset: int) -> int:
        """``getMessageStoreTimeStamp``: 0 below the queue (or past it)."""
        found = self.store.read(topic, queue_id, offset, 1) if offset >= 0 else []
        return found[0].store_timestamp if found and found[0].queue_offset == offset else 0

    # -- consumers -----------------------------------------------------------------------

    def _consume_stats(self, request: RemotingCommand) -> RemotingCommand:
        group = need(request, "consumerGroup")
        topic = request.field("topic")
        topics = [topic] if topic and topic.strip() else self._topics_of(group)
        lines: dict[MessageQueue, OffsetWrapper] = {}
        for name in topics:
            config = self.store.topic(name)
            if config is None or not self._subscribed(group, name):
                continue
            for queue_id in range(config.read_queue_nums):
                lines[MessageQueue(name, self.broker_name, queue_id)] = self._offset_line(
                    group, name, queue_id
                )
        body = consume_stats_body(_hash_ordered(lines, queue_hash))
        return request.make_response(ResponseCode.SUCCESS, body=body)

    def _topics_of(self, group: str) -> list[str]:
        """``whichTopicByConsumer``: committed offsets, and (5.x) the topics it popped."""
        popped = [] if self.pop is None else [t for g, t, _ in self.pop.pop_offsets if g == group]
        return sorted({*self.consume.offsets.topics_of(group), *popped})

    def _pop_committed(self, group: str, topic: str, queue_id: int) -> int | None:
        """What a 5.x broker's offset table says after pops: ``PopBufferMergeService``
        commits past a check point once it is acked or revived, an orderly pop past each
        acked message; so the oldest pending check point's start, or the first message an
        orderly hold has not acked, else the pop offset (``None``: never popped)."""
        offset = None if self.pop is None else self.pop.pop_offsets.get((group, topic, queue_id))
        if self.pop is None or offset is None:
            return None
        pending = {offset, self.pop.checkpoints.pending_start(group, topic, queue_id)}
        lock = self.pop.order_locks.get(group, topic, queue_id)
        if lock is not None:
            pending |= set(lock.offsets) - lock.acked
        return min(p for p in pending if p is not None)

    def _subscribed(self, group: str, topic: str) -> bool:
        """A topic counts unless the group's live consumers subscribe others only."""
        members = self.consume.registry.members(group)
        return not members or any(topic in m.subscriptions for m in members)

    def _offset_line(self, group: str, topic: str, queue_id: int) -> OffsetWrapper:
        stored = self.consume.offsets.query(group, topic, queue_id)
        popped = self._pop_committed(group, topic, queue_id)
        committed = max(0, stored or 0, popped or 0)
        return OffsetWrapper(
            broker_offset=self.store.max_offset(topic, queue_id),
            consumer_offset=committed,
            last_timestamp=self._store_time(topic, queue_id, committed - 1),
            pull_offset=committed if self.version >= V5_0_0 else None,
        )

    def _connections(self, request: RemotingCommand) -> RemotingCommand:
        group = need(request, "consumerGroup")
        members = self.consume.registry.members(group)
        if not members:
            remark = f"the consumer group[{group}] not online"
            raise Refused(ResponseCode.CONSUMER_NOT_ONLINE, remark)
        newest = max(members, key=lambda m: m.last_heartbeat_ms)
        subscriptions = {}
        for member in members:
            for topic, (subscription, version) in member.subscriptions.items():
                subscriptions[topic] = subscription_json(subscription, version)
        body = consumer_connection_body(
            (ClientConnection(m.client_id, m.channel.peer, m.language, m.version) for m in members),
            (line for _, line in _hash_ordered(subscriptions, java_string_hash)),
            consume_type=newest.consume_type,
            message_model=newest.model,
            consume_from_where=newest.consume_from_where,
        )
        return request.make_response(ResponseCode.SUCCESS, body=body)

    def _consumed_by(self, request: RemotingCommand) -> RemotingCommand:
        """The groups whose live consumers subscribe the topic, and those with offsets in it."""
        topic = need(request, "topic")
        groups = set(self.consume.offsets.groups_of(topic))
        for group, members in self.consume.registry.snapshot().items():
            if any(topic in topics for topics in members.values()):
                groups.add(group)
        body = group_list_body(java_hash_order(sorted(groups), java_string_hash))
        return request.make_response(ResponseCode.SUCCESS, body=body)

    # -- broker figures, messages --------------------------------------------------------

    def runtime_figures(self) -> Iterator[tuple[str, str]]:
        """``prepareRuntimeInfo``'s keys that ``clusterList`` / ``brokerStatus`` read."""
        now = self._clock_ms()
        count = self.store.message_count()
        size = high = self.store.commit_log_offset  # every record is kept: written == size
        earliest = self._earliest_message_time()
        yield from (
            ("brokerVersionDesc", version_name(self.version)),
            ("brokerVersion", str(self.version)),
            ("bootTimestamp", str(self.boot_ms)),
            ("runtime", _runtime_text(now - self.boot_ms)),
            ("msgPutTotalTodayNow", str(count)),
            ("msgGetTotalTodayNow", "0"),
            ("putMessageTimesTotal", str(count)),
            ("putMessageSizeTotal", str(size)),
            ("putMessageAverageSize", repr(size / count) if count else "0.0"),
            ("commitLogMinOffset", "0"),
            ("commitLogMaxOffset", str(high)),
            ("earliestMessageTimeStamp", str(earliest)),
            ("commitLogDiskRatio", "0.0"),
            ("consumeQueueDiskRatio", "0.0"),
            ("pageCacheLockTimeMills", "0"),
            ("putTps", _ZERO_RATE),
            ("getTransferedTps" if self.version < V5_0_0 else "getTransferredTps", _ZERO_RATE),
            ("getFoundTps", _ZERO_RATE),
            ("getMissTps", _ZERO_RATE),
            ("getTotalTps", "0.0 0.0 0.0"),
        )
        for pool in ("send", "pull", "query"):
            yield f"{pool}ThreadPoolQueueSize", "0"
            yield f"{pool}ThreadPoolQueueHeadWaitTimeMills", "0"
        if self.version >= V5_0_0:  # 5.x's clusterList prints these too
            yield "brokerActive", "true"
            for figure in ("timerReadBehind", "timerOffsetBehind", "timerCongestNum"):
                yield figure, "0"
            yield from (("timerEnqueueTps", "0.0"), ("timerDequeueTps", "0.0"))

    def _earliest_message_time(self) -> int:
        """``getEarliestMessageTime``. 4.9.4 picks the store time up only when the commit
        log holds ``2 * maxMessageSize`` (8 MiB) past its first record, else -1 (so its
        clusterList shows ~500,000 hours on a young broker); 5.x reads the first record."""
        first = min(self.store.messages(), key=_commit_order, default=None)
        if first is None:
            return -1
        if self.version < V5_0_0 and self.store.commit_log_offset < 2 * MAX_MESSAGE_SIZE:
            return -1
        return first.store_timestamp

    def _view_message(self, request: RemotingCommand) -> RemotingCommand:
        offset = int_field(request, "offset")
        message = self.store.message_at(offset)
        if message is None:
            remark = f"can not find message by the offset, {offset}"
            raise Refused(ResponseCode.SYSTEM_ERROR, remark)
        body = encode_record(pulled_record(message))
        return request.make_response(ResponseCode.SUCCESS, body=body)


def _hash_ordered(
    table: dict[K, V], hash_code: Callable[[K], int], *, capacity: int = 16
) -> list[tuple[K, V]]:
    """``table``'s items in the order a Java ``HashMap`` of them iterates."""
    return [(k, table[k]) for k in java_hash_order(list(table), hash_code, capacity)]


def _commit_order(message: StoredMessage) -> int:
    return message.commit_log_offset


def _system_topic(topic: str) -> str:
    return f"The topic[{topic}] is conflict with system topic."


def _parse_attributes(text: str | None) -> dict[str, str]:
    """5.x ``AttributeParser.parseToMap``: ``+key=value,+key2=value2`` (a ``-key`` deletes)."""
    attributes: dict[str, str] = {}
    for part in (text or "").split(","):
        name, _, value = part.strip().lstrip("+").partition("=")
        if name and not part.strip().startswith("-"):
            attributes[name] = value
    return attributes


def _runtime_text(ms: int) -> str:
    """``[ 0 days, 0 hours, 0 minutes, 46 seconds ]``, as ``BrokerController`` writes it."""
    seconds = max(0, ms) // 1000
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"[ {days} days, {hours} hours, {minutes} minutes, {seconds} seconds ]"
