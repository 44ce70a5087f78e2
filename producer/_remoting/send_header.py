"""The send request header (SEND_MESSAGE 10 / V2 310 / BATCH 320) and the send response.

V2 and batch requests carry ``SendMessageRequestHeaderV2``: one-letter keys ``a``..``m``,
every value a string, ``l`` absent when null (golden finding 8). SEND_MESSAGE (10) carries
the same fields under their long names. The parsers are what a broker needs (the dev
cluster uses them); the response parser is what the producer needs.

Integer fields are parsed the way Java's ``Integer.parseInt`` / ``Long.parseLong`` do
(optional sign, ASCII digits, range checked) and booleans the way
``Boolean.parseBoolean`` does (``"true"`` in any case, anything else is false).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated

import msgspec

from producer._remoting.command import RemotingCommand
from producer._remoting.request_codes import RequestCode
from producer._types.send_status import SEND_STATUS_BY_CODE, SendStatus
from producer.errors import BrokerError, RemoteProtocolError

DEFAULT_TOPIC = "TBW102"  # TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC
DEFAULT_TOPIC_QUEUE_NUMS = 4
DEFAULT_REGION = "DefaultRegion"  # MixAll.DEFAULT_TRACE_REGION_ID

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_DECIMAL = re.compile(r"[+-]?[0-9]+")
_SMALL_INTS = tuple(str(i) for i in range(4096))  # most queue ids, flags, sysFlags

# (long name, V2 letter) in the order of the Java class; the tuple order is the wire order.
_V1_TO_V2 = (
    ("producerGroup", "a"),
    ("topic", "b"),
    ("defaultTopic", "c"),
    ("defaultTopicQueueNums", "d"),
    ("queueId", "e"),
    ("sysFlag", "f"),
    ("bornTimestamp", "g"),
    ("flag", "h"),
    ("properties", "i"),
    ("reconsumeTimes", "j"),
    ("unitMode", "k"),
    ("maxReconsumeTimes", "l"),
    ("batch", "m"),
)


class HeaderFieldError(RemoteProtocolError):
    """A request or response header field is missing or malformed; ``field`` names it."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"header field {field!r} {problem}")
        self.field = field


def int_str(value: int) -> str:
    """``str(value)``, from a table for the small values that dominate send headers."""
    return _SMALL_INTS[value] if 0 <= value < 4096 else str(value)


def bool_str(value: bool) -> str:
    return "true" if value else "false"


def parse_int(fields: Mapping[str, str], name: str, *, wide: bool = False) -> int:
    """A required integer field (int64 when ``wide``, else int32)."""
    text = fields.get(name)
    if text is None:
        raise HeaderFieldError(name, "is missing")
    return _to_int(name, text, _INT64 if wide else _INT32)


def _to_int(name: str, text: str, bounds: tuple[int, int]) -> int:
    # Plain ASCII digits (every id and offset a broker sends) skip the regex.
    if not (text.isascii() and text.isdigit()) and not _DECIMAL.fullmatch(text):
        raise HeaderFieldError(name, f"is not an integer: {text!r}")
    value = int(text)
    if not bounds[0] <= value <= bounds[1]:
        raise HeaderFieldError(name, f"is out of range: {text}")
    return value


def _optional_int(fields: Mapping[str, str], name: str) -> int | None:
    text = fields.get(name)
    return None if text is None else _to_int(name, text, _INT32)


def _required_str(fields: Mapping[str, str], name: str) -> str:
    text = fields.get(name)
    if text is None:
        raise HeaderFieldError(name, "is missing")
    return text


def _parse_bool(text: str | None) -> bool:
    return text is not None and text.lower() == "true"


@dataclass(slots=True, kw_only=True)
class SendMessageRequestHeader:
    """``SendMessageRequestHeader`` with Python names; see the module doc for the wire."""

    producer_group: str
    topic: str
    default_topic: str = DEFAULT_TOPIC
    default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS
    queue_id: int
    sys_flag: int
    born_timestamp: int
    flag: int
    properties: str | None
    reconsume_times: int = 0
    unit_mode: bool = False
    max_reconsume_times: int | None = None
    batch: bool = False

    def to_v2_fields(self) -> dict[str, str]:
        """The ext fields of a SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE request, ``a``..``m``."""
        fields = {
            "a": self.producer_group,
            "b": self.topic,
            "c": self.default_topic,
            "d": int_str(self.default_topic_queue_nums),
            "e": int_str(self.queue_id),
            "f": int_str(self.sys_flag),
            "g": str(self.born_timestamp),
            "h": int_str(self.flag),
        }
        if self.properties is not None:
            fields["i"] = self.properties
        fields["j"] = int_str(self.reconsume_times)
        fields["k"] = bool_str(self.unit_mode)
        if self.max_reconsume_times is not None:  # Java omits null fields
            fields["l"] = str(self.max_reconsume_times)
        fields["m"] = bool_str(self.batch)
        return fields

    def to_v1_fields(self) -> dict[str, str]:
        """The same under SEND_MESSAGE's long names."""
        short = self.to_v2_fields()
        return {long: short[letter] for long, letter in _V1_TO_V2 if letter in short}

    @classmethod
    def from_v2_fields(cls, fields: Mapping[str, str] | None) -> SendMessageRequestHeader:
        """Parse ``a``..``m``; a missing or malformed field raises :class:`HeaderFieldError`."""
        return cls._parse(fields or {}, {long: letter for long, letter in _V1_TO_V2})

    @classmethod
    def from_v1_fields(cls, fields: Mapping[str, str] | None) -> SendMessageRequestHeader:
        """Parse SEND_MESSAGE's long-named fields."""
        return cls._parse(fields or {}, {long: long for long, _ in _V1_TO_V2})

    @classmethod
    def _parse(cls, fields: Mapping[str, str], key: dict[str, str]) -> SendMessageRequestHeader:
        return cls(
            producer_group=_required_str(fields, key["producerGroup"]),
            topic=_required_str(fields, key["topic"]),
            default_topic=_required_str(fields, key["defaultTopic"]),
            default_topic_queue_nums=parse_int(fields, key["defaultTopicQueueNums"]),
            queue_id=parse_int(fields, key["queueId"]),
            sys_flag=parse_int(fields, key["sysFlag"]),
            born_timestamp=parse_int(fields, key["bornTimestamp"], wide=True),
            flag=parse_int(fields, key["flag"]),
            properties=fields.get(key["properties"]),
            reconsume_times=_optional_int(fields, key["reconsumeTimes"]) or 0,
            unit_mode=_parse_bool(fields.get(key["unitMode"])),
            max_reconsume_times=_optional_int(fields, key["maxReconsumeTimes"]),
            batch=_parse_bool(fields.get(key["batch"])),
        )


_V2_CODES = (
    RequestCode.SEND_MESSAGE_V2,
    RequestCode.SEND_BATCH_MESSAGE,
    RequestCode.SEND_REPLY_MESSAGE_V2,
)


def parse_send_request_header(command: RemotingCommand) -> SendMessageRequestHeader:
    """The header of any of the three send requests, picked by request code."""
    if command.code == RequestCode.SEND_MESSAGE:
        return SendMessageRequestHeader.from_v1_fields(command.ext_fields)
    if command.code in _V2_CODES:  # a reply (325) has the header of 310
        return SendMessageRequestHeader.from_v2_fields(command.ext_fields)
    raise RemoteProtocolError(f"request code {command.code} is not a send request")


# -- the response ---------------------------------------------------------------------------


class _SendResponseWire(msgspec.Struct, frozen=True):
    # What a broker's send response carries (ext field values are strings; msgspec's
    # lax mode turns the numeric ones into checked ints in C, the whole parse in ~1 us).
    msgId: str  # noqa: N815 - wire names
    queueId: Annotated[int, msgspec.Meta(ge=_INT32[0], le=_INT32[1])]  # noqa: N815
    queueOffset: Annotated[int, msgspec.Meta(ge=_INT64[0], le=_INT64[1])]  # noqa: N815
    transactionId: str | None = None  # noqa: N815
    recallHandle: str | None = None  # noqa: N815 - 5.3 brokers (SendMessageResponseHeader)
    MSG_REGION: str = ""
    TRACE_ON: str = "true"


_WIRE_PATH = re.compile(r"`\$\.(\w+)`|field `(\w+)`")


def _field_error(problem: str) -> HeaderFieldError:
    found = _WIRE_PATH.search(problem)
    name = next((g for g in found.groups() if g), "?") if found else "?"
    if "missing required field" in problem:
        return HeaderFieldError(name, "is missing")
    return HeaderFieldError(name, f"is malformed ({problem})")


class SendResponseHeader(msgspec.Struct, frozen=True):
    """``SendMessageResponseHeader`` plus the region and trace switch the broker adds.

    ``msg_id`` is the offset message id (comma-joined, one per message, for a batch);
    ``queue_offset`` is the (first) message's offset in its queue. ``recall_handle``
    is what a 5.3 broker answers for a timed message (the handle to recall it with).
    """

    msg_id: str
    queue_id: int
    queue_offset: int
    transaction_id: str | None = None
    region_id: str = DEFAULT_REGION
    trace_on: bool = True
    recall_handle: str | None = None

    @classmethod
    def from_fields(cls, fields: Mapping[str, str] | None) -> SendResponseHeader:
        """Parse a success response's ext fields; region and trace default as in Java."""
        try:
            wire = msgspec.convert(fields or {}, _SendResponseWire, strict=False)
        except msgspec.ValidationError as exc:
            raise _field_error(str(exc)) from None
        return cls(
            wire.msgId,
            wire.queueId,
            wire.queueOffset,
            wire.transactionId,
            wire.MSG_REGION or DEFAULT_REGION,
            wire.TRACE_ON != "false",
            wire.recallHandle,
        )

    def to_fields(self) -> dict[str, str]:
        """Ext fields as a broker sends them (for the dev cluster)."""
        fields = {
            "msgId": self.msg_id,
            "queueId": int_str(self.queue_id),
            "queueOffset": str(self.queue_offset),
            "MSG_REGION": self.region_id,
            "TRACE_ON": bool_str(self.trace_on),
        }
        if self.transaction_id is not None:
            fields["transactionId"] = self.transaction_id
        if self.recall_handle is not None:
            fields["recallHandle"] = self.recall_handle
        return fields


def send_status_or_raise(code: int, remark: str | None) -> SendStatus:
    """The status of codes 0, 10, 11, 12; any other code raises its :class:`BrokerError`."""
    status = SEND_STATUS_BY_CODE.get(code)  # send_status_for_code's lookup, one call fewer
    if status is None:
        raise BrokerError.for_code(code, remark)
    return status


def parse_send_response(command: RemotingCommand) -> tuple[SendStatus, SendResponseHeader]:
    """Status and header of a send response; error codes raise ``BrokerError.for_code``."""
    status = send_status_or_raise(command.code, command.remark)
    return status, SendResponseHeader.from_fields(command.ext_fields)
