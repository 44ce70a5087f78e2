"""The pull consumer's commit rule and group membership (issue 32, docs/consuming.md 1.7):
``commit()`` stores only what was handed out (``async for`` one by one, ``getmany``); a
failed round moves no position; it heartbeats, so the broker knows the group and its
``%RETRY%`` topic, and unregisters at close."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from producer._types.consumer.received import ReceivedMessage as Received
from producer.consumer import MessageQueue, PullConsumer, ReceivedMessage
from producer.consumer._pull_buffer import PullBuffer
from producer.consumer._pull_step import Pulled
from producer.errors import ProducerError
from producer.testing import DevClusterThread, FaultSpec

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]
TOPIC = "Orders"


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=2, topics={TOPIC: 1}) as c:
        c.backlog(TOPIC, 10)  # 10 messages in each of the two queues
        yield c


async def one_queue(consumer: PullConsumer, broker: str = "broker-a") -> MessageQueue:
    queue = next(q for q in await consumer.queues(TOPIC) if q.broker_name == broker)
    consumer.assign([queue])
    consumer.seek(queue, 0)
    return queue


async def test_async_for_commits_only_the_messages_taken(cluster: DevClusterThread) -> None:
    async with PullConsumer("g", cluster.namesrv_addr) as consumer:
        queue = await one_queue(consumer)
        with anyio.fail_after(20):
            first = await consumer.__anext__()  # the pull brought all 10; one is taken
        assert first.queue_offset == 0
        await consumer.commit()
        assert await consumer.committed(queue) == 1  # not 10: nine were never seen
        taken = await consumer.getmany(max_records=3)  # from the buffer, handed out
        await consumer.commit()
        assert [m.queue_offset for m in taken[queue]] == [1, 2, 3]
        assert await consumer.committed(queue) == 4
        assert await consumer.position(queue) == 10  # the next pull starts past them all
    async with PullConsumer("g", cluster.namesrv_addr) as again:
        again.assign([queue])
        got = await again.getmany()
        await again.commit()
        assert [m.queue_offset for m in got[queue]] == list(range(4, 10))  # none lost
        assert await again.committed(queue) == 10


def pulled(queue: MessageQueue, offsets: range) -> Pulled:
    messages = [
        Received(TOPIC, b"x", {}, f"id{o}", "", queue, o, 0, 0, 0, 0, "", "") for o in offsets
    ]
    return Pulled(queue, offsets.stop, messages)


@pytest.mark.parametrize("take", ["pop", "take"])
def test_a_queue_pulled_in_the_same_round_but_untouched_commits_nothing(take: str) -> None:
    """Two queues' pulls buffered together (a round whose pulls both answered), one message
    handed out: the untouched queue's buffered ten count as nothing. ``async for`` on the
    dev cluster seldom buffers two queues at once (a long-polled round ends at the first
    answer with messages), so the buffer is driven as ``_round``'s results feed it."""
    a, b = MessageQueue(TOPIC, "broker-a", 0), MessageQueue(TOPIC, "broker-b", 0)
    buffer = PullBuffer()
    buffer.moved(a, 0)
    buffer.moved(b, 0)
    buffer.add(pulled(a, range(10)))
    buffer.add(pulled(b, range(10)))
    if take == "pop":
        assert buffer.pop().queue == a
    else:
        assert [m.queue_offset for m in buffer.take([a], 1)[a]] == [0]
    assert buffer.handed == {a: 1, b: 0}  # what commit() stores: b moves nothing


async def test_the_last_message_of_a_pull_commits_where_the_pull_ended(
    cluster: DevClusterThread,
) -> None:
    cluster.backlog(TOPIC, 3, tags="other")  # offsets 10..12, filtered out by the broker
    async with PullConsumer("g", cluster.namesrv_addr) as consumer:
        queue = await one_queue(consumer)
        consumer.assign([queue], "seed")
        got: list[ReceivedMessage] = []
        with anyio.fail_after(20):
            async for message in consumer:
                got.append(message)
                if len(got) == 10:
                    break
        await consumer.commit()
        assert await consumer.committed(queue) == 13  # past the skipped ones, as pulled


async def test_a_failed_round_moves_no_position(cluster: DevClusterThread) -> None:
    async with PullConsumer("g", cluster.namesrv_addr, request_timeout_ms=500) as consumer:
        queues = await consumer.queues(TOPIC)
        consumer.assign(queues)
        for queue in queues:
            consumer.seek(queue, 0)
        cluster.set_fault("broker-b", FaultSpec(blackhole=True))
        with pytest.raises(ProducerError):  # broker-a answered, broker-b timed out
            await consumer.getmany()
        cluster.clear_fault("broker-b")
        assert [await consumer.position(q) for q in queues] == [0, 0]
        await consumer.commit()
        assert [await consumer.committed(q) for q in queues] == [0, 0]
        got: dict[MessageQueue, list[int]] = {q: [] for q in queues}
        with anyio.fail_after(20):
            while sum(map(len, got.values())) < 20:
                for queue, batch in (await consumer.getmany(timeout_ms=200)).items():
                    got[queue].extend(m.queue_offset for m in batch)
        assert all(offsets == list(range(10)) for offsets in got.values())


async def test_the_broker_knows_the_group_and_its_retry_topic(cluster: DevClusterThread) -> None:
    async with PullConsumer("g", cluster.namesrv_addr) as consumer:
        await one_queue(consumer)
        with anyio.fail_after(20):  # heartbeats go in the background; wait for them
            while any("g" not in cluster.consumers(b) for b in cluster.broker_names):  # noqa: ASYNC110 - the cluster thread's state
                await anyio.sleep(0.02)
        for broker in cluster.broker_names:
            members = cluster.consumers(broker)["g"]
            assert list(members.values()) == [frozenset({TOPIC})]
        retry = await consumer.queues("%RETRY%g")  # routed: the broker created it
        assert retry and {q.topic for q in retry} == {"%RETRY%g"}
    assert all("g" not in cluster.consumers(b) for b in cluster.broker_names)
