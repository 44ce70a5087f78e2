"""A consumer's set-up mistakes are loud (issue 34): a topic with no route is a WARNING
naming it, once, and is asked for again soon, so its messages flow as soon as it exists;
invalid topic names and tag expressions are refused at ``subscribe()``; a ``namesrv`` where
no name server answers fails the push consumer's start as it fails the others' first lookup
(issue 46)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import anyio
import pytest

from producer import LifecycleState, Message, Producer
from producer._consume.route_wait import (
    FIRST_ASKS,
    FIRST_DELAY_MS,
    MAX_DELAY_MS,
    MissingRoutes,
    ask_delay_ms,
)
from producer.consumer import (
    ConsumeStatus,
    MessageQueue,
    PullConsumer,
    PushConsumer,
    ReceivedMessage,
    SimpleConsumer,
)
from producer.errors import InvalidOptionError, NameServerError
from producer.testing import DevClusterThread
from tests.helpers.ports import closed_port

pytestmark = pytest.mark.timeout(60)

NEVER_MS = 600_000  # no periodic rebalance or heartbeat in these tests: only the watch


# -- the schedule (pure) ------------------------------------------------------------------


def test_a_missing_route_is_asked_for_every_second_then_less_often() -> None:
    delays = [ask_delay_ms(n) for n in range(1, 20)]
    assert delays[:FIRST_ASKS] == [FIRST_DELAY_MS] * FIRST_ASKS
    later = delays[FIRST_ASKS:]
    assert later == sorted(later) and later[0] > FIRST_DELAY_MS
    assert max(later) == MAX_DELAY_MS


def test_the_first_miss_of_a_topic_is_the_one_to_warn_about() -> None:
    missing = MissingRoutes()
    assert missing.delay_ms() is None
    assert missing.missed("Late") and not missing.missed("Late")
    assert missing.topics == ["Late"] and missing.delay_ms() == FIRST_DELAY_MS
    assert missing.found("Late") and not missing.found("Late")
    assert missing.delay_ms() is None and missing.missed("Late")  # missing again: warn again


# -- subscribe() refuses what cannot work ---------------------------------------------------


@pytest.mark.parametrize(
    ("topic", "expression", "says"),
    [
        ("Or ders", "*", "topic"),
        ("Orders", "a > 5", "sql="),
        ("Orders", "TagA | TagB", "'||'"),
        ("Orders", "TagA, TagB", "not a tag"),
        ("Orders", "* || TagA", "stands alone"),
        ("Orders", "color = 'red'", "sql="),
    ],
)
def test_subscribe_refuses_what_no_broker_can_match(topic: str, expression: str, says: str) -> None:
    consumer = PushConsumer("g", "127.0.0.1:9876", listener=lambda m: ConsumeStatus.SUCCESS)
    with pytest.raises(InvalidOptionError, match=says.replace("*", r"\*").replace("|", r"\|")):
        consumer.subscribe(topic, expression)


@pytest.mark.parametrize("expression", ["*", "", None, "TagA", "TagA || TagB", " TagA||TagB ||"])
def test_subscribe_takes_tag_expressions_as_java_does(expression: str | None) -> None:
    consumer = PushConsumer("g", "127.0.0.1:9876", listener=lambda m: ConsumeStatus.SUCCESS)
    consumer.subscribe("Orders", expression)  # type: ignore[arg-type]


# -- a topic created after its consumer started (dev cluster) -------------------------------


class _RouteLog(logging.Handler):
    """Counts the consumer's records about one topic; wakes the test after enough misses."""

    def __init__(self, topic: str) -> None:
        super().__init__(logging.DEBUG)
        self.topic = topic
        self.warnings: list[str] = []
        self.misses = 0
        self.asked_again = anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if repr(self.topic) not in record.getMessage():
            return
        if record.levelno >= logging.WARNING:
            self.warnings.append(record.getMessage())
        self.misses += 1
        if self.misses >= 3:
            self.asked_again.set()


@pytest.fixture
def route_log() -> Iterator[_RouteLog]:
    handler = _RouteLog("Late")
    logger = logging.getLogger("producer.consumer")
    old_level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


@pytest.mark.anyio
async def test_a_topic_created_later_is_consumed_without_waiting_for_a_rebalance(
    route_log: _RouteLog,
) -> None:
    got = anyio.Event()
    bodies: list[bytes] = []

    async def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:  # on the loop
        bodies.extend(m.body for m in messages)
        got.set()
        return ConsumeStatus.SUCCESS

    with DevClusterThread(brokers=1, topics={"Other": 1}) as cluster:
        consumer = PushConsumer(
            "late-cg",
            cluster.namesrv_addr,
            listener=listener,
            consume_from="first",
            rebalance_interval_ms=NEVER_MS,
            heartbeat_interval_ms=NEVER_MS,
        )
        consumer.subscribe("Late")
        async with consumer:
            with anyio.fail_after(30):  # a hang guard: the watch asks every second
                await route_log.asked_again.wait()  # three asks found nothing
            assert consumer.assigned_queues == []
            cluster.add_topic("Late", 2)
            async with Producer("late-pg", namesrv=cluster.namesrv_addr) as producer:
                await producer.send(Message("Late", b"first"))
            with anyio.fail_after(30):  # the rebalance timer (600 s) cannot be what delivers
                await got.wait()
    assert bodies == [b"first"]
    assert len(route_log.warnings) == 1, route_log.warnings  # once, however often asked
    assert "'Late' has no route" in route_log.warnings[0]


@pytest.mark.anyio
async def test_no_name_server_answering_fails_the_push_consumers_start_as_the_others() -> None:
    addr = f"127.0.0.1:{closed_port()}"
    consumer = PushConsumer("billing", addr, listener=lambda messages: ConsumeStatus.SUCCESS)
    consumer.subscribe("Orders")
    with pytest.raises(NameServerError, match="no name server answered") as pushed:
        await consumer.start()
    assert consumer.state is LifecycleState.CLOSED  # nothing left running or connected
    async with PullConsumer("billing", addr) as pull:
        with pytest.raises(NameServerError) as pulled:
            await pull.queues("Orders")
    async with SimpleConsumer("billing", addr) as simple:
        simple.subscribe("Orders")
        with pytest.raises(NameServerError) as received:
            await simple.receive()
    assert str(pushed.value) == str(pulled.value) == str(received.value)  # one definition
    assert addr in str(pushed.value)


# -- a listener that forgets to return -------------------------------------------------------


@pytest.mark.anyio
async def test_a_listener_that_returns_nothing_is_retried_and_told_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    first_tries: list[bytes] = []
    retried = anyio.Event()
    bodies = [b"a", b"b", b"c"]

    async def listener(messages: list[ReceivedMessage]) -> ConsumeStatus | None:
        message = messages[0]
        if message.reconsume_times == 0:
            first_tries.append(message.body)
            return None  # the forgotten return
        if message.body == bodies[-1]:
            retried.set()
        return ConsumeStatus.SUCCESS

    fast_levels = " ".join(["100ms"] * 18)
    with DevClusterThread(brokers=1, topics={"Orders": 1}, delay_levels=fast_levels) as cluster:
        async with Producer("pg", namesrv=cluster.namesrv_addr) as producer:
            for body in bodies:
                await producer.send(Message("Orders", body))
        consumer = PushConsumer(
            "forgetful", cluster.namesrv_addr, listener=listener, consume_from="first"
        )
        consumer.subscribe("Orders")
        with caplog.at_level(logging.DEBUG, logger="producer.consumer"):
            async with consumer:
                with anyio.fail_after(30):  # a hang guard: retries come after 100 ms
                    await retried.wait()
    assert first_tries == bodies  # each returned None once, and came back: nothing lost
    said = [r for r in caplog.records if "not a ConsumeStatus" in r.getMessage()]
    assert [r.levelname for r in said] == ["ERROR"], said  # once, not a WARNING per batch
    assert "return ConsumeStatus.SUCCESS" in said[0].getMessage()


def test_the_pull_consumer_refuses_a_tag_expression_that_cannot_be_tags() -> None:
    consumer = PullConsumer("g", "127.0.0.1:9876")
    with pytest.raises(InvalidOptionError, match=r"assign\(expression='a > 5'\).*sql="):
        consumer.assign([MessageQueue("Orders", "broker-a", 0)], "a > 5")
    consumer.assign([MessageQueue("Orders", "broker-a", 0)], "TagA || TagB")
    assert consumer.assignment() == [MessageQueue("Orders", "broker-a", 0)]
