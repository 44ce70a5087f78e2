"""Pop consumption's requests and answers (RocketMQ 5.x over remoting; no I/O).

POP_MESSAGE (200050) asks a broker for up to 32 messages and makes them invisible for a
while; ACK_MESSAGE (200051) and BATCH_ACK_MESSAGE (200151) acknowledge them;
CHANGE_MESSAGE_INVISIBLETIME (200053) moves a message's invisible time. Field names,
formats and codes are the 5.2.0 broker's and client's (``PopMessageRequestHeader``,
``PopMessageResponseHeader``, ``ExtraInfoUtil``, ``MQClientAPIImpl.processPopResponse``;
docs/consuming.md 6). Every value travels as a string.

A message's **receipt handle** (the ``extraInfo`` the broker wants back, the message
property ``POP_CK``) names the pop's check point: ``<ckQueueOffset> <popTime>
<invisibleTime> <reviveQid> <retry> <brokerName> <queueId> <queueOffset>``. The broker
sends it as a property only for messages read from the pop retry topic; for the others
the client builds it from the answer's header (:meth:`PopResult.handle_for`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, replace

import msgspec

from producer._remoting.command import RemotingCommand
from producer._remoting.request_codes import RequestCode
from producer._remoting.retry_topics import RETRY_PREFIX
from producer._remoting.send_header import bool_str, int_str
from producer._response_codes import ResponseCode
from producer.errors import BrokerError, RemoteProtocolError

__all__ = [
    "FIRST_POP_TIME",
    "MAX_POP_MESSAGES",
    "POP_CK",
    "POP_ORDER_REVIVE_QUEUE",
    "POP_CODES",
    "InitMode",
    "PopParams",
    "PopResult",
    "ReceiptHandle",
    "ack_request",
    "change_invisible_request",
    "check_ack",
    "parse_change_response",
    "parse_offset_info",
    "parse_pop_response",
    "pop_request",
    "parse_message_type",
    "pop_retry_topic",
    "topic_config_request",
]

#: A broker answers a pop asking for more with INVALID_PARAMETER
#: (``PopMessageProcessor.processRequest``).
MAX_POP_MESSAGES = 32
#: ``KeyBuilder.POP_ORDER_REVIVE_QUEUE``: the revive queue id of every orderly pop.
POP_ORDER_REVIVE_QUEUE = 999
#: ``MessageConst.PROPERTY_POP_CK``: the handle, as the broker puts it on a retry copy.
POP_CK = "POP_CK"
#: ``MessageConst.PROPERTY_FIRST_POP_TIME``.
FIRST_POP_TIME = "1ST_POP_TIME"
POP_CODES = frozenset(
    {
        RequestCode.POP_MESSAGE,
        RequestCode.ACK_MESSAGE,
        RequestCode.BATCH_ACK_MESSAGE,
        RequestCode.CHANGE_MESSAGE_INVISIBLETIME,
    }
)


def pop_retry_topic(group: str, topic: str) -> str:
    """``KeyBuilder.buildPopRetryTopicV1``: where un-acked messages come back from."""
    return f"{RETRY_PREFIX}{group}_{topic}"


class InitMode(enum.IntEnum):
    """``ConsumeInitMode``: where a group with no offset on a queue starts."""

    MIN = 0
    MAX = 1


# -- the receipt handle ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReceiptHandle:
    """One popped message's check point (``ExtraInfoUtil``'s ``extraInfo``)."""

    ck_queue_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    retry: bool
    broker_name: str
    queue_id: int
    queue_offset: int

    @classmethod
    def parse(cls, text: str) -> ReceiptHandle:
        """A handle from its wire text; a malformed one raises RemoteProtocolError."""
        parts = text.split(" ")
        if len(parts) != 8 or parts[4] not in ("0", "1"):
            raise RemoteProtocolError(f"receipt handle {text!r}: expected 8 space-separated fields")
        try:
            numbers = [int(parts[i]) for i in (0, 1, 2, 3, 6, 7)]
        except ValueError:
            raise RemoteProtocolError(
                f"receipt handle {text!r}: a number field is not one"
            ) from None
        ck, pop_time, invisible, revive, queue_id, offset = numbers
        return cls(ck, pop_time, invisible, revive, parts[4] == "1", parts[5], queue_id, offset)

    def __str__(self) -> str:
        return (
            f"{self.ck_queue_offset} {self.pop_time} {self.invisible_time} {self.revive_qid} "
            f"{int(self.retry)} {self.broker_name} {self.queue_id} {self.queue_offset}"
        )

    @property
    def is_order(self) -> bool:
        return self.revive_qid == POP_ORDER_REVIVE_QUEUE

    @property
    def visible_again_at_ms(self) -> int:
        """Broker time at which the message becomes visible again unless acked."""
        return self.pop_time + self.invisible_time

    def real_topic(self, group: str, topic: str) -> str:
        """``ExtraInfoUtil.getRealTopic``: the pop retry topic for a retried copy."""
        return pop_retry_topic(group, topic) if self.retry else topic


# -- GET_TOPIC_CONFIG: is the topic FIFO? ----------------------------------------------


def topic_config_request(topic: str) -> RemotingCommand:
    """GET_TOPIC_CONFIG (5.x) for ``topic``."""
    return RemotingCommand(RequestCode.GET_TOPIC_CONFIG, ext_fields={"topic": topic})


def parse_message_type(response: RemotingCommand) -> str:
    """The topic's ``message.type`` attribute (``NORMAL`` when unset); an error raises."""
    check_ack(response)
    try:
        body = msgspec.json.decode(response.body or b"{}")
    except msgspec.DecodeError as exc:
        raise RemoteProtocolError(f"topic config body: {exc}") from None
    attributes = body.get("attributes") if isinstance(body, dict) else None
    if not isinstance(attributes, dict):
        return "NORMAL"
    found = attributes.get("message.type", attributes.get("+message.type", "NORMAL"))
    return str(found)


# -- POP_MESSAGE ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PopParams:
    """One POP_MESSAGE. ``queue_id`` -1 pops from every queue of the topic on the broker."""

    group: str
    topic: str
    broker_name: str
    max_messages: int
    invisible_ms: int
    poll_ms: int
    born_ms: int
    queue_id: int = -1
    init_mode: InitMode = InitMode.MAX
    expression_type: str = "TAG"
    expression: str = "*"
    order: bool = False


def pop_request(params: PopParams) -> RemotingCommand:
    """The request as the 5.2.0 client sends it (no body; ``attemptId`` left out)."""
    return RemotingCommand(
        RequestCode.POP_MESSAGE,
        ext_fields={
            "consumerGroup": params.group,
            "topic": params.topic,
            "queueId": str(params.queue_id),
            "maxMsgNums": int_str(params.max_messages),
            "invisibleTime": str(params.invisible_ms),
            "pollTime": str(params.poll_ms),
            "bornTime": str(params.born_ms),
            "initMode": int_str(int(params.init_mode)),
            "expType": params.expression_type,
            "exp": params.expression,
            "order": bool_str(params.order),
            "bname": params.broker_name,
        },
    )


OffsetKey = tuple[int, int]  # (retry 0/1, queueId)


def parse_offset_info(text: str) -> dict[OffsetKey, list[int]]:
    """``startOffsetInfo`` / ``msgOffsetInfo``: ``<retry> <queueId> <o>,<o>;...``."""
    found: dict[OffsetKey, list[int]] = {}
    for entry in filter(None, text.split(";")):
        parts = entry.split(" ")
        try:
            key = (int(parts[0]), int(parts[1]))
            found[key] = [int(o) for o in parts[2].split(",")]
        except (ValueError, IndexError):
            raise RemoteProtocolError(f"pop offset info {text!r}: bad entry {entry!r}") from None
    return found


def _parse_order_counts(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for entry in filter(None, text.split(";")):
        parts = entry.split(" ")
        if len(parts) != 3 or not parts[2].isdigit():
            raise RemoteProtocolError(f"pop orderCountInfo {text!r}: bad entry {entry!r}")
        counts[f"{parts[0]} {parts[1]}"] = int(parts[2])
    return counts


@dataclass(frozen=True, slots=True)
class PopResult:
    """A pop's answer: ``found`` is False for POLLING_TIMEOUT (nothing to pop)."""

    found: bool
    pop_time: int
    invisible_time: int
    revive_qid: int
    rest_num: int
    start_offsets: Mapping[OffsetKey, list[int]]
    msg_offsets: Mapping[OffsetKey, list[int]]
    order_counts: Mapping[str, int]
    body: bytes

    def handle_for(
        self, broker_name: str, queue_id: int, queue_offset: int, retry: bool = False
    ) -> ReceiptHandle:
        """``ExtraInfoUtil.buildExtraInfo`` for one message of this pop (its check point
        starts at the queue's ``startOffsetInfo``)."""
        start = self.start_offsets.get((int(retry), queue_id))
        if not start:
            raise RemoteProtocolError(
                f"pop answer has no startOffsetInfo for queue {queue_id} (retry={retry})"
            )
        return ReceiptHandle(
            start[0], self.pop_time, self.invisible_time, self.revive_qid, retry,
            broker_name, queue_id, queue_offset,
        )  # fmt: skip

    def reconsume_times(self, queue_id: int, queue_offset: int, retry: bool = False) -> int | None:
        """An orderly pop's count of earlier deliveries of one message (``qo`` entry, else
        the queue's entry); ``None`` when the answer has none."""
        flag = int(retry)
        found = self.order_counts.get(f"{flag} qo{queue_id}%{queue_offset}")
        return found if found is not None else self.order_counts.get(f"{flag} {queue_id}")


def parse_pop_response(response: RemotingCommand) -> PopResult:
    """FOUND (0) or nothing (210 POLLING_TIMEOUT); any other code raises BrokerError."""
    if response.code not in (ResponseCode.SUCCESS, ResponseCode.POLLING_TIMEOUT):
        raise BrokerError.for_code(response.code, response.remark)
    fields = response.ext_fields or {}
    try:
        pop_time = int(fields.get("popTime", "0"))
        invisible = int(fields.get("invisibleTime", "0"))
        revive = int(fields.get("reviveQid", "0"))
        rest = int(fields.get("restNum", "0"))
    except ValueError:
        raise RemoteProtocolError(f"pop answer with a non-numeric header: {fields}") from None
    return PopResult(
        found=response.code == ResponseCode.SUCCESS,
        pop_time=pop_time,
        invisible_time=invisible,
        revive_qid=revive,
        rest_num=rest,
        start_offsets=parse_offset_info(fields.get("startOffsetInfo", "")),
        msg_offsets=parse_offset_info(fields.get("msgOffsetInfo", "")),
        order_counts=_parse_order_counts(fields.get("orderCountInfo", "")),
        body=response.body if response.code == ResponseCode.SUCCESS else b"",
    )


# -- ACK_MESSAGE / BATCH_ACK_MESSAGE ----------------------------------------------------


def _handle_fields(group: str, topic: str, handle: ReceiptHandle) -> dict[str, str]:
    return {
        "consumerGroup": group,
        "topic": handle.real_topic(group, topic),
        "queueId": str(handle.queue_id),
        "offset": str(handle.queue_offset),
        "extraInfo": str(handle),
        "bname": handle.broker_name,
    }


def ack_request(group: str, topic: str, handle: ReceiptHandle) -> RemotingCommand:
    """ACK_MESSAGE for one message of ``topic`` (the normal topic: a retried copy is
    acked on the pop retry topic, as ``getRealTopic`` picks)."""
    return RemotingCommand(RequestCode.ACK_MESSAGE, ext_fields=_handle_fields(group, topic, handle))


def check_ack(response: RemotingCommand) -> None:
    """0 is success (also for a double or a stale ack); anything else raises."""
    if response.code != ResponseCode.SUCCESS:
        raise BrokerError.for_code(response.code, response.remark)


# -- CHANGE_MESSAGE_INVISIBLETIME -------------------------------------------------------


def change_invisible_request(
    group: str, topic: str, handle: ReceiptHandle, invisible_ms: int
) -> RemotingCommand:
    """CHANGE_MESSAGE_INVISIBLETIME: invisible for ``invisible_ms`` from now."""
    fields = _handle_fields(group, topic, handle)
    fields["invisibleTime"] = str(invisible_ms)
    return RemotingCommand(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, ext_fields=fields)


def parse_change_response(response: RemotingCommand, old: ReceiptHandle) -> ReceiptHandle:
    """The message's new handle: a new check point at the message's own offset, with the
    answer's popTime, invisibleTime and reviveQid (``changeInvisibleTimeAsync``)."""
    check_ack(response)
    fields = response.ext_fields or {}
    try:
        pop_time = int(fields["popTime"])
        invisible = int(fields["invisibleTime"])
        revive = int(fields["reviveQid"])
    except (KeyError, ValueError):
        raise RemoteProtocolError(f"change-invisible answer without its header: {fields}") from None
    return replace(
        old,
        ck_queue_offset=old.queue_offset,
        pop_time=pop_time,
        invisible_time=invisible,
        revive_qid=revive,
    )
