"""A broker's request processing, as a real 4.9.4 or 5.x broker answers (no I/O: frames
in, frames out). The codes below are answered; any other gets REQUEST_CODE_NOT_SUPPORTED
with the real remark (``not_supported``).

* sends (SEND_MESSAGE 10, SEND_MESSAGE_V2 310, SEND_BATCH_MESSAGE 320): here, through the
  checks of ``AbstractSendMessageProcessor.msgCheck`` (topic name and the message store's
  limits in ``_send_checks.py``; here auto-creation from ``TBW102`` and the queue id
  range), into a :class:`BrokerStore` - a retry's or a dead letter's topic chosen by
  ``_consume_side.py``, a half message held by ``_transactions.py``, a delayed one
  parked in the schedule topic (``_consume_side.py``) or a timed one in the 5.x timer
  (``_timer.py``);
* the consume codes (pull, offsets, search by time, send-back, queue locks, the group's
  members: ``CONSUME_CODES``): ``_consume_side.py``;
* pop, ack, batch ack and change-invisible-time (``POP_CODES``, a 5.x broker only):
  ``_pop.py``; GET_TOPIC_CONFIG (5.x only): ``_pop.py``'s ``topic_config_answer``;
* END_TRANSACTION: ``_transactions.py``; HEART_BEAT and UNREGISTER_CLIENT: ``_clients.py``;
  QUERY_MESSAGE: ``_query.py``; CHECK_CLIENT_CONFIG (a SQL92 filter): ``_filters.py``;
* ``AdminBrokerProcessor``'s (``mqadmin``'s topic, stats, connection, runtime and view-by-id
  requests, GET_MAX_OFFSET) and 5.x's QUERY_ASSIGNMENT / SET_MESSAGE_REQUEST_MODE: ``_admin.py``.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable

from producer._remoting.command import RemotingCommand
from producer._remoting.delay_levels import DelayLevels, parse_delay_levels
from producer._remoting.frame_decoder import decode_payload
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.pop_requests import POP_CODES
from producer._remoting.properties import TIMER_OUT_MS
from producer._remoting.request_codes import (
    POP_BROKER_VERSION,
    TIMER_BROKER_VERSION,
    V4_9_4,
    RequestCode,
)
from producer._remoting.route import TopicRouteData
from producer._remoting.send_header import (
    DEFAULT_REGION,
    HeaderFieldError,
    SendMessageRequestHeader,
    parse_send_request_header,
)
from producer._response_codes import ResponseCode
from producer.testing._acl import AccessControl
from producer.testing._admin import BrokerAdmin
from producer.testing._clients import answer_heartbeat, answer_unregister
from producer.testing._consume_side import CONSUME_CODES, ConsumeSide
from producer.testing._faults import FaultDecision
from producer.testing._filters import check_client_config
from producer.testing._pop import PopSide
from producer.testing._pop_acks import topic_config_answer
from producer.testing._query import answer_query_message
from producer.testing._replies import ReplyPusher
from producer.testing._roles import SLAVE_REFUSED, BrokerRole, slave_refusal
from producer.testing._schedule import SCHEDULE_TOPIC
from producer.testing._send_checks import (
    SendRefusal,
    check_topic_name,
    pending_batch,
    pending_single,
)
from producer.testing._server import Channel, Decider, ServerReply
from producer.testing._store import (
    AUTO_CREATE_TOPIC,
    DEFAULT_TOPIC_QUEUE_NUMS,
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    BrokerStore,
    PendingMessage,
    StoredMessage,
    TopicConfig,
    properties_length,
)
from producer.testing._timer import TIMER_TOPIC, TimerIllegal, TimerWheel, recall_handle
from producer.testing._transaction_config import TransactionConfig, op_batch_interval
from producer.testing._transactions import Transactions

__all__ = ["SEND_CODES", "Broker", "not_supported"]

SEND_CODES = frozenset(
    {RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE}
)
_REMOTING_EXCEPTION = "org.apache.rocketmq.remoting.exception.RemotingCommandException"
_FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
_INJECTED_REMARKS: dict[int, str] = {
    ResponseCode.SYSTEM_BUSY: "[REJECTREQUEST]system busy, start flow control for a while",
}


def not_supported(request: RemotingCommand) -> RemotingCommand:
    """REQUEST_CODE_NOT_SUPPORTED with the remoting layer's remark (golden probe/05)."""
    return request.make_response(
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        remark=f" request type {request.code} not supported",
    )


class Broker:
    """One broker's request handler and state (a :class:`~producer.testing._server.RequestHandler`).

    ``on_topic_created(broker_name, config)`` is called when a send auto-creates a
    topic (or ``mqadmin updateTopic`` creates one), as a real broker then registers with
    the name server; ``route_of(topic)`` is the name server's route (5.x's assignments).
    """

    def __init__(
        self,
        name: str,
        *,
        clock_ms: Callable[[], int],
        rng: random.Random,
        cluster_name: str = "DefaultCluster",
        auto_create_topic: bool = True,
        on_topic_created: Callable[[str, TopicConfig], None] | None = None,
        region: str = DEFAULT_REGION,
        access: AccessControl | None = None,
        delay_levels: DelayLevels | None = None,
        hold_check_ms: float | None = None,
        version: int = V4_9_4,
        transactions: TransactionConfig | None = None,
        property_filter: bool = False,
        route_of: Callable[[str], TopicRouteData | None] = lambda _: None,
    ) -> None:
        self.name = name
        self.version = version  # MQVersion ordinal, in every answer
        self._clock_ms = clock_ms
        self.timer = TimerWheel() if version >= TIMER_BROKER_VERSION else None
        self.access = access
        self.cluster_name = cluster_name
        self.auto_create_topic = auto_create_topic
        self.region = region
        self.store = BrokerStore(name, clock_ms=clock_ms)
        # master or slave (``_roles.py``, ``_replication.py``)
        self.role = BrokerRole(five=version >= TIMER_BROKER_VERSION)
        config = transactions or TransactionConfig()
        self.transactions = Transactions(
            self.store,
            clock_ms=clock_ms,
            config=config,
            op_batch_interval_ms=op_batch_interval(config, version),
        )
        self._rng = rng
        self._on_topic_created = on_topic_created
        self.replies = ReplyPusher(
            self.store,
            self.transactions.producers,
            clock_ms=clock_ms,
            put=lambda topic, queue_id, pending: self.put(
                topic, queue_id, pending, may_delay=False
            ),
        )
        self.replies.version = version
        self.consume = ConsumeSide(
            self.store,
            broker_name=name,
            clock_ms=clock_ms,
            rng=random.Random(rng.random()),
            delay_levels=delay_levels or parse_delay_levels(),
            create_topic=self._topic_created,
            put=self.put,
            hold_check_ms=hold_check_ms,
            version=version,
            property_filter=property_filter,
        )
        self.consume.role = self.role
        self.pop = (
            PopSide(
                self.store,
                broker_name=name,
                clock_ms=clock_ms,
                rng=random.Random(rng.random()),
                put=self.put,
                create_topic=self._topic_created,
                version=version,
            )
            if version >= POP_BROKER_VERSION
            else None
        )
        self.admin = BrokerAdmin(
            self.store,
            self.consume,
            broker_name=name,
            cluster_name=cluster_name,
            version=version,
            clock_ms=clock_ms,
            registered=self._topic_created,
            route_of=route_of,
            pop=self.pop,
        )
        if auto_create_topic:
            self.store.put_topic(
                TopicConfig(
                    AUTO_CREATE_TOPIC,
                    DEFAULT_TOPIC_QUEUE_NUMS,
                    DEFAULT_TOPIC_QUEUE_NUMS,
                    PERM_READ | PERM_WRITE | PERM_INHERIT,
                )
            )

    def __repr__(self) -> str:
        return f"Broker({self.name}, auto_create_topic={self.auto_create_topic}, {self.store!r})"

    def tick(self) -> None:
        """Deliver what fell due (timer, delay levels), time out held pulls; a slave only
        times out held pulls (its copies are delivered and checked by its master)."""
        if self.role.slave:
            self.consume.tick()
            return
        if self.timer is not None:
            self.timer.deliver_due(self._clock_ms(), self.store, self.put)
        self.consume.tick()
        self.transactions.tick()
        if self.pop is not None:
            self.pop.tick()

    def set_store_host(self, host: str, port: int) -> None:
        self.store.set_store_host(host, port)

    def channel_closed(self, channel: Channel) -> None:
        self.consume.channel_closed(channel)
        if self.pop is not None:
            self.pop.channel_closed(channel)
        self.transactions.producers.channel_closed(channel)

    # -- RequestHandler ------------------------------------------------------------------

    def handle(self, payload: bytes, decider: Decider, channel: Channel) -> ServerReply | None:
        request = decode_payload(payload)
        if request.is_response:
            return None
        remark = None if self.access is None else self.access.refusal(request)
        if remark is not None:  # checked first, as the broker's ACL hook runs first
            refused = request.make_response(ResponseCode.SYSTEM_ERROR, remark=remark)
            return None if request.is_oneway else ServerReply(encode_frame(refused))
        if self.role.slave and request.code in SLAVE_REFUSED:
            decision = decider(request.code in SEND_CODES)
            response: RemotingCommand | None = slave_refusal(request, self.region)
        elif request.code in SEND_CODES:
            decision = decider(True)
            response = self.process_send(request, decision, channel.peer)
        elif request.code == RequestCode.SEND_REPLY_MESSAGE_V2:
            decision = decider(True)
            response = self.process_reply(request, channel.peer)
        elif request.code == RequestCode.PULL_MESSAGE and self.role.rejects_pull():
            decision = decider(False)
            remark = _INJECTED_REMARKS[ResponseCode.SYSTEM_BUSY]
            response = request.make_response(ResponseCode.SYSTEM_BUSY, remark=remark)
        elif request.code in CONSUME_CODES:
            decision = decider(False)
            response = self.consume.process(request, channel)
        elif request.code in POP_CODES and self.pop is not None:  # a 5.x broker
            decision = decider(False)
            response = self.pop.process(request, channel)
        elif request.code in self.admin.codes:
            decision = decider(False)
            response = self.admin.process(request)
        else:
            decision = decider(False)
            response = self.process_other(request, channel)
        if request.is_oneway or response is None:
            return None
        response.version = self.version
        return ServerReply(encode_frame(response), decision.delay)

    def process_other(self, request: RemotingCommand, channel: Channel) -> RemotingCommand | None:
        code = request.code
        if code == RequestCode.END_TRANSACTION:
            return self.transactions.end(request)
        if code == RequestCode.HEART_BEAT:
            return answer_heartbeat(request, channel, self.transactions.producers, self.consume)
        if code == RequestCode.UNREGISTER_CLIENT:
            return answer_unregister(request, self.transactions.producers, self.consume)
        if code == RequestCode.QUERY_MESSAGE:
            return answer_query_message(self.store, request)
        if code == RequestCode.GET_TOPIC_CONFIG and self.pop is not None:  # 5.x only
            return topic_config_answer(request, self.store)
        if code == RequestCode.CHECK_CLIENT_CONFIG:
            return check_client_config(request, self.consume.property_filter)
        return not_supported(request)

    # -- sends ---------------------------------------------------------------------------

    def process_send(
        self, request: RemotingCommand, decision: FaultDecision, peer: str
    ) -> RemotingCommand:
        try:
            header = parse_send_request_header(request)
        except HeaderFieldError as exc:
            return _system_error(request, f"{_REMOTING_EXCEPTION}: {exc}")
        trace = {"MSG_REGION": self.region, "TRACE_ON": "true"}
        if decision.error_code is not None:
            remark = _INJECTED_REMARKS.get(
                decision.error_code, f"[dev cluster] injected error {decision.error_code}"
            )
            return request.make_response(decision.error_code, ext_fields=trace, remark=remark)
        try:
            config = self._check(header, peer)
            queue_id = self._queue_id(header, config)
            pending = self._pending(header, request.body, peer)
        except SendRefusal as refusal:
            return request.make_response(refusal.code, ext_fields=trace, remark=refusal.remark)
        if header.batch:
            stored = self.store.append(header.topic, queue_id, pending)
        else:
            target = self.consume.retry_send_target(
                header.topic, header.reconsume_times, header.max_reconsume_times, request.version
            )
            topic, put_queue = (header.topic, queue_id) if target is None else target
            half = self.transactions.prepare(header.properties, topic, put_queue, pending[0])
            try:
                stored = [
                    half
                    or self.put(topic, put_queue, pending[0], may_delay=True, sized_as=header.topic)
                ]
            except TimerIllegal as illegal:
                code = ResponseCode.MESSAGE_ILLEGAL
                return request.make_response(code, ext_fields=trace, remark=str(illegal))
        return request.make_response(
            decision.store_status or ResponseCode.SUCCESS,
            ext_fields={
                **_send_fields(stored, queue_id),
                **trace,
                **({} if header.batch else recall_handle(stored[0], self.name)),
            },
        )

    def process_reply(self, request: RemotingCommand, peer: str) -> RemotingCommand:
        """SEND_REPLY_MESSAGE_V2: ``msgCheck``, then push and store (``_replies.py``)."""
        try:
            header = parse_send_request_header(request)
        except HeaderFieldError as exc:
            return _system_error(request, f"{_REMOTING_EXCEPTION}: {exc}")
        trace = {"MSG_REGION": self.region, "TRACE_ON": "true"}
        try:
            queue_id = self._queue_id(header, self._check(header, peer))
        except SendRefusal as refusal:
            return request.make_response(refusal.code, ext_fields=trace, remark=refusal.remark)
        return self.replies.process(request, header, queue_id, peer, trace)

    def _check(self, header: SendMessageRequestHeader, peer: str) -> TopicConfig:
        """``msgCheck``: topic name, topic config (auto-created if allowed), queue id."""
        topic = header.topic
        check_topic_name(topic)
        config = self.store.topic(topic) or self._auto_create(header)
        if config is None:
            raise SendRefusal(
                ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!{_FAQ}"
            )
        if header.queue_id >= config.queue_id_limit:
            raise SendRefusal(
                ResponseCode.SYSTEM_ERROR,
                f"request queueId[{header.queue_id}] is illegal, {config.describe()} "
                f"Producer: {peer}",
            )
        return config

    def put(
        self,
        topic: str,
        queue_id: int,
        pending: PendingMessage,
        *,
        may_delay: bool,
        sized_as: str | None = None,
    ) -> StoredMessage:
        """Store one message; with ``DELAY`` (and ``may_delay``) it waits in the schedule topic.

        ``pending.size`` was measured under ``sized_as`` (default ``topic``); a record stored
        under another topic, or with the schedule's ``REAL_*`` properties added, is resized
        so the commit-log offsets that follow are the real broker's.
        """
        measured = sized_as or topic
        grown = 0
        if may_delay:
            before = properties_length(pending.properties)
            if self.timer is not None:  # a 5.x broker: HookUtils.handleScheduleMessage
                topic, queue_id = self.timer.divert(topic, queue_id, pending, self._clock_ms())
            topic, queue_id = self.consume.put_target(topic, queue_id, pending)
            if topic in (SCHEDULE_TOPIC, TIMER_TOPIC):
                grown = properties_length(pending.properties) - before
        grown += len(topic.encode()) - len(measured.encode())
        if grown:
            pending = dataclasses.replace(pending, size=pending.size + grown)
        stored = self.store.append(topic, queue_id, [pending])[0]
        if topic == SCHEDULE_TOPIC:
            self.consume.scheduled(stored)
        elif topic == TIMER_TOPIC and self.timer is not None:
            self.timer.scheduled(int(stored.properties[TIMER_OUT_MS]), stored.commit_log_offset)
        return stored

    def _topic_created(self, config: TopicConfig) -> None:
        if self._on_topic_created is not None:
            self._on_topic_created(self.name, config)

    def _auto_create(self, header: SendMessageRequestHeader) -> TopicConfig | None:
        """``createTopicInSendMessageMethod``: inherit from the default topic if it allows."""
        default = self.store.topic(header.default_topic)
        if default is None:
            return None
        perm = default.perm
        if header.default_topic == AUTO_CREATE_TOPIC and not self.auto_create_topic:
            perm = PERM_READ | PERM_WRITE
        if not perm & PERM_INHERIT:
            return None
        queues = max(0, min(header.default_topic_queue_nums, default.write_queue_nums))
        config = TopicConfig(header.topic, queues, queues, perm & ~PERM_INHERIT)
        self.store.put_topic(config)
        if self._on_topic_created is not None:
            self._on_topic_created(self.name, config)
        return config

    def _queue_id(self, header: SendMessageRequestHeader, config: TopicConfig) -> int:
        if header.queue_id >= 0:
            return header.queue_id
        if config.write_queue_nums <= 0:
            raise SendRefusal(ResponseCode.SYSTEM_ERROR, "java.lang.ArithmeticException: / by zero")
        return self._rng.randrange(config.write_queue_nums)

    def _pending(
        self, header: SendMessageRequestHeader, body: bytes, peer: str
    ) -> list[PendingMessage]:
        if header.batch:
            return pending_batch(header, body, peer, self.cluster_name)
        return [pending_single(header, body, peer, self.cluster_name)]

    # -- other requests ------------------------------------------------------------------


def _send_fields(stored: list[StoredMessage], queue_id: int) -> dict[str, str]:
    return {
        "msgId": ",".join(message.offset_msg_id for message in stored),
        "queueId": str(queue_id),
        "queueOffset": str(stored[0].queue_offset),
    }


def _system_error(request: RemotingCommand, remark: str) -> RemotingCommand:
    return request.make_response(ResponseCode.SYSTEM_ERROR, remark=remark)
