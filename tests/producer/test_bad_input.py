"""The README's bad-input table: each invalid input raises its typed error before anything
is written, and leaves the producer as it was (issue 14 item 4)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from producer import Message, Producer
from producer.errors import (
    InvalidOptionError,
    LocalProtocolError,
    MessageTypeError,
    MessageValidationError,
)
from producer.testing import DevClusterThread
from tests.producer.conftest import TOPIC, make_producer

pytestmark = pytest.mark.anyio

BROKERS = ("broker-a", "broker-b", "broker-c")
Call = Callable[[Producer], Awaitable[Any]]


def _send(**message: Any) -> Call:
    def call(p: Producer) -> Awaitable[Any]:
        return p.send(Message(**{"topic": TOPIC, "body": b"x", **message}))

    return call


BAD_SENDS: dict[str, tuple[Call, type[Exception], str]] = {
    "empty topic": (_send(topic=""), MessageValidationError, "topic must be a non-blank"),
    "topic with a space": (_send(topic="a b"), MessageValidationError, "must contain only"),
    "long topic": (_send(topic="t" * 128), MessageValidationError, "at most 127"),
    "system topic": (_send(topic="TBW102"), MessageValidationError, "system topic"),
    "empty body": (_send(body=b""), MessageValidationError, "body must be non-empty"),
    "oversize body": (
        _send(body=b"x" * (4 * 1024 * 1024 + 1)),
        MessageValidationError,
        "at most 4194304 bytes",
    ),
    "reserved property": (
        _send(properties={"UNIQ_KEY": "x"}),
        MessageValidationError,
        "reserved names",
    ),
    "separator in property": (
        _send(properties={"a\x01": "b"}),
        MessageValidationError,
        "no \\x01 or \\x02",
    ),
    "key not a string": (_send(keys=[1]), MessageValidationError, "key must be a non-empty"),
    "blank msg_id": (_send(msg_id=" "), MessageValidationError, "msg_id must be a non-blank"),
    "msg_id with a separator": (_send(msg_id="a\x02b"), MessageValidationError, "no \\x01"),
    "delay level 19": (_send(delay_level=19), MessageValidationError, "1..18"),
    "delay level -1": (_send(delay_level=-1), MessageValidationError, "1..18"),
    "batch mixing topics": (
        lambda p: p.send_batch([Message("A", b"1"), Message("B", b"2")]),
        MessageValidationError,
        "batch[1].topic must be the batch's topic",
    ),
    "empty batch": (lambda p: p.send_batch([]), MessageValidationError, "at least one"),
    "delayed batch": (
        lambda p: p.send_batch([Message(TOPIC, b"1", delay_level=2)]),
        MessageValidationError,
        "no delay in a batch",
    ),
    "not a Message": (
        lambda p: p.send(b"x"),  # type: ignore[arg-type]
        LocalProtocolError,
        "expected a producer.Message",
    ),
    "zero timeout": (
        lambda p: p.send(Message(TOPIC, b"x"), timeout_ms=0),
        LocalProtocolError,
        "timeout_ms must be positive",
    ),
}


def _served(cluster: DevClusterThread) -> int:
    return sum(int(cluster.broker_status(name)["requests"]) for name in BROKERS)


@pytest.mark.parametrize("case", sorted(BAD_SENDS))
async def test_a_bad_send_raises_its_error_and_changes_nothing(
    cluster: DevClusterThread, case: str
) -> None:
    call, error, text = BAD_SENDS[case]
    async with make_producer(cluster) as p:
        await p.send(Message(TOPIC, b"warm-up"))
        before = (_served(cluster), p.in_flight, repr(p.router))
        with pytest.raises(error) as info:
            await call(p)
        after = (_served(cluster), p.in_flight, repr(p.router))
        assert after == before
        await p.send(Message(TOPIC, b"still works"))
    assert text in str(info.value)
    assert cluster.message_count(TOPIC) == 2


def test_a_str_body_is_a_type_error_inside_the_hierarchy() -> None:
    with pytest.raises(MessageTypeError, match="encode it") as info:
        Message(TOPIC, "text")  # type: ignore[arg-type]
    assert isinstance(info.value, TypeError) and isinstance(info.value, MessageValidationError)


@pytest.mark.parametrize(
    ("options", "text"),
    [
        ({"namesrv": "nohost"}, "is not 'host:port'"),
        ({"routing": "x"}, "routing must be one of"),
        ({"send_timeout_ms": -1}, "send_timeout_ms must be a positive number"),
        ({"batch_max_bytes": 8 << 20}, "must not exceed max_message_size"),
        ({"batch_linger_ms": -1}, "batch_linger_ms must be >= 0"),
        ({"batch_max_messages": 0}, "batch_max_messages must be a positive number"),
        ({"credentials": ("ak", "sk")}, "credentials must be a producer.Credentials, got tuple"),
        ({"ssl": "yes"}, "ssl must be None, False, True or an ssl.SSLContext, got str"),
    ],
)
def test_a_bad_option_is_an_invalid_option_error(options: dict[str, Any], text: str) -> None:
    arguments: dict[str, Any] = {"namesrv": "127.0.0.1:9876", **options}
    with pytest.raises(InvalidOptionError, match=text.replace("(", r"\(")):
        Producer("g", arguments.pop("namesrv"), **arguments)


def test_an_empty_group_is_refused() -> None:
    with pytest.raises(MessageValidationError, match="group must be a non-blank"):
        Producer("", "127.0.0.1:9876")
