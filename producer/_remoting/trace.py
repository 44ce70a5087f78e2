"""Message trace records, as the 4.9.4 Java client writes them (pure: no I/O, no clock).

``TraceDataEncoder.encoderFromContextBean``: a trace message's body is UTF-8 text made of
records; each record's fields are joined by ``\\x01`` (``CONTENT_SPLITOR``) and the record
**ends** with ``\\x02`` (``FIELD_SPLITOR``); the first field names the record's type. Every
value is written with Java's ``String.valueOf``, so an absent one is the text ``null``.
The trace message goes to ``RMQ_SYS_TRACE_TOPIC`` (or a topic of the user's) with no tags
and ``KEYS`` = every traced message's UNIQ_KEY and keys, space-joined, so that
``QUERY_MESSAGE`` by a message id finds the trace messages about it
(``AsyncTraceDispatcher.sendTraceDataByMQ``).

* ``Pub``: one per answered send attempt (none for a oneway send), 14 fields.
* ``SubBefore`` / ``SubAfter``: one pair per message of a listener call, sharing a
  request id, 8 and 9 fields. ``contextCode`` is the ``ConsumeReturnType`` ordinal.

The decoder also takes the 13-field ``Pub`` (no offset id) and 15-field ``Pub`` (with the
client host) that ``decoderFromTraceDataString`` accepts; anything else raises
:class:`~producer.errors.RemoteProtocolError` naming the record.
"""

from __future__ import annotations

import enum

from producer._types.trace_records import PubRecord, SubAfterRecord, SubBeforeRecord
from producer.errors import RemoteProtocolError

__all__ = [
    "CONTENT_SEPARATOR",
    "RECORD_END",
    "TRACE_GROUP_PREFIX",
    "TRACE_TOPIC",
    "ConsumeReturn",
    "MessageType",
    "TraceRecord",
    "decode_trace_body",
    "encode_trace_body",
    "trace_keys",
]

TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"  # TopicValidator.RMQ_SYS_TRACE_TOPIC
TRACE_GROUP_PREFIX = "_INNER_TRACE_PRODUCER"  # TraceConstants.GROUP_NAME_PREFIX
CONTENT_SEPARATOR = "\x01"
RECORD_END = "\x02"
NULL = "null"  # String.valueOf(null)


class MessageType(enum.IntEnum):
    """``org.apache.rocketmq.client.producer.MessageType`` (the ordinal is written)."""

    NORMAL = 0
    TRANSACTION_HALF = 1
    TRANSACTION_COMMIT = 2
    DELAY = 3


class ConsumeReturn(enum.IntEnum):
    """``ConsumeReturnType`` (the ordinal is written as ``contextCode``)."""

    SUCCESS = 0
    TIME_OUT = 1
    EXCEPTION = 2
    RETURNNULL = 3
    FAILED = 4


def _text(value: object) -> str:
    if value is None:
        return NULL
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


TraceRecord = PubRecord | SubBeforeRecord | SubAfterRecord


def encode_trace_body(records: list[TraceRecord]) -> bytes:
    """The body of one trace message holding ``records``."""
    text = "".join(
        CONTENT_SEPARATOR.join(_text(v) for v in record.fields()) + RECORD_END for record in records
    )
    return text.encode()


def trace_keys(records: list[TraceRecord]) -> list[str]:
    """The trace message's KEYS: each record's message id and keys, once each."""
    keys: dict[str, None] = {}
    for record in records:
        keys[record.msg_id] = None
        if record.keys:
            keys.update(dict.fromkeys(k for k in record.keys.split(" ") if k))
    return list(keys)


def decode_trace_body(body: bytes) -> list[TraceRecord]:
    """The records of a trace message's body; a record this decoder does not know raises
    :class:`RemoteProtocolError` (a trace topic may hold other writers' data)."""
    try:
        text = body.decode()
    except UnicodeDecodeError as exc:
        raise RemoteProtocolError(f"a trace body is not UTF-8: {exc}") from None
    records: list[TraceRecord] = []
    for chunk in text.split(RECORD_END):
        if chunk.strip():
            records.append(_decode_record(chunk.split(CONTENT_SEPARATOR)))
    return records


def _optional(value: str) -> str | None:
    return None if value == NULL else value


def _decode_record(fields: list[str]) -> TraceRecord:
    kind, count = fields[0], len(fields)
    try:
        if kind == "Pub" and count in (13, 14, 15):
            return _pub(fields)
        if kind == "SubBefore" and count == 8:
            _, ts, region, group, request_id, msg_id, retries, keys = fields
            return SubBeforeRecord(
                int(ts), _optional(region), group, request_id, msg_id, int(retries), _optional(keys)
            )
        if kind == "SubAfter" and count >= 9:
            _, request_id, msg_id, cost, ok, keys, code, ts, group = fields[:9]
            success, context_code, keys_or_none = ok == "true", int(code), _optional(keys)
            return SubAfterRecord(
                request_id, msg_id, int(cost), success, keys_or_none, context_code, int(ts), group
            )
    except ValueError as exc:
        raise RemoteProtocolError(f"trace record {fields!r}: {exc}") from None
    raise RemoteProtocolError(f"unknown trace record {kind!r} with {count} fields: {fields!r}")


def _pub(fields: list[str]) -> PubRecord:
    ts, region, group, topic, msg_id, tags, keys, host, length, cost, kind = fields[1:12]
    offset_msg_id = _optional(fields[12]) if len(fields) >= 14 else None
    return PubRecord(
        timestamp=int(ts),
        region_id=_optional(region),
        group=group,
        topic=topic,
        msg_id=msg_id,
        tags=_optional(tags),
        keys=_optional(keys),
        store_host=host,
        body_length=int(length),
        cost_ms=int(cost),
        msg_type=int(kind),
        offset_msg_id=offset_msg_id,
        success=fields[13 if len(fields) >= 14 else 12] == "true",
    )
