"""Timed delivery (5.x TIMER_DELIVER_MS / TIMER_DELAY_MS): sent alone, never batched,
validated, delivered at its time by a 5.x dev cluster, refused before anything is written
when a broker of the topic is 4.x."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator

import anyio
import pytest

from producer import Message, Producer
from producer.consumer import ConsumeStatus, PushConsumer, ReceivedMessage
from producer.errors import MessageValidationError, TimedDeliveryUnsupportedError
from producer.testing import DevClusterThread
from tests.helpers.push import FAST, until

pytestmark = pytest.mark.anyio
START_MS = time.time_ns() // 1_000_000  # the brokers' fake clock starts at the wall clock


class FakeClock:
    def __init__(self) -> None:
        self.now_ms = START_MS

    def __call__(self) -> int:
        return self.now_ms


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["4.9.4", "5.x"])
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def either(version: str, clock: FakeClock) -> Iterator[DevClusterThread]:
    """The dev cluster playing each broker version in turn."""
    with DevClusterThread(
        brokers=1, topics={"Orders": 1}, broker_version=version, clock_ms=clock
    ) as cluster:
        yield cluster


@pytest.fixture
def five(clock: FakeClock) -> Iterator[DevClusterThread]:
    with DevClusterThread(
        brokers=2, topics={"Orders": 2}, broker_version="5.x", clock_ms=clock
    ) as cluster:
        yield cluster


async def test_a_timed_message_in_a_burst_of_100_is_sent_alone_and_arrives_at_its_time(
    five: DevClusterThread, clock: FakeClock
) -> None:
    got: list[ReceivedMessage] = []

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        got.extend(messages)
        return ConsumeStatus.SUCCESS

    results = {}
    async with Producer("pg", five.namesrv_addr) as producer:  # batching on (the default)
        # A first timed send learns the brokers' versions (one probe each); after it the
        # check does not yield, so the burst's timed message meets the others in one turn.
        warm = await producer.send(Message("Orders", b"warm", delay_ms=5000))

        async def send(i: int) -> None:
            timed = {"delay_ms": 5000} if i == 50 else {}
            results[i] = await producer.send(Message("Orders", b"%d" % i, **timed))

        async with anyio.create_task_group() as tg:
            for i in range(100):
                tg.start_soon(send, i)
    assert len(five.messages("Orders")) == 99  # the 99 others, stored for delivery now
    waiting = five.messages("rmq_sys_wheel_timer")
    assert {m.uniq_key for m in waiting} == {warm.msg_id, results[50].msg_id}
    asked_ms = int(waiting[0].properties["TIMER_OUT_MS"])
    assert all(int(m.properties["TIMER_OUT_MS"]) == asked_ms == START_MS + 5000 for m in waiting)
    handle = base64.urlsafe_b64decode(results[50].recall_handle or "").decode().split()
    assert handle == [
        "v1",
        "Orders",
        results[50].queue.broker_name,
        str(asked_ms + 1),
        results[50].msg_id,
    ]
    assert all(results[i].recall_handle is None for i in results if i != 50)
    consumer = PushConsumer(
        "cg", five.namesrv_addr, listener=listener, consume_from="first", **FAST
    )
    consumer.subscribe("Orders", "*")
    async with consumer:
        await until(lambda: len(got) == 99)
        clock.now_ms = asked_ms - 1
        five.tick()
        assert len(five.messages("Orders")) == 99  # not a millisecond early
        clock.now_ms = asked_ms
        five.tick()
        await until(lambda: len(got) == 101)
    timed = [m for m in got if m.msg_id in (warm.msg_id, results[50].msg_id)]
    assert sorted(m.body for m in timed) == [b"50", b"warm"]
    assert all(m.deliver_at_ms == asked_ms == m.store_timestamp for m in timed)
    assert all(m.deliver_at_ms is None for m in got if m not in timed)


async def test_a_timed_message_to_a_4x_broker_raises_before_anything_is_written() -> None:
    with DevClusterThread(brokers=2, topics={"Orders": 2}) as four:
        async with Producer("pg", four.namesrv_addr) as producer:
            in_an_hour = time.time_ns() // 1_000_000 + 3_600_000
            for timed in ({"delay_ms": 1000}, {"deliver_at_ms": in_an_hour}):
                with pytest.raises(TimedDeliveryUnsupportedError, match="V4_9_4") as caught:
                    await producer.send(Message("Orders", b"x", **timed))
                assert "delay_level" in str(caught.value)
                with pytest.raises(TimedDeliveryUnsupportedError):
                    await producer.send_async(Message("Orders", b"x", **timed))
                with pytest.raises(TimedDeliveryUnsupportedError):
                    await producer.send_oneway(Message("Orders", b"x", **timed))
            assert (await producer.send(Message("Orders", b"y", delay_level=1))).status.is_ok
        assert four.message_count("Orders") == 0  # only the delay-level one, in the schedule
        assert four.message_count("SCHEDULE_TOPIC_XXXX") == 1


async def test_send_batch_refuses_a_timed_message(either: DevClusterThread) -> None:
    async with Producer("pg", either.namesrv_addr) as producer:
        batch = [Message("Orders", b"a"), Message("Orders", b"b", delay_ms=10)]
        with pytest.raises(MessageValidationError, match="no timed delivery in a batch"):
            await producer.send_batch(batch)
    assert either.message_count() == 0


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"delay_ms": -1}, "delay_ms must be a positive int"),
        ({"delay_ms": 0}, "delay_ms must be a positive int"),
        ({"deliver_at_ms": 1000}, "deliver_at_ms must be in the future"),
        ({"delay_ms": 3 * 24 * 3600 * 1000 + 1}, "at most 259200000 ms"),
        ({"delay_ms": 5, "deliver_at_ms": START_MS + 10**6}, "delay_ms must be None"),
        ({"delay_ms": 5, "delay_level": 2}, "delay_level must be None"),
        ({"properties": {"TIMER_DELIVER_MS": "1"}}, "reserved"),
        ({"properties": {"__BORNHOST": "h"}}, "reserved"),
    ],
)
async def test_timed_fields_and_5x_reserved_names_are_validated(
    either: DevClusterThread, fields: dict[str, object], error: str
) -> None:
    """Checked before the broker's version: a 4.x broker's user sees the same mistakes."""
    async with Producer("pg", either.namesrv_addr) as producer:
        with pytest.raises(MessageValidationError, match=error):
            await producer.send(Message("Orders", b"x", **fields))  # type: ignore[arg-type]
    assert either.message_count() == 0


async def test_one_timed_send_waits_on_5x_and_is_refused_unwritten_on_4x(
    either: DevClusterThread, version: str, clock: FakeClock
) -> None:
    timed = Message("Orders", b"t", delay_ms=1000)
    async with Producer("pg", either.namesrv_addr) as producer:
        if version == "4.9.4":
            with pytest.raises(TimedDeliveryUnsupportedError, match="V4_9_4"):
                await producer.send(timed)
            assert either.message_count() == 0  # nothing written, not even to a timer topic
            return
        result = await producer.send(timed)
    assert result.status.is_ok and either.message_count("Orders") == 0
    clock.now_ms = START_MS + 999
    either.tick()
    assert either.message_count("Orders") == 0
    clock.now_ms = START_MS + 1000
    either.tick()
    assert [m.uniq_key for m in either.messages("Orders")] == [result.msg_id]
