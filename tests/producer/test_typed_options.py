"""Every option is spelt out, typed, in the public constructors (issue 25 item 4): the
blocking producer takes exactly the async one's, a misspelt option names the nearest
one, and the blocking send_async takes callbacks."""

from __future__ import annotations

import dataclasses
import inspect
import threading
from collections.abc import Callable
from typing import Any

import pytest

from producer import Message, Producer, SendResult
from producer._send.options import ProducerOptions
from producer.blocking import Producer as BlockingProducer
from producer.consumer import PushConsumer
from producer.errors import InvalidOptionError, ProducerError
from producer.testing import DevClusterThread
from tests.producer.conftest import TOPIC

NAMESRV = "127.0.0.1:9876"  # never contacted: every case fails in the constructor


def parameters(function: Callable[..., Any]) -> list[tuple[str, Any, Any, Any]]:
    return [
        (p.name, p.kind, p.default, p.annotation)
        for p in inspect.signature(function).parameters.values()
        if p.name != "self"
    ]


def test_the_blocking_producer_takes_the_async_producers_parameters() -> None:
    assert parameters(BlockingProducer.__init__) == parameters(Producer.__init__)


def test_each_producer_option_defaults_to_the_options_dataclass() -> None:
    signature = inspect.signature(Producer.__init__).parameters
    for field in dataclasses.fields(ProducerOptions):
        default = getattr(ProducerOptions(), field.name)
        assert signature[field.name].default == default, field.name


@pytest.mark.parametrize("cls", [Producer, BlockingProducer, PushConsumer])
def test_no_public_constructor_hides_its_options(cls: type) -> None:
    kinds = {p.kind for p in inspect.signature(cls.__init__).parameters.values()}
    assert inspect.Parameter.VAR_KEYWORD not in kinds


@pytest.mark.parametrize(
    ("make", "typo", "nearest"),
    [
        (Producer, "send_timeout", "send_timeout_ms"),
        (BlockingProducer, "retry_times_when_send_fail", "retry_times_when_send_failed"),
        (PushConsumer, "max_reconsume_time", "max_reconsume_times"),
    ],
)
def test_a_misspelt_option_names_the_nearest_one(
    make: Callable[..., object], typo: str, nearest: str
) -> None:
    threads = threading.active_count()
    with pytest.raises(InvalidOptionError) as info:
        make("g", NAMESRV, **{typo: 1})
    assert isinstance(info.value, TypeError)
    owner = "PushConsumer" if make is PushConsumer else "Producer"
    assert str(info.value) == f"{owner}() got an unknown option {typo!r}: did you mean {nearest!r}?"
    assert threading.active_count() == threads  # refused before a loop thread started


def test_an_option_like_nothing_gets_no_suggestion() -> None:
    with pytest.raises(InvalidOptionError, match=r"unknown option 'zzz'$"):
        Producer("g", NAMESRV, zzz=1)  # type: ignore[call-arg]


def test_the_consumers_options_reach_its_settings() -> None:
    consumer = PushConsumer("g", NAMESRV, max_reconsume_times=3, max_cached_messages=7)
    assert consumer.options.max_reconsume_times == 3
    assert consumer.options.flow.max_messages == 7
    orderly = PushConsumer("g", NAMESRV, orderly=True)
    assert orderly.options.max_reconsume_times == 2**31 - 1  # Java's orderly default


def test_blocking_send_async_runs_one_callback_then_resolves(cluster: DevClusterThread) -> None:
    seen: list[tuple[str, object]] = []

    def on_success(result: SendResult) -> None:
        seen.append(("ok", result.msg_id))
        raise RuntimeError("a callback that raises changes nothing (A6)")

    def on_exception(error: ProducerError) -> None:
        seen.append(("error", type(error).__name__))

    with BlockingProducer("g", cluster.namesrv_addr, routing="off") as p:
        ok = p.send_async(Message(TOPIC, b"x"), on_success, on_exception)
        bad = p.send_async(Message(TOPIC, b"y"), on_success, on_exception, timeout_ms=1e-9)
        p.flush()
        result = ok.result(5)
        error = bad.exception(5)
    assert sorted(seen) == [("error", type(error).__name__), ("ok", result.msg_id)]
