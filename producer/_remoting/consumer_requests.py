"""Builders for the requests a push consumer sends, and parsers for their answers.

Field names, types and the enum strings are 4.9.4's (docs/consuming.md 1.3-1.5); every value
travels as a string. Parsers raise :class:`~producer.errors.BrokerError` for an error
code and :class:`~producer.errors.RemoteProtocolError` for a malformed answer.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import msgspec

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_encoder import json_dumps
from producer._remoting.producer_requests import CLIENT_INNER_PRODUCER_GROUP
from producer._remoting.request_codes import RequestCode
from producer._remoting.send_header import bool_str, int_str, parse_int
from producer._remoting.store_record import StoreRecord, decode_records, encode_record
from producer._remoting.subscription import Subscription
from producer._response_codes import ResponseCode
from producer._types.message import MessageQueue
from producer.errors import BrokerError, RemoteProtocolError

__all__ = [
    "ConsumeFromWhere",
    "ConsumerData",
    "MessageModel",
    "PullParams",
    "PullResult",
    "PullStatus",
    "check_client_config_request",
    "check_success",
    "consumer_heartbeat_request",
    "consumer_list_request",
    "lock_batch_request",
    "min_offset_request",
    "parse_consumer_list",
    "parse_lock_batch",
    "parse_offset_response",
    "parse_pull_response",
    "pull_request",
    "query_offset_request",
    "search_offset_request",
    "send_back_request",
    "unlock_batch_request",
    "unregister_consumer_request",
    "update_offset_request",
]

# PullSysFlag bits
FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4


class MessageModel(enum.Enum):
    CLUSTERING = "CLUSTERING"
    BROADCASTING = "BROADCASTING"


class ConsumeFromWhere(enum.Enum):
    LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


@dataclass(frozen=True, slots=True)
class ConsumerData:
    """One consumer group's part of a heartbeat (``ConsumerData``); ``versions`` maps a
    topic to the ``subVersion`` of its subscription; ``active``: a pull consumer
    (``CONSUME_ACTIVELY``, as Java's lite pull consumer says), else a push consumer."""

    group: str
    model: MessageModel
    consume_from: ConsumeFromWhere
    subscriptions: tuple[Subscription, ...]
    versions: dict[str, int]
    active: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "consumeFromWhere": self.consume_from.value,
            "consumeType": "CONSUME_ACTIVELY" if self.active else "CONSUME_PASSIVELY",
            "groupName": self.group,
            "messageModel": self.model.value,
            "subscriptionDataSet": [
                subscription_json(s, self.versions.get(s.topic, 0))
                for s in sorted(self.subscriptions, key=lambda s: s.topic)
            ],
            "unitMode": False,
        }


def subscription_json(subscription: Subscription, version: int) -> dict[str, object]:
    """``SubscriptionData`` as fastjson writes it (heartbeats, and a broker's echo of them)."""
    return {
        "classFilterMode": False,
        "codeSet": list(subscription.codes),
        "expressionType": subscription.expression_type,
        "subString": subscription.expression,
        "subVersion": version,
        "tagsSet": list(subscription.tags),
        "topic": subscription.topic,
    }


def consumer_heartbeat_request(
    client_id: str, consumers: Iterable[ConsumerData], *, producer_groups: Sequence[str] = ()
) -> RemotingCommand:
    """HEART_BEAT carrying consumer data (and, as Java's does, the inner producer)."""
    groups = [CLIENT_INNER_PRODUCER_GROUP, *(g for g in producer_groups if g)]
    body = {
        "clientID": client_id,
        "consumerDataSet": [c.to_json() for c in consumers],
        "producerDataSet": [{"groupName": g} for g in dict.fromkeys(groups)],
    }
    return RemotingCommand(RequestCode.HEART_BEAT, body=json_dumps(body))


def check_client_config_request(
    client_id: str, group: str, subscription: Subscription, version: int
) -> RemotingCommand:
    """CHECK_CLIENT_CONFIG (``CheckClientRequestBody``): can the broker compile this
    subscription's expression? Java's ``checkClientInBroker`` sends it before the first
    heartbeat (golden d_sql92 #11); a refusal is 23 with the parser's reason."""
    body = {
        "clientId": client_id,
        "group": group,
        "subscriptionData": subscription_json(subscription, version),
    }
    return RemotingCommand(RequestCode.CHECK_CLIENT_CONFIG, body=json_dumps(body))


def unregister_consumer_request(client_id: str, group: str) -> RemotingCommand:
    fields = {"clientID": client_id, "consumerGroup": group}
    return RemotingCommand(RequestCode.UNREGISTER_CLIENT, ext_fields=fields)


# -- group membership -------------------------------------------------------------------


class _ConsumerList(msgspec.Struct):
    consumerIdList: list[str] = []  # noqa: N815 - wire name


_consumer_list_decoder = msgspec.json.Decoder(_ConsumerList)


def consumer_list_request(group: str) -> RemotingCommand:
    return RemotingCommand(
        RequestCode.GET_CONSUMER_LIST_BY_GROUP, ext_fields={"consumerGroup": group}
    )


def parse_consumer_list(response: RemotingCommand) -> list[str]:
    """The group's client ids; code 1 ("no consumer for this group") raises BrokerError."""
    _check(response)
    try:
        return _consumer_list_decoder.decode(response.body or b"{}").consumerIdList
    except msgspec.DecodeError as exc:
        raise RemoteProtocolError(f"consumer list body: {exc}") from None


# -- offsets ----------------------------------------------------------------------------


def _queue_fields(queue: MessageQueue) -> dict[str, str]:
    return {"topic": queue.topic, "queueId": int_str(queue.queue_id)}


def query_offset_request(group: str, queue: MessageQueue) -> RemotingCommand:
    """QUERY_CONSUMER_OFFSET asking a 5.x broker not to answer 0 for an offset it does
    not have (``setZeroIfNotFound=false``; older brokers ignore the field)."""
    fields = {"consumerGroup": group, **_queue_fields(queue), "setZeroIfNotFound": "false"}
    return RemotingCommand(RequestCode.QUERY_CONSUMER_OFFSET, ext_fields=fields)


def update_offset_request(group: str, queue: MessageQueue, offset: int) -> RemotingCommand:
    fields = {"consumerGroup": group, **_queue_fields(queue), "commitOffset": str(offset)}
    return RemotingCommand(RequestCode.UPDATE_CONSUMER_OFFSET, ext_fields=fields)


def min_offset_request(queue: MessageQueue) -> RemotingCommand:
    return RemotingCommand(RequestCode.GET_MIN_OFFSET, ext_fields=_queue_fields(queue))


def search_offset_request(queue: MessageQueue, timestamp_ms: int) -> RemotingCommand:
    fields = {**_queue_fields(queue), "timestamp": str(timestamp_ms)}
    return RemotingCommand(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, ext_fields=fields)


def parse_offset_response(response: RemotingCommand) -> int:
    """``offset`` of a successful offset answer (query, max, min, search)."""
    _check(response)
    return parse_int(response.ext_fields or {}, "offset", wide=True)


# -- pulls ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PullParams:
    """One PULL_MESSAGE (``PullMessageRequestHeader``)."""

    group: str
    queue: MessageQueue
    offset: int
    max_messages: int
    commit_offset: int
    suspend_timeout_ms: int
    sub_version: int
    commit: bool = True
    suspend: bool = True
    expression: str | None = None  # a subscription sent with the pull (no heartbeat needed)
    expression_type: str = "TAG"  # or "SQL92"

    @property
    def sys_flag(self) -> int:
        flag = FLAG_SUSPEND if self.suspend else 0
        if self.commit and self.commit_offset > 0:
            flag |= FLAG_COMMIT_OFFSET
        if self.expression is not None:
            flag |= FLAG_SUBSCRIPTION
        return flag


def pull_request(params: PullParams) -> RemotingCommand:
    fields = {
        "consumerGroup": params.group,
        **_queue_fields(params.queue),
        "queueOffset": str(params.offset),
        "maxMsgNums": int_str(params.max_messages),
        "sysFlag": int_str(params.sys_flag),
        "commitOffset": str(params.commit_offset),
        "suspendTimeoutMillis": str(params.suspend_timeout_ms),
        "subVersion": str(params.sub_version),
        "expressionType": params.expression_type,
    }
    if params.expression is not None:
        fields["subscription"] = params.expression
    return RemotingCommand(RequestCode.PULL_MESSAGE, ext_fields=fields)


class PullStatus(enum.Enum):
    """``PullStatus``: what a pull found (codes 0, 19, 20, 21)."""

    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_PULL_STATUS = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


class PullResult:
    """A pull's status and offsets, and its records: ``body`` as they came (empty unless
    FOUND), which a consumer decodes into messages
    (``producer._consume.received.decode_pulled``), or ``records`` (decoded on first
    read). Made from records (a test's broker), its body is their encoding."""

    __slots__ = (
        "_body",
        "_records",
        "max_offset",
        "min_offset",
        "next_begin_offset",
        "status",
        "suggest_which_broker_id",
    )

    def __init__(
        self,
        status: PullStatus,
        next_begin_offset: int,
        min_offset: int,
        max_offset: int,
        records: list[StoreRecord] | None = None,
        *,
        body: bytes | None = None,
        suggest_which_broker_id: int = 0,
    ) -> None:
        self.status = status
        #: The replica the broker wants the next pull of this queue sent to (0: master).
        self.suggest_which_broker_id = suggest_which_broker_id
        self.next_begin_offset = next_begin_offset
        self.min_offset = min_offset
        self.max_offset = max_offset
        self._records = records
        self._body = body

    @property
    def body(self) -> bytes:
        if self._body is None:
            self._body = b"".join(map(encode_record, self._records or []))
        return self._body

    @property
    def records(self) -> list[StoreRecord]:
        if self._records is None:
            self._records = decode_records(self._body or b"")
        return self._records

    def __repr__(self) -> str:
        return (
            f"PullResult({self.status.name}, next={self.next_begin_offset}, "
            f"min={self.min_offset}, max={self.max_offset}, {len(self.body)} bytes)"
        )


def parse_pull_response(response: RemotingCommand) -> PullResult:
    """The pull's status, offsets and records; any other code raises BrokerError."""
    status = _PULL_STATUS.get(response.code)  # type: ignore[call-overload]
    if status is None:
        raise BrokerError.for_code(response.code, response.remark)
    fields = response.ext_fields or {}
    return PullResult(
        status,
        parse_int(fields, "nextBeginOffset", wide=True),
        parse_int(fields, "minOffset", wide=True),
        parse_int(fields, "maxOffset", wide=True),
        body=(response.body or b"") if status is PullStatus.FOUND else b"",
        suggest_which_broker_id=parse_int(fields, "suggestWhichBrokerId", wide=True)
        if "suggestWhichBrokerId" in fields
        else 0,
    )


# -- retries ----------------------------------------------------------------------------


def send_back_request(
    *,
    group: str,
    commit_log_offset: int,
    delay_level: int,
    origin_msg_id: str,
    origin_topic: str,
    max_reconsume_times: int,
) -> RemotingCommand:
    """CONSUMER_SEND_MSG_BACK (``ConsumerSendMsgBackRequestHeader``); the broker honours
    ``maxReconsumeTimes`` because we send version 401 (>= 121)."""
    fields = {
        "offset": str(commit_log_offset),
        "group": group,
        "delayLevel": str(delay_level),
        "originMsgId": origin_msg_id,
        "originTopic": origin_topic,
        "unitMode": bool_str(False),
        "maxReconsumeTimes": str(max_reconsume_times),
    }
    return RemotingCommand(RequestCode.CONSUMER_SEND_MSG_BACK, ext_fields=fields)


def check_success(response: RemotingCommand) -> None:
    """Raise BrokerError unless the answer is SUCCESS (send-back, update, unlock)."""
    _check(response)


# -- orderly locks ----------------------------------------------------------------------


class _WireQueue(msgspec.Struct):
    brokerName: str  # noqa: N815 - wire name
    queueId: int  # noqa: N815 - wire name
    topic: str


class _LockAnswer(msgspec.Struct):
    lockOKMQSet: list[_WireQueue] = []  # noqa: N815 - wire name


_lock_answer_decoder = msgspec.json.Decoder(_LockAnswer)


def _lock_body(client_id: str, group: str, queues: Iterable[MessageQueue]) -> bytes:
    mq_set = [
        {"brokerName": q.broker_name, "queueId": q.queue_id, "topic": q.topic}
        for q in sorted(queues, key=lambda q: (q.topic, q.broker_name, q.queue_id))
    ]
    return json_dumps({"clientId": client_id, "consumerGroup": group, "mqSet": mq_set})


def lock_batch_request(
    client_id: str, group: str, queues: Iterable[MessageQueue]
) -> RemotingCommand:
    return RemotingCommand(RequestCode.LOCK_BATCH_MQ, body=_lock_body(client_id, group, queues))


def unlock_batch_request(
    client_id: str, group: str, queues: Iterable[MessageQueue]
) -> RemotingCommand:
    return RemotingCommand(RequestCode.UNLOCK_BATCH_MQ, body=_lock_body(client_id, group, queues))


def parse_lock_batch(response: RemotingCommand) -> set[MessageQueue]:
    """The queues the broker locked for us (possibly none: not an error)."""
    _check(response)
    try:
        answer = _lock_answer_decoder.decode(response.body or b"{}")
    except msgspec.DecodeError as exc:
        raise RemoteProtocolError(f"lock answer body: {exc}") from None
    return {MessageQueue(q.topic, q.brokerName, q.queueId) for q in answer.lockOKMQSet}


def _check(response: RemotingCommand) -> None:
    if response.code != ResponseCode.SUCCESS:
        raise BrokerError.for_code(response.code, response.remark)
