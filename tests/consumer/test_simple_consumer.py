"""``SimpleConsumer`` (pop, issue 38) on asyncio and trio against the dev cluster in 5.x
mode, on one clock the test moves: the brokers' wall clock and the consumer's deadlines
move together (deadlines still follow the event loop, plus the test's jumps), so invisible
times run out without anyone sleeping."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from producer import Message, Producer
from producer._remoting.request_codes import RequestCode
from producer.consumer import PoppedMessage, SimpleConsumer
from producer.errors import (
    ConnectError,
    InvalidOptionError,
    LocalProtocolError,
    PopUnsupportedError,
    ReceiptHandleExpiredError,
)
from producer.testing import DevClusterThread, FaultSpec
from tests.helpers.clocks import MovingClock
from tests.protocol.pop_session import frames

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]
TOPIC, GROUP = "Orders", "Pop_Group"  # an underscore, as in %RETRY%Pop_Group_Orders
INVISIBLE = 30_000


@pytest.fixture
def clock() -> MovingClock:
    return MovingClock()


@pytest.fixture
def cluster(clock: MovingClock) -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=1, topics={TOPIC: 2}, broker_version="5.x", clock_ms=clock) as c:
        yield c


async def send(cluster: DevClusterThread, count: int, topic: str = TOPIC, tag: str = "t") -> None:
    async with Producer("pg", namesrv=cluster.namesrv_addr) as producer:
        for i in range(count):
            await producer.send(Message(topic, b"m%d" % i, tags=tag, keys=[f"k{i}"]))


def consumer(cluster: DevClusterThread, clock: MovingClock, **options: object) -> SimpleConsumer:
    made = SimpleConsumer(GROUP, cluster.namesrv_addr, await_duration_ms=0, clock=clock, **options)  # type: ignore[arg-type]
    made.subscribe(TOPIC)
    return made


async def receive_all(c: SimpleConsumer, count: int) -> list[PoppedMessage]:
    got: list[PoppedMessage] = []
    for _ in range(4):  # the consumer turns over topics and brokers; one broker here
        got += await c.receive(32, INVISIBLE)
        if len(got) >= count:
            break
    return got


async def test_received_and_acked_messages_never_come_back(
    cluster: DevClusterThread, clock: MovingClock
) -> None:
    await send(cluster, 5)
    async with consumer(cluster, clock) as c:
        got = await receive_all(c, 5)
        assert sorted(m.body for m in got) == [b"m%d" % i for i in range(5)]
        assert {m.queue.queue_id for m in got} == {0, 1} and all(
            m.reconsume_times == 0 for m in got
        )
        for message in got:
            await c.ack(message)
            await c.ack(message)  # a second ack sends nothing
            assert message.is_acked
        clock.advance(cluster, 10 * INVISIBLE)
        assert await c.receive(32, INVISIBLE) == []
    assert cluster.message_count(f"%RETRY%{GROUP}_{TOPIC}") == 0


async def test_a_message_not_acked_in_time_comes_back_and_its_old_copy_cannot_be_acked(
    cluster: DevClusterThread, clock: MovingClock
) -> None:
    await send(cluster, 2)
    async with consumer(cluster, clock) as c:
        first, second = await receive_all(c, 2)
        await c.ack(first)
        clock.advance(cluster, INVISIBLE)
        (again,) = await c.receive(32, INVISIBLE)
        assert (again.msg_id, again.body, again.topic, again.reconsume_times) == (
            second.msg_id, second.body, TOPIC, 1,
        )  # fmt: skip
        with pytest.raises(ReceiptHandleExpiredError) as caught:
            await c.ack(second)  # its handle's time is up: the broker would say 0 and redeliver
        assert caught.value.will_be_redelivered and second.msg_id in str(caught.value)
        await c.ack(again)  # acked on the pop retry topic
        clock.advance(cluster, 10 * INVISIBLE)
        assert await c.receive(32, INVISIBLE) == []


async def test_ack_after_a_change_uses_the_new_handle(
    cluster: DevClusterThread, clock: MovingClock
) -> None:
    """The broker answers an ack with the pre-change handle with 0 and redelivers the
    message all the same (golden B6): the consumer acks with the current handle."""
    await send(cluster, 1)
    async with consumer(cluster, clock) as c:
        (message,) = await receive_all(c, 1)
        old = message.receipt_handle
        clock.advance(cluster, INVISIBLE - 1000)
        renewed = await c.change_invisible_duration(message, 60_000)
        assert renewed is message  # what to ack next: the message, holding the new handle
        clock.advance(cluster, 5000)  # past the first deadline, within the new one
        await c.ack(renewed)
        clock.advance(cluster, 10 * 60_000)
        assert await c.receive(32, INVISIBLE) == []  # an ack with the old handle: it would
        assert message.receipt_handle.split(" ")[:3] != old.split(" ")[:3]


async def test_consumers_of_a_group_share_one_queue(
    cluster: DevClusterThread, clock: MovingClock
) -> None:
    cluster.add_topic("One", 1)
    await send(cluster, 4, topic="One")
    a = SimpleConsumer(GROUP, cluster.namesrv_addr, await_duration_ms=0, clock=clock)
    b = SimpleConsumer(GROUP, cluster.namesrv_addr, await_duration_ms=0, clock=clock)
    other = SimpleConsumer("OtherGroup", cluster.namesrv_addr, clock=clock)
    async with a, b, other:
        a.subscribe("One")
        b.subscribe("One")
        got_a = await a.receive(2, INVISIBLE)
        got_b = await b.receive(2, INVISIBLE)
        assert len(got_a) == len(got_b) == 2
        assert {m.msg_id for m in got_a}.isdisjoint(m.msg_id for m in got_b)
        with pytest.raises(LocalProtocolError, match="use the consumer that received it"):
            await other.ack(got_a[0])
        for message in got_a:
            await b.ack(message)  # another consumer of the same group may ack it


async def test_async_for_hands_out_messages_one_at_a_time(
    cluster: DevClusterThread, clock: MovingClock
) -> None:
    await send(cluster, 3)
    async with consumer(cluster, clock, receive_batch=2) as c:
        seen = []
        with anyio.fail_after(20):
            async for message in c:
                seen.append(message.body)
                await c.ack(message)
                if len(seen) == 3:
                    break
    assert sorted(seen) == [b"m0", b"m1", b"m2"]


async def test_orderly_pop_gives_a_queues_next_message_only_after_the_ack(
    cluster: DevClusterThread, clock: MovingClock
) -> None:
    cluster.add_topic("Fifo", 1, message_type="FIFO")
    await send(cluster, 3, topic="Fifo")
    async with SimpleConsumer(
        GROUP, cluster.namesrv_addr, await_duration_ms=0, clock=clock, orderly=True
    ) as c:
        c.subscribe("Fifo")
        (m0,) = await c.receive(1, INVISIBLE)
        assert await c.receive(1, INVISIBLE) == []  # the queue is held while m0 is out
        clock.advance(cluster, INVISIBLE)
        (again,) = await c.receive(1, INVISIBLE)  # not acked in time: m0 again, first
        assert (again.body, again.reconsume_times) == (m0.body, 1)
        await c.ack(again)
        (m1,) = await c.receive(1, INVISIBLE)
        assert m1.body == b"m1"


@pytest.mark.parametrize(
    ("call", "match"),
    [
        ({"max_messages": 33}, "max_messages must be an int in 1..32"),
        ({"max_messages": 0}, "max_messages"),
        ({"invisible_duration_ms": 0}, "a positive int of ms .* could never be acked"),
        ({"invisible_duration_ms": -1}, "invisible_duration_ms"),
        ({"invisible_duration_ms": 1 << 63}, "invisible_duration_ms"),
    ],
)
async def test_bad_input_is_refused_before_anything_is_popped(
    cluster: DevClusterThread, clock: MovingClock, call: dict[str, int], match: str
) -> None:
    await send(cluster, 1)
    async with consumer(cluster, clock) as c:
        with pytest.raises(InvalidOptionError, match=match):
            await c.receive(**call)
        (message,) = await receive_all(c, 1)  # nothing was lost
        with pytest.raises(InvalidOptionError):
            await c.change_invisible_duration(message, 0)
        with pytest.raises(LocalProtocolError, match="only messages a SimpleConsumer received"):
            await c.ack(object())  # type: ignore[arg-type]
        await c.ack(message)


async def test_a_4x_broker_is_named_before_anything_is_popped(clock: MovingClock) -> None:
    with DevClusterThread(brokers=1, topics={TOPIC: 1}, broker_version="4.9.4") as old:
        async with SimpleConsumer(GROUP, old.namesrv_addr, clock=clock) as c:
            c.subscribe(TOPIC)
            with pytest.raises(
                PopUnsupportedError, match=r"broker broker-a \(127\.0\.0\.1:\d+\) answers as V4_9_4"
            ):
                await c.receive()


async def test_receive_needs_a_subscription_and_a_start(cluster: DevClusterThread) -> None:
    idle = SimpleConsumer(GROUP, cluster.namesrv_addr)
    with pytest.raises(LocalProtocolError, match="async with"):
        await idle.receive()
    async with SimpleConsumer(GROUP, cluster.namesrv_addr) as c:
        with pytest.raises(LocalProtocolError, match="subscribe"):
            await c.receive()


async def test_ack_batch_acks_every_message_in_one_request_per_broker(
    cluster: DevClusterThread, clock: MovingClock
) -> None:
    await send(cluster, 6)
    async with consumer(cluster, clock) as c:
        got = await receive_all(c, 6)
        assert len(got) == 6
        await c.ack_batch(got[:5])
        assert [m.is_acked for m in got] == [True] * 5 + [False]
        clock.advance(cluster, INVISIBLE)
        (back,) = await c.receive(32, INVISIBLE)  # only the one left out comes back
        assert back.msg_id == got[5].msg_id
        with pytest.raises(ReceiptHandleExpiredError):
            await c.ack_batch([got[5]])
        await c.ack_batch([back])


async def test_a_fifo_topic_popped_without_orderly_is_refused_before_anything_is_popped(
    cluster: DevClusterThread, clock: MovingClock
) -> None:
    cluster.add_topic("Fifo", 1, message_type="FIFO")
    await send(cluster, 1, topic="Fifo")
    async with SimpleConsumer(GROUP, cluster.namesrv_addr, await_duration_ms=0, clock=clock) as c:
        c.subscribe("Fifo")
        with pytest.raises(
            InvalidOptionError, match=r"topic Fifo is a FIFO topic on broker broker-a.*orderly=True"
        ):
            await c.receive()
    async with SimpleConsumer(
        GROUP, cluster.namesrv_addr, await_duration_ms=0, clock=clock, orderly=True
    ) as ordered:
        ordered.subscribe("Fifo")
        (message,) = await ordered.receive(1, INVISIBLE)  # nothing was lost
        assert message.body == b"m0" and message.reconsume_times == 0
        await ordered.ack(message)


async def test_receive_gathers_up_to_n_from_every_broker_and_queue(clock: MovingClock) -> None:
    with DevClusterThread(brokers=3, topics={TOPIC: 2}, broker_version="5.x", clock_ms=clock) as c3:
        await send(c3, 6)  # one per queue: 3 brokers x 2 queues
        async with consumer(c3, clock) as c:
            first = await c.receive(4, INVISIBLE)  # never more than asked for
            rest = await c.receive(16, INVISIBLE)  # all that is left, in one call
            assert await c.receive(16, INVISIBLE) == []
            await c.ack_batch(first + rest)
    assert (len(first), len(rest)) == (4, 2)
    got = first + rest
    assert sorted(m.body for m in got) == [b"m%d" % i for i in range(6)]
    assert len({m.queue.broker_name for m in first}) >= 2  # more than one broker per call


def served_invisible_times() -> set[int]:
    """The invisible times of the POPs and CHANGEs the real 5.2.0 broker answered 0 in
    the recorded session (golden b_client_api)."""
    answered = {f["opaque"] for f in frames().values() if f["is_response"] and f["code"] == 0}
    return {
        int(f["header"]["extFields"]["invisibleTime"])
        for f in frames().values()
        if not f["is_response"]
        and f["code"] in (RequestCode.POP_MESSAGE, RequestCode.CHANGE_MESSAGE_INVISIBLETIME)
        and f["opaque"] in answered
    }


async def test_the_invisible_times_a_real_broker_serves_are_taken(
    cluster: DevClusterThread, clock: MovingClock
) -> None:
    served = served_invisible_times()
    assert {6000, 8000} <= served  # under the 5.x proxy's 10 s: a broker checks none
    shortest = min(served)
    await send(cluster, 1)
    async with consumer(cluster, clock) as c:
        (message,) = await c.receive(1, shortest)
        assert message.receipt.handle.invisible_time == shortest
        for ms in sorted(served):
            message = await c.change_invisible_duration(message, ms)
            assert message.receipt.handle.invisible_time == ms
        clock.advance(cluster, max(served))  # the last change's time runs out: it comes back
        (again,) = await c.receive(1, shortest)
        assert (again.msg_id, again.reconsume_times) == (message.msg_id, 1)
        await c.ack(again)


async def test_a_broker_that_cannot_be_reached_is_passed_over_while_others_answer(
    clock: MovingClock, caplog: pytest.LogCaptureFixture
) -> None:
    with DevClusterThread(brokers=3, topics={TOPIC: 2}, broker_version="5.x", clock_ms=clock) as c3:
        await send(c3, 6)
        c3.set_fault("broker-b", FaultSpec(down=True))
        async with consumer(c3, clock) as c:
            got = await c.receive(16, INVISIBLE)
            assert {m.queue.broker_name for m in got} == {"broker-a", "broker-c"}
            assert len(got) == 4
            assert any("broker broker-b" in r.getMessage() for r in caplog.records)
            for name in ("broker-a", "broker-c"):
                c3.set_fault(name, FaultSpec(down=True))
            with pytest.raises(ConnectError):  # none answers: the error is the caller's
                await c.receive(16, INVISIBLE)
