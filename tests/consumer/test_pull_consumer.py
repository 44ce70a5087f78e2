"""The pull consumer on asyncio and trio against the dev cluster (2 brokers x 4 queues):
assign, seek (offset, beginning, end, time), pull every status, tags, commit, iterate."""

from __future__ import annotations

import time
from collections.abc import Iterator

import anyio
import pytest

from producer import Message, Producer
from producer._remoting.codecs import DEFAULT_CODECS
from producer._remoting.consumer_requests import PullResult, PullStatus
from producer._remoting.message_codec import COMPRESSED_FLAG
from producer._remoting.store_record import StoreRecord
from producer.consumer import MessageQueue, PullConsumer, ReceivedMessage
from producer.consumer._pull_step import PullRequest, pull_once
from producer.errors import (
    InvalidOptionError,
    LocalProtocolError,
    OffsetOutOfRangeError,
    UndecodableBodyError,
)
from producer.testing import DevClusterThread
from tests.helpers.java_bodies import java_send, without_lz4
from tests.protocol.java5_vectors import LZ4_BODY, LZ4_CONTENT, SYS_FLAG_LZ4

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]
TOPIC = "Orders"


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=2, topics={TOPIC: 4}) as c:
        yield c


async def send(cluster: DevClusterThread, messages: list[Message]) -> None:
    async with Producer("pg", namesrv=cluster.namesrv_addr, compress_over=1024) as producer:
        for message in messages:
            await producer.send(message)


async def drain(consumer: PullConsumer, count: int) -> list[ReceivedMessage]:
    """Pull until ``count`` messages came (bounded: the test fails, it does not hang)."""
    got: list[ReceivedMessage] = []
    with anyio.fail_after(20):
        while len(got) < count:
            for batch in (await consumer.getmany(timeout_ms=200)).values():
                got.extend(batch)
    return got


def sample(n: int, tag: str = "t") -> list[Message]:
    return [
        Message(TOPIC, b"body-%d" % i, tags=tag, keys=[f"k{i}", "x"], properties={"n": str(i)})
        for i in range(n)
    ]


async def test_reads_exactly_what_was_sent(cluster: DevClusterThread) -> None:
    big = Message(TOPIC, b"z" * 5000, tags="t")  # over compress_over: stored zlib-compressed
    await send(cluster, [*sample(40), big])
    stored = {m.uniq_key: m for m in cluster.messages(TOPIC)}
    assert any(m.sys_flag & COMPRESSED_FLAG for m in stored.values())
    async with PullConsumer("g", cluster.namesrv_addr) as consumer:
        queues = await consumer.queues(TOPIC)
        assert len(queues) == 8
        consumer.assign(queues)
        await consumer.seek_to_beginning()
        got = await drain(consumer, 41)
        assert await consumer.getmany() == {}  # nothing more, and nothing twice
    assert sorted(m.msg_id for m in got) == sorted(stored)
    for message in got:
        sent = stored[message.msg_id]
        assert message.body == sent.body  # the compressed one arrives inflated
        assert (message.queue.broker_name, message.queue.queue_id, message.queue_offset) == (
            sent.broker_name,
            sent.queue_id,
            sent.queue_offset,
        )
        assert message.keys == sent.keys
        assert message.properties.get("n") == sent.properties.get("n")
        assert message.store_timestamp == sent.store_timestamp


async def test_seek_to_an_offset_and_to_the_end(cluster: DevClusterThread) -> None:
    await send(cluster, sample(16))
    async with PullConsumer("g", cluster.namesrv_addr) as consumer:
        queue = max(
            await consumer.queues(TOPIC), key=lambda q: len(_stored_in(cluster, q))
        )  # the fullest queue
        consumer.assign([queue])
        consumer.seek(queue, 1)
        got = await drain(consumer, len(_stored_in(cluster, queue)) - 1)
        assert [m.queue_offset for m in got] == list(range(1, len(got) + 1))
        await consumer.seek_to_end()
        assert await consumer.getmany(timeout_ms=50) == {}
        with pytest.raises(LocalProtocolError, match="not assigned"):
            consumer.seek(MessageQueue(TOPIC, "broker-x", 0), 0)


async def test_seek_to_a_time_starts_at_the_first_message_stored_then(
    cluster: DevClusterThread,
) -> None:
    await send(cluster, sample(12, "old"))
    boundary = max(m.store_timestamp for m in cluster.messages(TOPIC)) + 1
    with anyio.fail_after(5):  # the next messages must be stored at or after the boundary
        while time.time() * 1000 < boundary:  # noqa: ASYNC110 - a clock, not an event
            await anyio.sleep(0.001)
    await send(cluster, sample(12, "new"))
    async with PullConsumer("g", cluster.namesrv_addr) as consumer:
        consumer.assign(await consumer.queues(TOPIC))
        await consumer.seek_to_time(boundary)
        got = await drain(consumer, 12)
        assert await consumer.getmany() == {}
    assert {m.tags for m in got} == {"new"}


async def test_tags_are_filtered(cluster: DevClusterThread) -> None:
    await send(cluster, [*sample(6, "a"), *sample(6, "b"), *sample(6, "c")])
    async with PullConsumer("g", cluster.namesrv_addr, auto_offset_reset="earliest") as consumer:
        consumer.assign(await consumer.queues(TOPIC), "a || c")
        got = await drain(consumer, 12)
        assert await consumer.getmany() == {}
    assert sorted(m.tags or "" for m in got) == ["a"] * 6 + ["c"] * 6


async def test_an_offset_below_the_minimum_raises_or_moves_on(cluster: DevClusterThread) -> None:
    await send(cluster, sample(40))
    queue = MessageQueue(TOPIC, "broker-a", 0)
    total = len(_stored_in(cluster, queue))
    cluster.drop_before(TOPIC, 2, broker="broker-a", queue_id=0)
    async with PullConsumer("g", cluster.namesrv_addr, offset_out_of_range="raise") as strict:
        strict.assign([queue])
        strict.seek(queue, 0)
        with pytest.raises(OffsetOutOfRangeError) as caught:
            await strict.getmany()
        assert (caught.value.requested, caught.value.suggested) == (0, 2)
        assert await strict.position(queue) == 0  # not moved: the caller decides
        assert await strict.beginning_offsets([queue]) == {queue: 2}
    async with PullConsumer("g", cluster.namesrv_addr) as lenient:
        lenient.assign([queue])
        lenient.seek(queue, 0)
        got = await drain(lenient, total - 2)
    assert [m.queue_offset for m in got] == list(range(2, total))


async def test_commit_is_explicit_and_a_new_consumer_resumes_there(
    cluster: DevClusterThread,
) -> None:
    await send(cluster, sample(20))
    async with PullConsumer("g", cluster.namesrv_addr, auto_offset_reset="earliest") as first:
        first.assign(await first.queues(TOPIC))
        await drain(first, 20)
        assert all(not cluster.consumer_offsets(b) for b in cluster.broker_names)  # no commit
        await first.commit()
        committed = {q: await first.committed(q) for q in first.assignment()}
    assert sum(v or 0 for v in committed.values()) == 20
    await send(cluster, sample(3, "later"))
    async with PullConsumer("g", cluster.namesrv_addr, auto_offset_reset="earliest") as second:
        second.assign(await second.queues(TOPIC))
        got = await drain(second, 3)
    assert {m.tags for m in got} == {"later"}


async def test_async_for_long_polls_for_new_messages(cluster: DevClusterThread) -> None:
    got: list[ReceivedMessage] = []
    async with PullConsumer("g", cluster.namesrv_addr) as consumer:
        consumer.assign(await consumer.queues(TOPIC))
        await consumer.seek_to_end()
        async with anyio.create_task_group() as tg:
            tg.start_soon(send, cluster, sample(5, "live"))
            with anyio.fail_after(20):
                async for message in consumer:
                    got.append(message)
                    if len(got) == 5:
                        break
    assert sorted(m.body for m in got) == sorted(m.body for m in sample(5))


async def test_bad_options_are_refused() -> None:
    with pytest.raises(InvalidOptionError, match="auto_offset_reset"):
        PullConsumer("g", "127.0.0.1:9876", auto_offset_reset="middle")  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="max_pull_messages"):
        PullConsumer("g", "127.0.0.1:9876", max_pull_messages=0)


class _OnePull:
    """A broker API whose pulls answer with fixed records (the bad body case)."""

    def __init__(self, records: list[StoreRecord]) -> None:
        self.records = records
        self.group = "g"

    async def pull(self, params: object, timeout_ms: float) -> PullResult:
        offset = params.offset  # type: ignore[attr-defined]
        found = [r for r in self.records if r.queue_offset >= offset]
        return PullResult(PullStatus.FOUND, 3, 0, 3, found)


def _record(offset: int, body: bytes, sys_flag: int = 0) -> StoreRecord:
    return StoreRecord(
        TOPIC, 0, offset, 100 + offset, body, {}, 1, "127.0.0.1:1", 2, "127.0.0.1:2", sys_flag
    )


async def test_an_undecodable_body_is_never_handed_out() -> None:
    from producer.consumer._sql_filters import parse_subscription

    queue = MessageQueue(TOPIC, "broker-a", 0)
    api = _OnePull([_record(0, b"ok"), _record(1, b"not zlib", COMPRESSED_FLAG), _record(2, b"x")])
    ask = PullRequest("g", 32, 0, 1000.0, raise_out_of_range=False)
    every = parse_subscription(TOPIC, "*")
    first = await pull_once(api, queue, 0, every, ask)  # type: ignore[arg-type]
    assert [m.body for m in first.messages] == [b"ok"]
    assert first.position == 1  # stops in front of the bad one
    with pytest.raises(UndecodableBodyError) as caught:
        await pull_once(api, queue, first.position, every, ask)  # type: ignore[arg-type]
    assert caught.value.offset == 1
    assert "seek that queue to 2" in str(caught.value)


def _stored_in(cluster: DevClusterThread, queue: MessageQueue) -> list[object]:
    return [
        m
        for m in cluster.messages(TOPIC)
        if (m.broker_name, m.queue_id) == (queue.broker_name, queue.queue_id)
    ]


async def test_a_long_poll_returns_when_one_queue_has_a_message(cluster: DevClusterThread) -> None:
    async with PullConsumer("g", cluster.namesrv_addr) as consumer:
        consumer.assign(await consumer.queues(TOPIC))
        await consumer.seek_to_end()
        async with anyio.create_task_group() as tg:
            tg.start_soon(send, cluster, sample(1, "one"))
            with anyio.fail_after(5):  # the other 7 queues' pulls would be held for 30 s
                found = await consumer.getmany(timeout_ms=30_000)
    assert [m.tags for batch in found.values() for m in batch] == ["one"]


async def test_the_pull_consumer_decodes_with_its_codecs(cluster: DevClusterThread) -> None:
    """One pull step for both consumers, codecs included: an install without lz4 stops in
    front of a Java 5.x LZ4 body (``body_codecs`` is the seam, as the push consumer's)."""
    java_send(cluster, "LZ4", LZ4_BODY, SYS_FLAG_LZ4)  # Orders, broker-a, queue 0
    queue = MessageQueue(TOPIC, "broker-a", 0)
    async with PullConsumer("g", cluster.namesrv_addr) as consumer:
        consumer.assign([queue])
        consumer.seek(queue, 0)
        consumer.body_codecs = without_lz4()
        with anyio.fail_after(20), pytest.raises(UndecodableBodyError) as caught:
            await consumer.getmany()
        assert caught.value.offset == 0 and "lz4" in str(caught.value)
        consumer.body_codecs = DEFAULT_CODECS  # the extra installed: it decodes
        with anyio.fail_after(20):
            got = await consumer.getmany()
    assert [m.body for m in got[queue]] == [LZ4_CONTENT]
