"""SQL92 subscriptions end to end against the dev cluster (``enablePropertyFilter=true``):
the push and the pull consumer get exactly what the recorded broker delivered, a broker
without the property filter stops ``start()`` before any pull, and an expression that
does not parse fails at ``subscribe()`` with the broker's reason (docs/consuming.md 7)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import anyio
import pytest

from producer import Message, Producer
from producer.blocking import Producer as BlockingProducer
from producer.blocking import PullConsumer as BlockingPullConsumer
from producer.consumer import (
    ConsumeStatus,
    MessageQueue,
    PullConsumer,
    PushConsumer,
    ReceivedMessage,
)
from producer.errors import (
    BrokerError,
    BrokerSystemError,
    InvalidOptionError,
    SqlFilterError,
    SubscriptionParseError,
)
from producer.testing import DevClusterThread

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

TOPIC = "SqlTopic"
SQL = "a > 5 AND b = 'x'"
# The recorded session's seven messages (key, properties); its broker delivered two.
SEVEN = [
    ("sql-a10-bx", {"a": "10", "b": "x"}),
    ("sql-a3-bx", {"a": "3", "b": "x"}),
    ("sql-a10-by", {"a": "10", "b": "y"}),
    ("sql-noa-bx", {"b": "x"}),
    ("sql-a6-bx", {"a": "6", "b": "x"}),
    ("sql-aabc-bx", {"a": "abc", "b": "x"}),
    ("sql-a5.5-bx", {"a": "5.5", "b": "x"}),
]
DELIVERED = ["sql-a10-bx", "sql-a6-bx"]
FAST = {"persist_interval_ms": 50, "rebalance_interval_ms": 500, "suspend_timeout_ms": 1000}


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=1, topics={TOPIC: 1}, property_filter=True) as c:
        yield c


async def send_seven(cluster: DevClusterThread) -> None:
    async with Producer("SqlProducerGroup", namesrv=cluster.namesrv_addr) as producer:
        for key, props in SEVEN:
            await producer.send(
                Message(TOPIC, f"sql body {key}".encode(), keys=key, properties=props)
            )


async def until(condition: Callable[[], bool], seconds: float = 20.0) -> None:
    with anyio.fail_after(seconds):
        while not condition():  # noqa: ASYNC110 - state of another process-side task
            await anyio.sleep(0.02)


def committed(cluster: DevClusterThread) -> int | None:
    return cluster.consumer_offsets("broker-a").get(f"{TOPIC}@SqlConsumerGroup", {}).get(0)


async def test_the_push_consumer_gets_what_the_recorded_broker_delivered(
    cluster: DevClusterThread,
) -> None:
    await send_seven(cluster)
    got: list[ReceivedMessage] = []

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        got.extend(messages)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        "SqlConsumerGroup", cluster.namesrv_addr, listener=listener, consume_from="first", **FAST
    )
    consumer.subscribe(TOPIC, sql=SQL)
    async with consumer:
        # Done when the group's committed offset has passed all seven (filtered ones too).
        await until(lambda: committed(cluster) == 7)
    assert sorted(m.keys[0] for m in got) == sorted(DELIVERED)
    assert {m.properties["a"] for m in got} == {"10", "6"}


async def test_the_pull_consumer_gets_what_the_recorded_broker_delivered(
    cluster: DevClusterThread,
) -> None:
    await send_seven(cluster)
    async with PullConsumer("SqlPullGroup", cluster.namesrv_addr) as consumer:
        queues = await consumer.queues(TOPIC)
        consumer.assign(queues, sql=SQL)
        await consumer.seek_to_beginning()
        got: list[ReceivedMessage] = []
        with anyio.fail_after(20):
            while await consumer.position(queues[0]) < 7:
                for batch in (await consumer.getmany(timeout_ms=200)).values():
                    got.extend(batch)
    assert sorted(m.keys[0] for m in got) == sorted(DELIVERED)


async def test_a_broker_without_the_property_filter_stops_the_start() -> None:
    with DevClusterThread(brokers=1, topics={TOPIC: 1}) as cluster:
        consumer = PushConsumer("g", cluster.namesrv_addr, listener=lambda m: None, **FAST)
        consumer.subscribe(TOPIC, sql=SQL)
        with pytest.raises(BrokerSystemError, match="enablePropertyFilter=true"):
            await consumer.start()
        assert "closed" in repr(consumer)  # closed again: no task, no connection left
        async with PullConsumer("pg", cluster.namesrv_addr) as puller:
            puller.assign(await puller.queues(TOPIC), sql=SQL)
            with pytest.raises(BrokerSystemError, match="does not support"):
                await puller.getmany()


def test_an_expression_that_does_not_parse_fails_at_subscribe_with_the_brokers_reason() -> None:
    consumer = PushConsumer("g", "127.0.0.1:9876", listener=lambda m: None)
    with pytest.raises(SqlFilterError) as caught:
        consumer.subscribe(TOPIC, sql="a > AND b = 'x'")
    assert caught.value.reason.startswith(
        "org.apache.rocketmq.filter.parser.ParseException: "
        'Encountered " "AND" "AND "" at line 1, column 5.'
    )
    assert "fix the expression" in str(caught.value)
    with pytest.raises(InvalidOptionError, match="not both"):
        consumer.subscribe(TOPIC, "TagA", sql=SQL)
    with pytest.raises(InvalidOptionError, match="SQL92 expression"):
        consumer.subscribe(TOPIC, sql="  ")
    puller = PullConsumer("g", "127.0.0.1:9876")
    with pytest.raises(SqlFilterError):
        puller.assign([MessageQueue(TOPIC, "broker-a", 0)], sql="a >")
    assert puller.assignment() == []  # nothing half done


def test_a_broker_refusal_of_the_expression_is_a_subscription_parse_error() -> None:
    error = BrokerError.for_code(23, "org.apache.rocketmq.filter.parser.ParseException: ...")
    assert isinstance(error, SubscriptionParseError)
    assert not error.retriable


def test_the_blocking_pull_consumer_takes_sql_and_namespace_too() -> None:
    with DevClusterThread(brokers=1, topics={f"nsA%{TOPIC}": 1}, property_filter=True) as cluster:
        with BlockingProducer("SqlProducerGroup", cluster.namesrv_addr, namespace="nsA") as p:
            for key, props in SEVEN:
                p.send(Message(TOPIC, key.encode(), keys=key, properties=props))
        consumer = BlockingPullConsumer("g", cluster.namesrv_addr, namespace="nsA")
        try:
            queues = consumer.queues(TOPIC)
            consumer.assign(queues, sql=SQL)
            consumer.seek_to_beginning()
            got: list[ReceivedMessage] = []
            while consumer.position(queues[0]) < 7:
                for batch in consumer.getmany(timeout_ms=200).values():
                    got.extend(batch)
        finally:
            consumer.close()
    assert sorted(m.body.decode() for m in got) == sorted(DELIVERED)
    assert {m.topic for m in got} == {TOPIC}
