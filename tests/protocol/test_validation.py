"""Client-side rules: each one refuses with a message naming the field, value and limit."""

from __future__ import annotations

from typing import Any

import pytest

from producer._remoting.validation import (
    SYSTEM_TOPICS,
    check_batch_size,
    check_body,
    check_group,
    check_properties_size,
    check_topic,
    is_system_topic,
    validate_batch,
    validate_message,
)
from producer._types.message import Message
from producer.errors import LocalProtocolError, MessageValidationError


def _refused(call: Any, *args: Any) -> MessageValidationError:
    with pytest.raises(MessageValidationError) as raised:
        call(*args)
    error = raised.value
    assert isinstance(error, LocalProtocolError)
    assert isinstance(error, ValueError)
    text = str(error)
    assert error.field in text
    assert error.limit in text
    return error


def _message(**changes: Any) -> Message:
    values: dict[str, Any] = {"topic": "Orders", "body": b"payload"}
    values.update(changes)
    return Message(**values)


def _accepted(message: Message) -> bool:
    try:
        validate_message(message)
    except MessageValidationError:
        return False
    return True


@pytest.mark.parametrize(
    ("good", "bad"),
    [
        ({"topic": "a" * 127}, {"topic": "a" * 128}),
        ({"body": bytes(4 * 1024 * 1024)}, {"body": bytes(4 * 1024 * 1024 + 1)}),
        ({"delay_level": 18}, {"delay_level": 19}),
        ({"topic": "%RETRY%group"}, {"topic": "TBW102"}),
        ({"keys": ["o-1", "o-2"], "tags": "paid"}, {"tags": "pa\x01id"}),
        ({"properties": {"region": "eu"}, "flag": 7}, {"properties": {"UNIQ_KEY": "x"}}),
    ],
)
def test_a_good_message_passes_where_its_twin_over_the_line_does_not(
    good: dict[str, Any], bad: dict[str, Any]
) -> None:
    assert _accepted(_message(**good))
    assert not _accepted(_message(**bad))


@pytest.mark.parametrize(
    ("topic", "limit"),
    [
        ("", "a non-blank string"),
        ("   ", "a non-blank string"),
        (None, "a non-blank string"),
        ("a" * 128, "at most 127 characters"),
        ("has space", "only ^[%|a-zA-Z0-9_-]+$"),
        ("dot.ted", "only ^[%|a-zA-Z0-9_-]+$"),
        ("ünïcode", "only ^[%|a-zA-Z0-9_-]+$"),
        ("SCHEDULE_TOPIC_XXXX", "sending to a system topic is forbidden"),
        ("RMQ_SYS_TRANS_HALF_TOPIC", "sending to a system topic is forbidden"),
        ("TBW102", "sending to a system topic is forbidden"),
        ("rmq_sys_anything", "sending to a system topic is forbidden"),
    ],
)
def test_topic_rules(topic: Any, limit: str) -> None:
    error = _refused(validate_message, _message(topic=topic))
    assert error.field == "topic"
    assert error.value == topic
    assert error.limit == limit
    assert repr(topic)[:20] in str(error)


def test_topics_java_tools_send_to_stay_allowed() -> None:
    validate_message(_message(topic="BenchmarkTest"))
    validate_message(_message(topic="RMQ_SYS_TRACE_TOPIC"))
    assert is_system_topic("BenchmarkTest")
    assert is_system_topic("rmq_sys_x")
    assert "TBW102" in SYSTEM_TOPICS
    check_topic("TBW102")  # a valid name, only not a send target


@pytest.mark.parametrize(
    ("group", "limit"),
    [
        ("", "a non-blank string"),
        ("g" * 256, "at most 255 characters"),
        ("bad/group", "only ^[%|a-zA-Z0-9_-]+$"),
    ],
)
def test_group_rules(group: str, limit: str) -> None:
    error = _refused(check_group, group)
    assert (error.field, error.limit) == ("group", limit)
    check_group("g" * 255)
    check_group("%|_-aZ09")


def test_body_rules() -> None:
    assert _refused(check_body, b"").limit == "non-empty"
    assert _refused(check_body, "text").limit == "bytes"
    error = _refused(check_body, bytes(4 * 1024 * 1024 + 1))
    assert error.field == "body"
    assert "4194305 bytes" in str(error)
    assert "at most 4194304 bytes" in str(error)
    error = _refused(check_body, b"12345", 4)
    assert "at most 4 bytes" in error.limit
    check_body(bytearray(b"x"))
    check_body(memoryview(b"x"))


@pytest.mark.parametrize(
    ("properties", "field", "limit"),
    [
        ({"KEYS": "x"}, "property name", "not one of RocketMQ's reserved names"),
        ({"UNIQ_KEY": "x"}, "property name", "not one of RocketMQ's reserved names"),
        ({"DELAY": "x"}, "property name", "not one of RocketMQ's reserved names"),
        ({"": "x"}, "property name", "a non-blank string"),
        ({" ": "x"}, "property name", "a non-blank string"),
        ({"a\x01b": "x"}, "property name", "no \\x01 or \\x02 characters"),
        ({"a": ""}, "property 'a'", "a non-blank string"),
        ({"a": "x\x02y"}, "property 'a'", "no \\x01 or \\x02 characters"),
        ({"a": 5}, "property 'a'", "a non-blank string"),
    ],
)
def test_property_rules(properties: dict[str, Any], field: str, limit: str) -> None:
    error = _refused(validate_message, _message(properties=properties))
    assert (error.field, error.limit) == (field, limit)


@pytest.mark.parametrize(
    ("changes", "field", "limit"),
    [
        ({"tags": "a\x01b"}, "tags", "no \\x01 or \\x02 characters"),
        ({"tags": 5}, "tags", "a string or None"),
        ({"keys": "a\x02b"}, "keys", "no \\x01 or \\x02 characters"),
        ({"keys": ["ok", "has space"]}, "key", "no spaces (KEYS is space-joined)"),
        ({"keys": ["ok", ""]}, "key", "a non-empty string"),
        ({"keys": ["a\x01"]}, "key", "no \\x01 or \\x02 characters"),
        ({"keys": 5}, "keys", "a string or a collection of strings"),
        ({"keys": iter(["a"])}, "keys", "a string or a collection of strings"),
        ({"delay_level": 19}, "delay_level", "None, 0 or 1..18"),
        ({"delay_level": -1}, "delay_level", "None, 0 or 1..18"),
        ({"delay_level": True}, "delay_level", "None, 0 or 1..18"),
        ({"flag": 2**31}, "flag", "a 32-bit signed integer"),
    ],
)
def test_keys_tags_delay_and_flag_rules(changes: dict[str, Any], field: str, limit: str) -> None:
    error = _refused(validate_message, _message(**changes))
    assert (error.field, error.limit) == (field, limit)


def test_properties_size_limit() -> None:
    check_properties_size("x" * 32767)
    error = _refused(check_properties_size, "é" * 16384)
    assert "32768 bytes encoded" in str(error)
    assert error.limit == "at most 32767 bytes"


def test_batch_rules() -> None:
    validate_batch([_message(), _message(tags="t")])
    assert _refused(validate_batch, []).limit == "at least one message"
    other = _refused(validate_batch, [_message(), _message(topic="Other")])
    assert (other.field, other.value) == ("batch[1].topic", "Other")
    assert "'Orders'" in other.limit
    delayed = _refused(validate_batch, [_message(), _message(delay_level=2)])
    assert (delayed.field, delayed.limit) == ("batch[1].delay_level", "no delay in a batch")
    wait = _refused(validate_batch, [_message(), _message(wait_store_msg_ok=False)])
    assert wait.field == "batch[1].wait_store_msg_ok"
    retry = _refused(validate_batch, [_message(topic="%RETRY%g")])
    assert retry.limit == "no retry topic in a batch"
    inner = _refused(validate_batch, [_message(), _message(body=b"")])
    assert inner.field == "body"


def test_batch_size_limit() -> None:
    check_batch_size(4 * 1024 * 1024)
    error = _refused(check_batch_size, 4 * 1024 * 1024 + 1)
    assert error.field == "batch body"


@pytest.mark.parametrize(
    ("changes", "sentence"),
    [
        ({"body": b""}, "body must be non-empty (got b'')"),
        ({"topic": "TBW102"}, "topic is not allowed: sending to a system topic is forbidden"),
        ({"delay_level": 99}, "delay_level must be None, 0 or 1..18 (got 99)"),
    ],
)
def test_refusals_read_as_sentences(changes: dict[str, Any], sentence: str) -> None:
    with pytest.raises(MessageValidationError) as info:
        validate_message(_message(**changes))
    assert str(info.value).startswith(sentence)
