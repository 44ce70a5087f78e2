"""One input row to one message, one send outcome to one result row. No Spark here: the
executors run this per row, and it is tested without a JVM."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from producer import Message, SendResult
from producer.errors import MessageTypeError, MessageValidationError, ProducerError

ROW_ID = "_rmq_row_id"  # the input's id as a string, added by publish
PRESET_MSG_ID = "_rmq_msg_id"  # retry_failed's: send under the first attempt's UNIQ_KEY
FAILED = "FAILED"  # the status of a row that was not sent successfully

# The result rows' columns and their Spark types, in order: the one place they are named.
ATTEMPT_TYPE = "struct<broker:string,queue_id:int,outcome:string,code:int,latency_ms:double>"
RESULT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("row_id", "string"),
    ("partition", "int"),
    ("topic", "string"),
    ("msg_id", "string"),
    ("status", "string"),
    ("broker", "string"),
    ("queue_id", "int"),
    ("queue_offset", "bigint"),
    ("attempts", "int"),
    ("latency_ms", "double"),
    ("error_type", "string"),
    ("error_code", "int"),
    ("error_message", "string"),
    ("fate", "string"),
    ("sent_at_ms", "bigint"),
    ("attempt_history", f"array<{ATTEMPT_TYPE}>"),
)


@dataclass(frozen=True)
class Columns:
    """Which input columns hold what; shipped to the executors, so plain and picklable."""

    body_col: str
    topic: str | None = None
    topic_col: str | None = None
    key_col: str | None = None
    keys_col: str | None = None
    tags_col: str | None = None
    property_cols: tuple[str, ...] = ()
    order_key_col: str | None = None

    def used(self) -> list[str]:
        """The input columns publish reads (each once, in a stable order)."""
        named = [self.topic_col, self.body_col, self.key_col, self.keys_col, self.tags_col]
        named += [*self.property_cols, self.order_key_col]
        return list(dict.fromkeys(c for c in named if c is not None))


def body_bytes(value: object) -> bytes:
    """Binary columns as they are; strings encoded UTF-8; anything else is refused."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode()
    if value is None:
        raise MessageValidationError("body", None, "not null")
    raise MessageTypeError("body", value, f"binary or string, not {type(value).__name__}")


def message_for(row: Mapping[str, Any], columns: Columns) -> Message:
    """The row's message; raises the validation error a bad row deserves."""
    topic = columns.topic if columns.topic_col is None else row[columns.topic_col]
    if topic is None:
        raise MessageValidationError(f"topic column {columns.topic_col!r}", None, "not null")
    keys: list[str] = []
    if columns.key_col is not None and row[columns.key_col] is not None:
        keys.append(str(row[columns.key_col]))
    if columns.keys_col is not None and row[columns.keys_col] is not None:
        value = row[columns.keys_col]
        keys.extend(value.split() if isinstance(value, str) else map(str, value))
    properties = {name: str(row[name]) for name in columns.property_cols if row[name] is not None}
    return Message(
        topic,
        body_bytes(row[columns.body_col]),
        tags=None if columns.tags_col is None else row[columns.tags_col],
        keys=keys or None,
        properties=properties,
        msg_id=row.get(PRESET_MSG_ID),
    )


def topic_of(row: Mapping[str, Any], columns: Columns) -> str | None:
    value = columns.topic if columns.topic_col is None else row[columns.topic_col]
    return value if isinstance(value, str) else None


def success_row(
    row: Mapping[str, Any], partition: int, result: SendResult, started_ms: float, took_ms: float
) -> dict[str, Any]:
    return {
        "row_id": row[ROW_ID],
        "partition": partition,
        "topic": result.queue.topic,
        "msg_id": result.msg_id,
        "status": result.status.value,
        "broker": result.queue.broker_name,
        "queue_id": result.queue.queue_id,
        "queue_offset": result.queue_offset,
        "attempts": len(result.attempts),
        "latency_ms": took_ms,
        "error_type": None,
        "error_code": None,
        "error_message": None,
        "fate": None,
        "sent_at_ms": int(started_ms),
        "attempt_history": _history(result.attempts),
    }


def failure_row(
    row: Mapping[str, Any],
    partition: int,
    topic: str | None,
    error: ProducerError,
    started_ms: float,
    took_ms: float,
) -> dict[str, Any]:
    last = error.attempts[-1] if error.attempts else None
    return {
        "row_id": row[ROW_ID],
        "partition": partition,
        "topic": topic,
        "msg_id": error.msg_id or row.get(PRESET_MSG_ID),
        "status": FAILED,
        "broker": None if last is None else last.broker_name,
        "queue_id": None if last is None else last.queue_id,
        "queue_offset": None,
        "attempts": len(error.attempts),
        "latency_ms": took_ms,
        "error_type": type(error).__name__,
        "error_code": error.code,
        "error_message": error.message,
        "fate": error.fate.value,
        "sent_at_ms": int(started_ms),
        "attempt_history": _history(error.attempts),
    }


def _history(attempts: Any) -> list[dict[str, Any]]:
    return [
        {
            "broker": a.broker_name,
            "queue_id": a.queue_id,
            "outcome": a.outcome.value,
            "code": a.code,
            "latency_ms": a.latency_ms,
        }
        for a in attempts
    ]
