"""5.x server-side rebalance: QUERY_ASSIGNMENT (400) and SET_MESSAGE_REQUEST_MODE (401),
as ``QueryAssignmentProcessor`` (rocketmq-all-5.2.0) reads and writes them (pure).

A 5.x client with ``clientRebalance=false`` asks a broker which queues it takes
(``QueryAssignmentRequestBody``); the broker answers ``QueryAssignmentResponseBody``, each
queue with the group's message request mode for the topic: ``PULL``, or ``POP`` (then the
queue id is -1, "every queue of that broker", unless ``popShareQueueNum`` splits them).
``mqadmin setConsumeMode`` sets that mode per topic and group
(``SetMessageRequestModeRequestBody``).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

import msgspec

from producer._remoting.admin import fastjson
from producer._types.message import MessageQueue
from producer.errors import RemoteProtocolError

__all__ = [
    "MessageRequestMode",
    "QueryAssignment",
    "SetRequestMode",
    "assignment_body",
    "parse_query_assignment",
    "parse_set_request_mode",
]


class MessageRequestMode(enum.Enum):
    PULL = "PULL"
    POP = "POP"


class SetRequestMode(msgspec.Struct, frozen=True, rename="camel"):
    """``SetMessageRequestModeRequestBody`` (``popShareQueueNum`` 0 when absent)."""

    topic: str
    consumer_group: str
    mode: MessageRequestMode = MessageRequestMode.PULL
    pop_share_queue_num: int = 0


class QueryAssignment(msgspec.Struct, frozen=True, rename="camel"):
    """``QueryAssignmentRequestBody``."""

    topic: str
    consumer_group: str
    client_id: str
    strategy_name: str = "AVG"
    message_model: str = "CLUSTERING"


_set_mode_decoder = msgspec.json.Decoder(SetRequestMode)
_query_decoder = msgspec.json.Decoder(QueryAssignment)


def parse_set_request_mode(body: bytes) -> SetRequestMode:
    """SET_MESSAGE_REQUEST_MODE's body; a malformed one raises RemoteProtocolError."""
    try:
        return _set_mode_decoder.decode(body)
    except msgspec.DecodeError as exc:
        raise RemoteProtocolError(f"SetMessageRequestModeRequestBody: {exc}") from None


def parse_query_assignment(body: bytes) -> QueryAssignment:
    """QUERY_ASSIGNMENT's body; a malformed one raises RemoteProtocolError."""
    try:
        return _query_decoder.decode(body)
    except msgspec.DecodeError as exc:
        raise RemoteProtocolError(f"QueryAssignmentRequestBody: {exc}") from None


def assignment_body(queues: Iterable[MessageQueue] | None, mode: MessageRequestMode) -> bytes:
    """``QueryAssignmentResponseBody``: each queue with ``mode`` (``attachments`` null);
    ``None`` (the broker could not tell: no route, no such strategy) is ``{}``, which the
    client takes as "keep what you have"."""
    if queues is None:
        return b"{}"
    assignments = [{"messageQueue": q, "mode": mode.value} for q in queues]
    return fastjson({"messageQueueAssignments": assignments}).encode()
