"""A broker's request processing, as a 4.9.4 broker answers (no I/O: frames in, frames out).

Sends (SEND_MESSAGE 10, SEND_MESSAGE_V2 310, SEND_BATCH_MESSAGE 320) go through the
checks of ``AbstractSendMessageProcessor.msgCheck`` (topic name, auto-creation from
``TBW102``, queue id range) and of the message store (properties and message size),
then into a :class:`BrokerStore`. HEART_BEAT, UNREGISTER_CLIENT and GET_MAX_OFFSET are
answered; any other code gets REQUEST_CODE_NOT_SUPPORTED with the real remark.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Callable

from producer._remoting.codes import TIMER_BROKER_VERSION, V4_9_4, RequestCode, ResponseCode
from producer._remoting.command import RemotingCommand
from producer._remoting.delay_levels import DelayLevels, parse_delay_levels
from producer._remoting.frame import decode_payload, encode_frame
from producer._remoting.message_codec import decode_batch, decompress_body, is_compressed
from producer._remoting.properties import (
    CLUSTER,
    DELAY,
    TIMER_OUT_MS,
    WAIT,
    decode_properties,
    encode_properties,
)
from producer._remoting.send_header import (
    DEFAULT_REGION,
    HeaderFieldError,
    SendMessageRequestHeader,
    parse_send_request_header,
)
from producer.errors import ProducerError, RemoteProtocolError
from producer.testing._acl import AccessControl
from producer.testing._clients import answer_heartbeat, answer_unregister
from producer.testing._consume_side import CONSUME_CODES, ConsumeSide
from producer.testing._faults import FaultDecision
from producer.testing._schedule import SCHEDULE_TOPIC
from producer.testing._server import Channel, Decider, Reply
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
    stored_size,
)
from producer.testing._timer import TIMER_TOPIC, TimerIllegal, TimerWheel, recall_handle
from producer.testing._transactions import TransactionConfig, Transactions

__all__ = ["MAX_MESSAGE_SIZE", "SEND_CODES", "Broker", "not_supported"]

MAX_MESSAGE_SIZE = 4 * 1024 * 1024  # MessageStoreConfig.maxMessageSize
MAX_PROPERTIES_CHARS = 32767  # Short.MAX_VALUE
MAX_TOPIC_LENGTH = 127
SEND_CODES = frozenset(
    {RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE}
)
_TRANSACTION_TYPE_MASK = 0x3 << 2
_VALID_TOPIC = re.compile(r"[%|a-zA-Z0-9_-]+")
_NOT_ALLOWED_SEND_TOPICS = frozenset(
    {
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
    }
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


def _illegal_remark() -> str:
    return (
        "the message is illegal, maybe msg body or properties length not matched. "
        f"msg body length limit {MAX_MESSAGE_SIZE}B, msg properties length limit 32KB."
    )


class _Refusal(Exception):
    """A send refused by a check; carries the response code and remark."""

    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


class Broker:
    """One broker's request handler and state (a :class:`~producer.testing._server.RequestHandler`).

    ``on_topic_created(broker_name, config)`` is called when a send auto-creates a
    topic, as a real broker then registers with the name server.
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
        self.transactions = Transactions(
            self.store, clock_ms=clock_ms, config=transactions or TransactionConfig()
        )
        self._rng = rng
        self._on_topic_created = on_topic_created
        self.consume = ConsumeSide(
            self.store,
            broker_name=name,
            clock_ms=clock_ms,
            rng=random.Random(rng.random()),
            delay_levels=delay_levels or parse_delay_levels(),
            create_topic=self._topic_created,
            put=self.put,
            hold_check_ms=hold_check_ms,
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
        """Deliver what fell due (timer, delay levels), time out held pulls."""
        if self.timer is not None:
            self.timer.deliver_due(self._clock_ms(), self.store, self.put)
        self.consume.tick()
        self.transactions.tick()

    def set_store_host(self, host: str, port: int) -> None:
        self.store.set_store_host(host, port)

    def channel_closed(self, channel: Channel) -> None:
        self.consume.channel_closed(channel)
        self.transactions.producers.channel_closed(channel)

    # -- RequestHandler ------------------------------------------------------------------

    def handle(self, payload: bytes, decider: Decider, channel: Channel) -> Reply | None:
        request = decode_payload(payload)
        if request.is_response:
            return None
        remark = None if self.access is None else self.access.refusal(request)
        if remark is not None:  # checked first, as the broker's ACL hook runs first
            refused = request.make_response(ResponseCode.SYSTEM_ERROR, remark=remark)
            return None if request.is_oneway else Reply(encode_frame(refused))
        if request.code in SEND_CODES:
            decision = decider(True)
            response: RemotingCommand | None = self.process_send(request, decision, channel.peer)
        elif request.code in CONSUME_CODES:
            decision = decider(False)
            response = self.consume.process(request, channel)
        else:
            decision = decider(False)
            response = self.process_other(request, channel)
        if request.is_oneway or response is None:
            return None
        response.version = self.version
        return Reply(encode_frame(response), decision.delay)

    def process_other(self, request: RemotingCommand, channel: Channel) -> RemotingCommand | None:
        code = request.code
        if code == RequestCode.END_TRANSACTION:
            return self.transactions.end(request)
        if code == RequestCode.HEART_BEAT:
            return answer_heartbeat(request, channel, self.transactions.producers, self.consume)
        if code == RequestCode.UNREGISTER_CLIENT:
            return answer_unregister(request, self.transactions.producers, self.consume)
        if code == RequestCode.GET_MAX_OFFSET:
            return self._max_offset(request)
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
        except _Refusal as refusal:
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
                    half or self.put(topic, put_queue, pending[0], True, sized_as=header.topic)
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

    def _check(self, header: SendMessageRequestHeader, peer: str) -> TopicConfig:
        """``msgCheck``: topic name, topic config (auto-created if allowed), queue id."""
        topic = header.topic
        if not topic.strip():
            raise _Refusal(ResponseCode.SYSTEM_ERROR, "The specified topic is blank.")
        if not _VALID_TOPIC.fullmatch(topic):
            raise _Refusal(
                ResponseCode.SYSTEM_ERROR,
                "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
            )
        if len(topic) > MAX_TOPIC_LENGTH:
            raise _Refusal(
                ResponseCode.SYSTEM_ERROR, "The specified topic is longer than topic max length."
            )
        if topic in _NOT_ALLOWED_SEND_TOPICS:
            raise _Refusal(
                ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden."
            )
        config = self.store.topic(topic) or self._auto_create(header)
        if config is None:
            raise _Refusal(
                ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!{_FAQ}"
            )
        if header.queue_id >= config.queue_id_limit:
            raise _Refusal(
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
        may_delay: bool,
        *,
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
            raise _Refusal(ResponseCode.SYSTEM_ERROR, "java.lang.ArithmeticException: / by zero")
        return self._rng.randrange(config.write_queue_nums)

    def _pending(
        self, header: SendMessageRequestHeader, body: bytes, peer: str
    ) -> list[PendingMessage]:
        if header.batch:
            return self._pending_batch(header, body, peer)
        props = decode_properties(header.properties or "")
        props.pop(WAIT, None)  # the broker drops it to save 9 bytes (4.9.4)
        props[CLUSTER] = self.cluster_name
        props_text = encode_properties(props)
        if len(props_text) > MAX_PROPERTIES_CHARS:
            raise _Refusal(ResponseCode.MESSAGE_ILLEGAL, _illegal_remark())
        size = stored_size(len(body), len(header.topic.encode()), len(props_text.encode()))
        if size > MAX_MESSAGE_SIZE:
            raise _Refusal(ResponseCode.MESSAGE_ILLEGAL, _illegal_remark())
        return [
            PendingMessage(
                body=_inflate(body, header.sys_flag),
                wire_body=body if is_compressed(header.sys_flag) else None,
                properties=props,
                size=size,
                born_timestamp=header.born_timestamp,
                sys_flag=header.sys_flag,
                flag=header.flag,
                born_host=peer,
                reconsume_times=header.reconsume_times,
            )
        ]

    def _pending_batch(
        self, header: SendMessageRequestHeader, body: bytes, peer: str
    ) -> list[PendingMessage]:
        batch_props = decode_properties(header.properties or "")
        batch_props[CLUSTER] = self.cluster_name
        if header.sys_flag & _TRANSACTION_TYPE_MASK or DELAY in batch_props:
            raise _Refusal(ResponseCode.MESSAGE_ILLEGAL, _illegal_remark())
        batch_text = encode_properties(batch_props).encode()
        try:
            items = decode_batch(body)
        except RemoteProtocolError as exc:
            raise _Refusal(ResponseCode.SYSTEM_ERROR, f"bad batch body: {exc}") from None
        if not items or len(body) > MAX_MESSAGE_SIZE:
            raise _Refusal(ResponseCode.MESSAGE_ILLEGAL, _illegal_remark())
        topic_len = len(header.topic.encode())
        pending: list[PendingMessage] = []
        for item in items:
            own = item.properties.encode()
            separator = 1 if own and batch_text and not own.endswith(b"\x02") else 0
            size = stored_size(len(item.body), topic_len, len(own) + separator + len(batch_text))
            if size > MAX_MESSAGE_SIZE:
                raise _Refusal(ResponseCode.MESSAGE_ILLEGAL, _illegal_remark())
            props = {**decode_properties(item.properties), **batch_props}
            pending.append(
                PendingMessage(
                    body=item.body,
                    properties=props,
                    size=size,
                    born_timestamp=header.born_timestamp,
                    sys_flag=header.sys_flag,
                    flag=item.flag,
                    born_host=peer,
                )
            )
        return pending

    # -- other requests ------------------------------------------------------------------

    def _max_offset(self, request: RemotingCommand) -> RemotingCommand:
        topic, queue_id = request.field("topic"), request.field("queueId")
        if topic is None or queue_id is None or not queue_id.lstrip("-").isdigit():
            return _system_error(
                request, f"{_REMOTING_EXCEPTION}: GET_MAX_OFFSET needs topic and a numeric queueId"
            )
        offset = self.store.max_offset(topic, int(queue_id))
        return request.make_response(ResponseCode.SUCCESS, ext_fields={"offset": str(offset)})


def _inflate(body: bytes, sys_flag: int) -> bytes:
    """The original body, for inspection; a broker does not look inside, so a body that
    does not decode here (corrupt, or no LZ4/zstd library) is kept as sent."""
    try:
        return decompress_body(body, sys_flag, max_size=64 * MAX_MESSAGE_SIZE)
    except ProducerError:
        return body


def _send_fields(stored: list[StoredMessage], queue_id: int) -> dict[str, str]:
    return {
        "msgId": ",".join(message.offset_msg_id for message in stored),
        "queueId": str(queue_id),
        "queueOffset": str(stored[0].queue_offset),
    }


def _system_error(request: RemotingCommand, remark: str) -> RemotingCommand:
    return request.make_response(ResponseCode.SYSTEM_ERROR, remark=remark)
