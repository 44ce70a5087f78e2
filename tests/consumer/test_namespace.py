"""Namespaces (``namespace="nsA"``) as Java's ``NamespaceUtil`` and ``ClientConfig`` do
them, against the recorded session (golden c_namespace) and the dev cluster: every name on
the wire is ``nsA%name`` (retry and DLQ topics ``%RETRY%nsA%group``), every sent message
carries ``INSTANCE_ID=nsA``, and users see their own names in results and messages."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import anyio
import pytest

from producer import Message, Producer
from producer._remoting.frame_decoder import decode_frame
from producer._remoting.namespace import MAX_NAMESPACE_LENGTH, check_namespace, unwrap, wrap
from producer._remoting.producer_requests import SendRequestFactory
from producer.consumer import (
    ConsumeStatus,
    MessageQueue,
    PullConsumer,
    PushConsumer,
    ReceivedMessage,
)
from producer.errors import InvalidOptionError
from producer.testing import DevClusterThread
from tests.protocol.golden import golden_dir

SESSION = golden_dir() / "sessions" / "features_4_9_4" / "c_namespace"
FAST_LEVELS = " ".join(["100ms"] * 18)
FAST = {"persist_interval_ms": 50, "rebalance_interval_ms": 500, "suspend_timeout_ms": 1000}


def golden(seq: int) -> object:
    lines = (SESSION / "frames.jsonl").read_text().splitlines()
    frame = next(f for f in map(json.loads, lines) if f["seq"] == seq)
    return decode_frame((SESSION / frame["file"]).read_bytes())


@pytest.mark.parametrize(
    ("name", "wrapped"),
    [  # the names of the recorded session, then NamespaceUtil's exceptions
        ("NsTopic", "nsA%NsTopic"),
        ("NsConsumerGroup", "nsA%NsConsumerGroup"),
        ("%RETRY%NsConsumerGroup", "%RETRY%nsA%NsConsumerGroup"),
        ("%DLQ%NsConsumerGroup", "%DLQ%nsA%NsConsumerGroup"),
        ("TBW102", "TBW102"),  # system topics and groups are never wrapped
        ("RMQ_SYS_TRACE_TOPIC", "RMQ_SYS_TRACE_TOPIC"),
        ("rmq_sys_wheel_timer", "rmq_sys_wheel_timer"),
        ("CID_RMQ_SYS_x", "CID_RMQ_SYS_x"),
        ("nsA%NsTopic", "nsA%NsTopic"),  # already wrapped
        ("%RETRY%nsA%G", "%RETRY%nsA%G"),
    ],
)
def test_names_are_wrapped_and_unwrapped_as_namespace_util_does(name: str, wrapped: str) -> None:
    assert wrap("nsA", name) == wrapped
    assert wrap(None, name) == name
    if not name.startswith(("nsA%", "%RETRY%nsA%")):
        assert unwrap(wrapped, "nsA") == name
    assert unwrap("nsB%NsTopic", "nsA") == "nsB%NsTopic"  # another namespace's: left alone


@pytest.mark.parametrize(
    ("bad", "fix"),
    [
        ("", "non-empty"),
        ("x" * (MAX_NAMESPACE_LENGTH + 1), "at most 118"),
        ("a%b", "letters, digits"),
        (5, "non-empty name"),
    ],
)
def test_a_bad_namespace_is_refused_with_the_fix(bad: object, fix: str) -> None:
    with pytest.raises(InvalidOptionError, match=fix):
        check_namespace(bad)
    with pytest.raises(InvalidOptionError, match=fix):
        Producer("g", "127.0.0.1:9876", namespace=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match=fix):
        PushConsumer("g", "127.0.0.1:9876", namespace=bad)  # type: ignore[arg-type]


def test_a_group_whose_retry_topic_would_be_too_long_is_refused() -> None:
    with pytest.raises(InvalidOptionError, match="retry topic"):
        PushConsumer("g" * 60, "127.0.0.1:9876", namespace="n" * 60)


def test_a_namespaced_send_is_the_recorded_one() -> None:
    real = golden(63)  # SEND_MESSAGE_V2 of "ns-ok" by nsA%NsProducerGroup
    fields = real.ext_fields  # type: ignore[attr-defined]
    factory = SendRequestFactory("nsA%NsProducerGroup", namespace="nsA")
    uniq = fields["i"].split("UNIQ_KEY\x01")[1].split("\x02")[0]
    prepared = factory.prepare(Message("NsTopic", b"x", tags="TagNs", keys="ns-ok"), uniq)
    assert (fields["a"], fields["b"]) == ("nsA%NsProducerGroup", prepared.topic)
    assert prepared.properties == fields["i"]  # INSTANCE_ID=nsA last


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=1, topics={"nsA%NsTopic": 1}, delay_levels=FAST_LEVELS) as c:
        yield c


async def until(condition: Callable[[], bool], seconds: float = 20.0) -> None:
    with anyio.fail_after(seconds):
        while not condition():  # noqa: ASYNC110 - state of another process-side task
            await anyio.sleep(0.02)


@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_a_namespaced_producer_and_consumer_see_their_own_names(
    cluster: DevClusterThread,
) -> None:
    async with Producer("NsProducerGroup", cluster.namesrv_addr, namespace="nsA") as producer:
        assert producer.group == "nsA%NsProducerGroup"
        result = await producer.send(Message("NsTopic", b"refused once", keys="ns-fail"))
    assert result.queue.topic == "NsTopic"  # the user's name, as Java's SendResult
    [stored] = cluster.messages("nsA%NsTopic")
    assert stored.properties["INSTANCE_ID"] == "nsA"
    seen: list[tuple[str, int]] = []

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        seen.extend((m.topic, m.reconsume_times) for m in messages)
        first = messages[0].reconsume_times == 0
        return ConsumeStatus.RECONSUME_LATER if first else ConsumeStatus.SUCCESS

    consumer = PushConsumer(
        "NsConsumerGroup",
        cluster.namesrv_addr,
        namespace="nsA",
        listener=listener,
        consume_from="first",
        **FAST,
    )
    assert consumer.group == "nsA%NsConsumerGroup"
    consumer.subscribe("NsTopic")
    async with consumer:
        await until(lambda: len(seen) >= 2)
    assert seen == [("NsTopic", 0), ("NsTopic", 1)]  # the redelivery too (golden #77)
    [retried] = cluster.messages("%RETRY%nsA%NsConsumerGroup")
    back = golden(71).ext_fields  # type: ignore[attr-defined]
    assert retried.properties["RETRY_TOPIC"] == back["originTopic"] == "nsA%NsTopic"
    assert retried.properties["INSTANCE_ID"] == "nsA"


@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_a_namespaced_pull_consumer_reads_and_commits_under_wrapped_names(
    cluster: DevClusterThread,
) -> None:
    async with Producer("NsProducerGroup", cluster.namesrv_addr, namespace="nsA") as producer:
        await producer.send(Message("NsTopic", b"pulled"))
    async with PullConsumer("NsPullGroup", cluster.namesrv_addr, namespace="nsA") as consumer:
        queues = await consumer.queues("NsTopic")
        assert {q.topic for q in queues} == {"NsTopic"}  # as fetchMessageQueues shows them
        consumer.assign(queues)
        assert consumer.assignment() == queues
        await consumer.seek_to_beginning()
        got: dict[MessageQueue, list[ReceivedMessage]] = {}
        with anyio.fail_after(20):
            while not got:
                got = await consumer.getmany(timeout_ms=200)
        [(queue, [message])] = got.items()
        assert (queue.topic, message.topic, message.body) == ("NsTopic", "NsTopic", b"pulled")
        assert await consumer.position(queue) == 1
        await consumer.commit()
        assert await consumer.committed(queue) == 1
    assert cluster.consumer_offsets("broker-a") == {"nsA%NsTopic@nsA%NsPullGroup": {0: 1}}


@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_a_namespaced_timed_message_checks_the_wrapped_topics_brokers() -> None:
    with DevClusterThread(
        brokers=1, topics={"nsA%Timed": 1}, auto_create_topic=False, broker_version="5.x"
    ) as cluster:
        async with Producer("P", cluster.namesrv_addr, namespace="nsA") as producer:
            result = await producer.send(Message("Timed", b"later", delay_ms=60_000))
        assert result.queue.topic == "Timed"
