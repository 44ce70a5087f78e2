"""Where a group with no committed offset starts (issue 39, docs/consuming.md 1.7), on
the dev cluster playing 4.9.4 (answers 0 for a never committed queue still in memory)
and 5.x (answers QUERY_NOT_FOUND when asked ``setZeroIfNotFound=false``): push
``consume_from`` and pull ``auto_offset_reset`` decide, a committed 0 is kept."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import anyio
import pytest

from producer import Credentials, Message, Producer
from producer.consumer import (
    ConsumeStatus,
    MessageQueue,
    PullConsumer,
    PushConsumer,
    ReceivedMessage,
)
from producer.testing import Account, DevClusterThread

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]
TOPIC = "Orders"
PER_QUEUE = 2500  # 2 brokers x 2 queues: 10,000 messages already there
FAST = {"persist_interval_ms": 50, "rebalance_interval_ms": 500, "suspend_timeout_ms": 1000}


@pytest.fixture(params=["4.9.4", "5.x"])
def cluster(request: pytest.FixtureRequest) -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=2, topics={TOPIC: 2}, broker_version=request.param) as c:
        yield c


async def publish(cluster: DevClusterThread, count: int) -> set[bytes]:
    bodies = {b"new-%d" % i for i in range(count)}
    async with Producer("pg", namesrv=cluster.namesrv_addr) as producer:
        for body in sorted(bodies):
            await producer.send(Message(TOPIC, body, tags="new"))
    return bodies


async def until(condition: Callable[[], bool], seconds: float = 60.0) -> None:
    with anyio.fail_after(seconds):
        while not condition():  # noqa: ASYNC110 - state of the consumer's own tasks
            await anyio.sleep(0.02)


def push(cluster: DevClusterThread, got: list[bytes], consume_from: str) -> PushConsumer:
    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        got.extend(m.body for m in messages)
        return ConsumeStatus.SUCCESS

    consumer = PushConsumer(
        "fresh", cluster.namesrv_addr, listener=listener, consume_from=consume_from, **FAST
    )  # type: ignore[arg-type]
    consumer.subscribe(TOPIC)
    return consumer


async def run_push(
    cluster: DevClusterThread, consume_from: str, expected: int
) -> tuple[list[bytes], set[bytes]]:
    """A push consumer started on the backlog; once it holds its queues, new messages
    are sent; returns what it consumed (all of it, nothing left in flight) and the new."""
    got: list[bytes] = []
    async with push(cluster, got, consume_from) as consumer:
        await until(lambda: len([q for q in consumer.assigned_queues if q.topic == TOPIC]) == 4)
        new = await publish(cluster, 20)
        await until(lambda: len(got) >= expected and new <= set(got))
        stats = consumer.stats
        await until(lambda: consumer.stats["held"] == consumer.stats["in_flight"] == 0)
    assert stats["duplicates_dropped"] == 0
    return got, new


async def test_a_new_push_group_from_last_skips_the_backlog(cluster: DevClusterThread) -> None:
    assert cluster.backlog(TOPIC, PER_QUEUE) == 10_000
    got, new = await run_push(cluster, "last", 20)
    assert sorted(got) == sorted(new)  # none of the 10,000, every new one, once


async def test_a_new_push_group_from_first_reads_the_backlog(cluster: DevClusterThread) -> None:
    cluster.backlog(TOPIC, PER_QUEUE)
    got, new = await run_push(cluster, "first", 10_020)
    assert sum(b.startswith(b"seed") for b in got) == 10_000  # the backlog, once
    assert new <= set(got) and len(got) == 10_020


async def commit_zero(cluster: DevClusterThread) -> list[MessageQueue]:
    async with PullConsumer("fresh", cluster.namesrv_addr) as committer:
        queues = await committer.queues(TOPIC)
        await committer.commit({q: 0 for q in queues})
    return queues


async def test_a_group_that_committed_zero_resumes_at_zero(cluster: DevClusterThread) -> None:
    cluster.backlog(TOPIC, 25)
    await commit_zero(cluster)
    got, new = await run_push(cluster, "last", 120)  # 0 is kept, not taken for "none"
    assert sum(b.startswith(b"seed") for b in got) == 100 and len(got) == 120
    assert new <= set(got)


async def test_a_new_pull_group_follows_auto_offset_reset(cluster: DevClusterThread) -> None:
    cluster.backlog(TOPIC, PER_QUEUE)
    async with PullConsumer("fresh", cluster.namesrv_addr) as latest:
        queues = await latest.queues(TOPIC)
        latest.assign(queues)
        assert [await latest.committed(q) for q in queues] == [None] * 4
        assert [await latest.position(q) for q in queues] == [PER_QUEUE] * 4
        assert await latest.getmany() == {}
        new = await publish(cluster, 8)
        got: list[bytes] = []
        with anyio.fail_after(30):
            while len(got) < 8:
                for batch in (await latest.getmany(timeout_ms=200)).values():
                    got.extend(m.body for m in batch)
        assert sorted(got) == sorted(new)
    async with PullConsumer("fresh", cluster.namesrv_addr, auto_offset_reset="earliest") as first:
        first.assign(queues)
        assert [await first.position(q) for q in queues] == [0] * 4


async def test_a_pull_group_that_committed_zero_starts_at_zero(cluster: DevClusterThread) -> None:
    cluster.backlog(TOPIC, 25)
    queues = await commit_zero(cluster)
    async with PullConsumer("fresh", cluster.namesrv_addr) as consumer:
        consumer.assign(queues)
        assert [await consumer.committed(q) for q in queues] == [0] * 4
        assert [await consumer.position(q) for q in queues] == [0] * 4


async def test_a_new_pull_group_on_a_queue_whose_oldest_messages_are_gone(
    cluster: DevClusterThread,
) -> None:
    """Offset 0 deleted (both versions answer 22 QUERY_NOT_FOUND): the same starts."""
    cluster.backlog(TOPIC, 25)
    cluster.drop_before(TOPIC, 10)
    async with PullConsumer("fresh", cluster.namesrv_addr) as latest:
        queues = await latest.queues(TOPIC)
        latest.assign(queues)
        assert [await latest.committed(q) for q in queues] == [None] * 4
        assert [await latest.position(q) for q in queues] == [25] * 4
    async with PullConsumer("fresh", cluster.namesrv_addr, auto_offset_reset="earliest") as first:
        first.assign(queues)
        assert [await first.position(q) for q in queues] == [10] * 4


async def test_the_offset_table_is_asked_with_the_acl_signature() -> None:
    """On an ACL broker GET_ALL_CONSUMER_OFFSET is signed as any request (4.9.4 does
    not count it an admin request): a new group is still told from a committed 0."""
    account = Account("ak", "sk", default_topic_perm="PUB|SUB")
    keys = Credentials("ak", "sk")
    with DevClusterThread(brokers=1, topics={TOPIC: 1}, acl=[account]) as cluster:
        cluster.backlog(TOPIC, 5)
        async with PullConsumer("fresh", cluster.namesrv_addr, credentials=keys) as consumer:
            queue = (await consumer.queues(TOPIC))[0]
            consumer.assign([queue])
            assert await consumer.committed(queue) is None
            assert await consumer.position(queue) == 5
            await consumer.commit({queue: 0})
            assert await consumer.committed(queue) == 0
