"""A broker's consumer side, as 4.9.4 answers it (docs/consuming.md 1 and 3; no I/O).

Requests: PULL_MESSAGE (checks in the broker's order, tag-hash filtering, long polling,
offsets piggy-backed on pulls), QUERY/UPDATE_CONSUMER_OFFSET and GET_ALL_CONSUMER_OFFSET
(per broker version, :mod:`~producer.testing._offset_answers`), GET_MIN_OFFSET,
GET_EARLIEST_MSG_STORETIME,
SEARCH_OFFSET_BY_TIMESTAMP, GET_CONSUMER_LIST_BY_GROUP, CONSUMER_SEND_MSG_BACK,
LOCK/UNLOCK_BATCH_MQ. Heartbeats, membership and NOTIFY_CONSUMER_IDS_CHANGED are
:mod:`~producer.testing._consumer_members`'s.
Puts with ``DELAY`` go through :class:`~producer.testing._schedule.DelaySchedule`.

The shell calls :meth:`ConsumeSide.tick` periodically: due delayed messages are
delivered, held pulls past their deadline answered, silent consumers expired.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import NamedTuple

from latency_fault import java_string_hash
from producer._remoting.command import RemotingCommand
from producer._remoting.consumer_requests import FLAG_COMMIT_OFFSET, FLAG_SUBSCRIPTION, FLAG_SUSPEND
from producer._remoting.delay_levels import DelayLevels, send_back_level
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.properties import (
    DELAY,
    ORIGIN_MESSAGE_ID,
    REAL_QUEUE_ID,
    REAL_TOPIC,
    RETRY_TOPIC,
    WAIT,
)
from producer._remoting.request_codes import V4_9_4, RequestCode
from producer._remoting.retry_topics import (
    RETRY_PREFIX,
    dlq_topic,
    is_dead_letter,
    max_reconsume_times,
    retry_topic,
)
from producer._remoting.sql92_nodes import Node
from producer._remoting.store_record import encode_record
from producer._remoting.subscription import Subscription, tag_subscription
from producer._response_codes import ResponseCode
from producer.testing._consume_fields import (
    QUEUE_QUERIES,
    Refused,
    get_messages,
    group_queue,
    int_field,
    int_or_zero,
    lock_answer,
    need,
    pending_copy,
    pulled_record,
    queue_query,
)
from producer.testing._consumer_members import ConsumerMembers
from producer.testing._filters import (
    ConsumerFilters,
    check_property_filter,
    is_tag_type,
    pull_own_filter,
)
from producer.testing._groups import (
    ConsumerOffsets,
    ConsumerRegistry,
    LockTable,
)
from producer.testing._held_pulls import HeldPull, HeldPulls
from producer.testing._offset_answers import all_offsets_answer, query_offset_answer
from producer.testing._roles import BrokerRole
from producer.testing._schedule import SCHEDULE_TOPIC, DelaySchedule
from producer.testing._server import Channel
from producer.testing._store import (
    PERM_READ,
    PERM_WRITE,
    BrokerStore,
    PendingMessage,
    Put,
    StoredMessage,
    TopicConfig,
)

__all__ = ["CONSUME_CODES", "ConsumeSide", "PutTarget"]

CONSUME_CODES = frozenset(
    {
        RequestCode.PULL_MESSAGE,
        RequestCode.QUERY_CONSUMER_OFFSET,
        RequestCode.UPDATE_CONSUMER_OFFSET,
        RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
        RequestCode.GET_MIN_OFFSET,
        RequestCode.GET_EARLIEST_MSG_STORETIME,
        RequestCode.GET_CONSUMER_LIST_BY_GROUP,
        RequestCode.CONSUMER_SEND_MSG_BACK,
        RequestCode.LOCK_BATCH_MQ,
        RequestCode.UNLOCK_BATCH_MQ,
        RequestCode.GET_ALL_CONSUMER_OFFSET,
    }
)
# Handlers that answer with createResponseCommand(null): no ext fields even when refusing.
_NO_RESPONSE_HEADER = frozenset(
    {RequestCode.CONSUMER_SEND_MSG_BACK, RequestCode.LOCK_BATCH_MQ, RequestCode.UNLOCK_BATCH_MQ}
)
_REMOTING_EXCEPTION = "org.apache.rocketmq.remoting.exception.RemotingCommandException"
_FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."


class PutTarget(NamedTuple):
    topic: str
    queue_id: int


class ConsumeSide:
    """One broker's consumer-facing state and request processing."""

    def __init__(
        self,
        store: BrokerStore,
        *,
        broker_name: str,
        clock_ms: Callable[[], int],
        rng: random.Random,
        delay_levels: DelayLevels,
        create_topic: Callable[[TopicConfig], None],
        put: Put,
        hold_check_ms: float | None = None,
        version: int = V4_9_4,
        property_filter: bool = False,
    ) -> None:
        self.store = store
        self.version = version  # which broker's answers (MQVersion ordinal)
        self.property_filter = property_filter  # enablePropertyFilter
        self.filters = ConsumerFilters()
        self.role = BrokerRole()  # the broker's, shared (a slave answers pulls its own way)
        self.served = 0  # messages answered to pulls (how a failover test sees a slave read)
        self.broker_name = broker_name
        self.registry = ConsumerRegistry()
        self.members = ConsumerMembers(self.registry, self.filters, clock_ms, self._ensure_topic)
        self.locks = LockTable()
        self.offsets = ConsumerOffsets()
        self.schedule = DelaySchedule(delay_levels)
        self._clock_ms = clock_ms
        self.now_ms = clock_ms
        self._rng = rng
        self._create_topic = create_topic
        self._put = put
        self._held = HeldPulls(start_ms=clock_ms(), check_ms=hold_check_ms)
        store.put_topic(TopicConfig(SCHEDULE_TOPIC, 18, 18, PERM_READ | PERM_WRITE))
        store.on_append = self._wake

    def __repr__(self) -> str:
        return f"ConsumeSide({self.registry!r}, held_pulls={len(self._held)}, {self.schedule!r})"

    # -- dispatch ------------------------------------------------------------------------

    def held_pulls(self) -> dict[str, dict[int, list[int]]]:
        """The offsets the pulls held now ask for: ``{topic: {queue_id: [offset, ...]}}``."""
        return self._held.snapshot()

    def process(self, request: RemotingCommand, channel: Channel) -> RemotingCommand | None:
        """The answer to a consumer request, or ``None`` for a pull held for long polling."""
        try:
            return self._dispatch(request, channel)
        except Refused as refused:
            # A refusal carries the handler's empty response header, if it has one.
            fields: dict[str, str] | None = None if request.code in _NO_RESPONSE_HEADER else {}
            return request.make_response(refused.code, remark=refused.remark, ext_fields=fields)

    def _dispatch(self, request: RemotingCommand, channel: Channel) -> RemotingCommand | None:
        code = request.code
        if code == RequestCode.PULL_MESSAGE:
            return self._pull(request, channel, allow_suspend=True)
        if code == RequestCode.QUERY_CONSUMER_OFFSET:
            return query_offset_answer(request, self.offsets, self.store, self.version)
        if code == RequestCode.GET_ALL_CONSUMER_OFFSET:
            return all_offsets_answer(request, self.offsets)
        if code == RequestCode.UPDATE_CONSUMER_OFFSET:
            group, topic, queue_id = group_queue(request)
            self.offsets.commit(group, topic, queue_id, int_field(request, "commitOffset"))
            return request.make_response(ResponseCode.SUCCESS, ext_fields={})
        if code in QUEUE_QUERIES:
            return queue_query(request, self.store)
        if code == RequestCode.GET_CONSUMER_LIST_BY_GROUP:
            return self.members.consumer_list(request)
        if code == RequestCode.CONSUMER_SEND_MSG_BACK:
            return self._send_back(request)
        return lock_answer(request, self.locks, self._clock_ms())

    # -- membership ----------------------------------------------------------------------

    def channel_closed(self, channel: Channel) -> None:
        """A closed connection's members leave their groups and its held pulls go."""
        self.members.drop_channel(channel)
        self._held.drop_channel(channel)

    # -- pulls ---------------------------------------------------------------------------

    def _pull(
        self, request: RemotingCommand, channel: Channel, *, allow_suspend: bool
    ) -> RemotingCommand | None:
        group, topic, queue_id = group_queue(request)
        offset = int_field(request, "queueOffset")
        max_count = max(1, int_field(request, "maxMsgNums"))
        sys_flag = int_field(request, "sysFlag")
        self._pull_checks(group, topic, queue_id, channel.peer)
        subscription, sql = self._pull_subscription(request, group, topic, sys_flag)
        check_property_filter(subscription.expression_type, self.property_filter)
        code, status, next_offset, found = get_messages(
            self.store, topic, queue_id, offset, max_count, subscription, sql
        )
        if allow_suspend and sys_flag & FLAG_COMMIT_OFFSET and self.role.stores_pulled_offset():
            self.offsets.commit(group, topic, queue_id, int_field(request, "commitOffset"))
        behind = self._behind(topic, queue_id, offset, next_offset)
        code, next_offset, suggest = self.role.pull_answer(code, next_offset, offset, behind)
        if code == ResponseCode.PULL_NOT_FOUND and allow_suspend and sys_flag & FLAG_SUSPEND:
            timeout = int_field(request, "suspendTimeoutMillis")
            held = HeldPull(request, channel, self._clock_ms() + timeout)
            self._held.hold(topic, queue_id, held)
            return None
        fields = {
            "suggestWhichBrokerId": str(suggest),
            "nextBeginOffset": str(next_offset),
            "minOffset": str(self.store.min_offset(topic, queue_id)),
            "maxOffset": str(self.store.max_offset(topic, queue_id)),
        }
        body = b"".join(encode_record(pulled_record(m)) for m in found)
        self.served += len(found) if code == ResponseCode.SUCCESS else 0
        return request.make_response(code, ext_fields=fields, body=body, remark=status)

    def _behind(self, topic: str, queue_id: int, offset: int, next_offset: int) -> int | None:
        """How far the last consume-queue entry a pull read lies behind the commit log's end
        (``maxOffsetPy - maxPhyOffsetPulling``); ``None`` when it read none."""
        if next_offset <= offset:
            return None
        last = self.store.read(topic, queue_id, next_offset - 1, 1)
        return self.store.commit_log_offset - last[0].commit_log_offset if last else None

    def _pull_checks(self, group: str, topic: str, queue_id: int, peer: str) -> None:
        config = self.registry.group(group)
        assert config is not None  # auto-created, as autoCreateSubscriptionGroup=true
        if not config.consume_enable:
            raise Refused(ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}")
        topic_config = self.store.topic(topic)
        if topic_config is None:
            raise Refused(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{topic}] not exist, apply first please! {_FAQ}",
            )
        if not topic_config.perm & PERM_READ:
            raise Refused(
                ResponseCode.NO_PERMISSION, f"the topic[{topic}] pulling message is forbidden"
            )
        if not 0 <= queue_id < topic_config.read_queue_nums:
            raise Refused(
                ResponseCode.SYSTEM_ERROR,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] "
                f"topicConfig.readQueueNums:[{topic_config.read_queue_nums}] consumer:[/{peer}]",
            )

    def _pull_subscription(
        self, request: RemotingCommand, group: str, topic: str, sys_flag: int
    ) -> tuple[Subscription, Node | None]:
        """The pull's subscription and SQL92 filter, as ``PullMessageProcessor`` finds
        them: the pull's own, or the group's registered one (docs/consuming.md 1.5, 6)."""
        if sys_flag & FLAG_SUBSCRIPTION:
            kind, text = request.field("expressionType"), request.field("subscription")
            if is_tag_type(kind):
                return tag_subscription(topic, text, java_string_hash), None
            sql = pull_own_filter(text, kind)
            return Subscription(topic, text or "", (), (), kind or ""), sql
        if not self.registry.is_registered(group):
            raise Refused(
                ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's group info not exist{_FAQ}"
            )
        found = self.registry.subscription(group, topic)
        if found is None:
            raise Refused(
                ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's subscription not exist{_FAQ}"
            )
        version = int_field(request, "subVersion")
        if found[1] < version:
            raise Refused(
                ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest"
            )
        return found[0], self.filters.for_registered(found[0], group, version)

    def _wake(self, topic: str, queue_id: int) -> None:
        """A message arrived: re-run the pulls held on its queue (no suspend this time),
        except a SQL92 pull whose filter does not accept it: ``notifyMessageArriving``
        keeps that one held (golden d_sql92 #61 -> #70, #76 -> #125)."""
        arrived = self.store.read(topic, queue_id, self.store.max_offset(topic, queue_id) - 1, 1)
        for pull in self._held.take(topic, queue_id):
            if arrived and not self._accepts(pull, arrived[0]):
                self._held.hold(topic, queue_id, pull)
                continue
            self._answer_held(pull)

    def _accepts(self, pull: HeldPull, message: StoredMessage) -> bool:
        request = pull.request
        try:
            group, topic, _ = group_queue(request)
            sub, sql = self._pull_subscription(request, group, topic, int_field(request, "sysFlag"))
        except Refused:
            return True  # re-run: it answers the refusal
        return not sub.is_sql or sql is None or sql.matches(message.properties)

    def _answer_held(self, pull: HeldPull) -> None:
        if not pull.channel.is_open:
            return
        response = self._rerun(pull)
        if response is not None:
            pull.channel.write(encode_frame(response))

    def _rerun(self, pull: HeldPull) -> RemotingCommand | None:
        try:
            return self._pull(pull.request, pull.channel, allow_suspend=False)
        except Refused as refused:
            return pull.request.make_response(refused.code, remark=refused.remark)

    # -- time ----------------------------------------------------------------------------

    def tick(self) -> None:
        """Deliver due delayed messages, answer expired held pulls, expire silent members."""
        now = self._clock_ms()
        for commit_offset in self.schedule.due(now):
            self._deliver(commit_offset)
        for pull in self._held.timed_out(now):
            self._answer_held(pull)
        self.members.expire(now)

    # -- delayed puts --------------------------------------------------------------------

    def put_target(self, topic: str, queue_id: int, pending: PendingMessage) -> PutTarget:
        """Where a put really goes: ``DELAY`` > 0 diverts it to the schedule topic
        (``REAL_TOPIC``/``REAL_QID`` added, as ``CommitLog.asyncPutMessage`` does)."""
        level = int_or_zero(pending.properties.get(DELAY))
        if level <= 0 or topic == SCHEDULE_TOPIC:
            return PutTarget(topic, queue_id)
        level = self.schedule.levels.clamp(level)
        props = pending.properties
        assert isinstance(props, dict)
        props[REAL_TOPIC] = topic
        props[REAL_QUEUE_ID] = str(queue_id)
        return PutTarget(SCHEDULE_TOPIC, level - 1)

    def scheduled(self, stored: StoredMessage) -> None:
        """Record a message just stored in the schedule topic."""
        level = stored.queue_id + 1
        self.schedule.add(level, stored.commit_log_offset, stored.store_timestamp)

    def _deliver(self, commit_offset: int) -> None:
        """``messageTimeup``: put the real message; its properties keep ``DELAY`` and
        ``REAL_*`` (the string is built before DELAY is cleared, docs/consuming.md 3.3)."""
        message = self.store.message_at(commit_offset)
        if message is None:
            return
        props = dict(message.properties)
        topic = props.get(REAL_TOPIC, message.topic)
        queue_id = int_or_zero(props.get(REAL_QUEUE_ID))
        copy = pending_copy(message, topic, props, message.reconsume_times)
        self._put(topic, queue_id, copy, may_delay=False)

    # -- send-back -----------------------------------------------------------------------

    def _send_back(self, request: RemotingCommand) -> RemotingCommand:
        """``asyncConsumerSendMsgBack``: to ``%RETRY%<group>`` after a delay, or the DLQ."""
        group_name = need(request, "group")
        commit_offset = int_field(request, "offset")
        delay_level = int_field(request, "delayLevel")
        group = self.registry.group(group_name)
        assert group is not None
        if group.retry_queue_nums <= 0:
            return request.make_response(ResponseCode.SUCCESS)  # dropped, as 4.9.4 does
        retry = retry_topic(group_name)
        self._ensure_topic(retry, group.retry_queue_nums)
        message = self.store.message_at(commit_offset)
        if message is None:
            raise Refused(
                ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {commit_offset}"
            )
        props = dict(message.properties)
        props.setdefault(RETRY_TOPIC, message.topic)
        props[WAIT] = "false"
        header_max = request.field("maxReconsumeTimes")
        requested = None if header_max is None else int(header_max)
        max_times = max_reconsume_times(group.retry_max_times, requested, request.version)
        if is_dead_letter(message.reconsume_times, max_times, delay_level):
            topic, queue_id = dlq_topic(group_name), 0
            self._ensure_topic(topic, 1)
            props[DELAY] = "0"
        else:
            topic = retry
            queue_id = self._rng.randrange(group.retry_queue_nums)
            props[DELAY] = str(send_back_level(delay_level, message.reconsume_times))
        props.setdefault(ORIGIN_MESSAGE_ID, message.offset_msg_id)
        pending = pending_copy(message, topic, props, message.reconsume_times + 1)
        self._put(topic, queue_id, pending, may_delay=True)
        return request.make_response(ResponseCode.SUCCESS)

    def retry_send_target(
        self, topic: str, reconsume_times: int, max_reconsume: int | None, version: int
    ) -> PutTarget | None:
        """``handleRetryAndDLQ`` for a SEND_MESSAGE_V2 to ``%RETRY%<group>``: the DLQ
        once ``reconsume_times`` reaches the maximum, else ``None`` (store as sent)."""
        if not topic.startswith(RETRY_PREFIX):
            return None
        group = self.registry.group(topic[len(RETRY_PREFIX) :])
        assert group is not None
        max_times = max_reconsume_times(group.retry_max_times, max_reconsume, version)
        if not is_dead_letter(reconsume_times, max_times):
            return None
        dlq = dlq_topic(group.name)
        self._ensure_topic(dlq, 1)
        return PutTarget(dlq, 0)

    def _ensure_topic(self, name: str, queues: int) -> None:
        if self.store.topic(name) is None:
            config = TopicConfig(name, queues, queues, PERM_READ | PERM_WRITE)
            self.store.put_topic(config)
            self._create_topic(config)

    # -- orderly locks -------------------------------------------------------------------
