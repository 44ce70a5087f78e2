"""Row to message and outcome to result row, without Spark (the executors' per-row code)."""

from __future__ import annotations

import pytest

from producer import AttemptOutcome, AttemptRecord
from producer.errors import Fate, MessageTypeError, MessageValidationError, ProducerError
from producer.spark._rows import (
    PRESET_MSG_ID,
    RESULT_COLUMNS,
    ROW_ID,
    Columns,
    body_bytes,
    failure_row,
    message_for,
)


def test_bodies_binary_as_is_strings_utf8_others_refused() -> None:
    assert body_bytes(bytearray(b"\x00\x01")) == b"\x00\x01"
    assert body_bytes("é") == b"\xc3\xa9"
    with pytest.raises(MessageValidationError, match="body must be not null"):
        body_bytes(None)
    with pytest.raises(MessageTypeError, match="binary or string, not int"):
        body_bytes(7)


def test_a_row_becomes_its_message() -> None:
    columns = Columns(
        "b", topic_col="t", key_col="k", keys_col="ks", tags_col="g", property_cols=("p", "q")
    )
    row = {
        "t": "T",
        "b": "x",
        "k": 12,
        "ks": "a b",
        "g": "Tag",
        "p": 3,
        "q": None,
        PRESET_MSG_ID: "ID1",
    }
    message = message_for(row, columns)
    assert (message.topic, message.body, message.tags) == ("T", b"x", "Tag")
    assert message.keys == ["12", "a", "b"] and dict(message.properties) == {"p": "3"}
    assert message.msg_id == "ID1"
    with pytest.raises(MessageValidationError, match="topic column 't' must be not null"):
        message_for({**row, "t": None}, columns)
    fixed = Columns("b", topic="Fixed")
    assert message_for({"b": b"y"}, fixed).topic == "Fixed" and fixed.used() == ["b"]


def test_a_failure_row_carries_the_error_its_fate_and_last_broker() -> None:
    attempt = AttemptRecord("broker-b", 2, AttemptOutcome.TIMEOUT, None, 300.0)
    error = ProducerError("no answer", fate=Fate.UNKNOWN, attempts=[attempt])
    error.msg_id = "ABC"
    row = failure_row({ROW_ID: "7"}, 1, "T", error, 1_000.5, 301.0)
    assert list(row) == [name for name, _ in RESULT_COLUMNS]
    assert (row["status"], row["fate"], row["msg_id"], row["broker"]) == (
        "FAILED",
        "unknown",
        "ABC",
        "broker-b",
    )
    assert row["attempt_history"] == [
        {
            "broker": "broker-b",
            "queue_id": 2,
            "outcome": "timeout",
            "code": None,
            "latency_ms": 300.0,
        }
    ]
