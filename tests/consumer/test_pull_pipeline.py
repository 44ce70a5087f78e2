"""The push consumer's pull pipeline against the dev cluster (docs/consuming.md 2.13): the
next pull of a queue is at the broker while the listener holds a batch, and (asyncio)
before the answer before it is decoded; flow control stops the pulls of a queue over its
threshold and lets them go once it drains; a queue's order and the offset rules hold;
a dropped queue's buffered messages are not delivered. Observed through the broker's held
pulls and counts, never by timing."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from types import ModuleType

import anyio
import pytest

from producer._remoting.codecs import BodyCodecs
from producer.consumer import ConsumeStatus, ReceivedMessage
from producer.testing import DevClusterThread
from tests.helpers.java_bodies import java_send
from tests.helpers.push import FAST_LEVELS, consumer, orderly_consumer, until
from tests.protocol.java5_vectors import LZ4_BODY, LZ4_CONTENT, SYS_FLAG_LZ4

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]
# No other frames while a test watches one pull: no persisting or rebalancing, and the
# retry topic's pull held for the whole test.
QUIET = {
    "persist_interval_ms": 60_000,
    "rebalance_interval_ms": 60_000,
    "suspend_timeout_ms": 30_000,
}


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=1, topics={"Orders": 1}, delay_levels=FAST_LEVELS) as c:
        yield c


def held_at(cluster: DevClusterThread) -> list[int]:
    """The offsets the broker's held pulls of ``Orders`` queue 0 ask for."""
    return cluster.held_pulls("broker-a").get("Orders", {}).get(0, [])


def numbers(messages: list[ReceivedMessage]) -> list[int]:
    """The ``n`` of each ``seed-<n>`` body (``DevClusterThread.backlog``'s)."""
    return [int(m.body.split(b"-")[1]) for m in messages]


async def test_the_next_pull_waits_at_the_broker_while_the_listener_holds_a_batch(
    cluster: DevClusterThread,
) -> None:
    cluster.backlog("Orders", 3)
    release = anyio.Event()
    seen: list[int] = []

    async def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        seen.extend(numbers(messages))
        await release.wait()
        return ConsumeStatus.SUCCESS

    async with consumer(cluster, listener, consume_batch_size=3) as c:
        await until(lambda: len(seen) == 3)
        # The batch is still in the listener, and the pull after it is at the broker.
        await until(lambda: held_at(cluster) == [3])
        assert c.stats["in_flight"] == 1 and c.stats["held"] == 3
        release.set()
        await until(lambda: c.stats["held"] == 0)
    assert seen == [0, 1, 2]


# asyncio only: on trio a request leaves at a task switch, so the next pull follows the
# hand-over there (docs/consuming.md 2.13) and there is no pull ahead to observe.
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_next_pull_leaves_before_the_answer_is_decoded(
    cluster: DevClusterThread, anyio_backend: str
) -> None:
    held_while_decoding: list[list[int]] = []

    def import_module(name: str) -> ModuleType:
        # The first LZ4 body is being decoded (the library loads on first use): the
        # client's loop is stopped here, so only a pull already sent can be held now.
        for _ in range(500):  # the broker's thread takes it: up to 5 s, not a margin
            if held_at(cluster):
                break
            time.sleep(0.01)
        held_while_decoding.append(held_at(cluster))
        return __import__(name, fromlist=["_"])

    seen: list[bytes] = []

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        seen.extend(m.body for m in messages)
        return ConsumeStatus.SUCCESS

    c = consumer(cluster, listener, **QUIET)
    c.options = dataclasses.replace(c.options, body_codecs=BodyCodecs(import_module))
    async with c:
        await until(lambda: held_at(cluster) == [0])  # idle: every pull held
        java_send(cluster, "LZ4", LZ4_BODY, SYS_FLAG_LZ4)  # offset 0: its answer comes alone
        await until(lambda: seen == [LZ4_CONTENT])
    assert held_while_decoding == [[1]]  # the pull from offset 1 was at the broker


async def test_flow_control_stops_pulling_over_the_threshold_and_resumes_when_drained(
    cluster: DevClusterThread,
) -> None:
    cluster.backlog("Orders", 200)
    release = anyio.Event()
    most_held: list[int] = [0]
    seen: list[int] = []
    limit, batch = 10, 4

    async def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        seen.extend(numbers(messages))
        await release.wait()
        return ConsumeStatus.SUCCESS

    options = {"max_cached_messages": limit, "pull_batch_size": batch, "max_concurrency": 64}
    async with consumer(cluster, listener, **options) as c:
        # Stuck listeners: the queue fills to its threshold, and its pulls stop.
        await until(lambda: c.stats["flow_waits"] >= 3)
        held, waits = c.stats["held"], c.stats["flow_waits"]
        assert limit < held <= limit + batch  # Java's bound: the threshold and one batch
        await until(lambda: c.stats["flow_waits"] >= waits + 3)  # three more looks: ...
        assert c.stats["held"] == held  # ... and not one pull more
        assert sorted(seen) == list(range(held))  # everything held went to the listener
        release.set()
        # Drained, the queue is pulled again, to the end of the backlog.
        with anyio.fail_after(20):
            while c.stats["consumed"] < 200:  # sampling, not waiting for anything
                most_held[0] = max(most_held[0], c.stats["held"])
                await anyio.sleep(0.005)
        await until(lambda: held_at(cluster) == [200])
    assert sorted(seen) == list(range(200))
    assert most_held[0] <= limit + batch


async def test_a_queues_order_holds_through_the_pipeline(cluster: DevClusterThread) -> None:
    cluster.backlog("Orders", 300)
    plain: list[int] = []
    orderly: list[int] = []

    def one_at_a_time(messages: list[ReceivedMessage]) -> ConsumeStatus:
        plain.extend(numbers(messages))
        return ConsumeStatus.SUCCESS

    def in_order(messages: list[ReceivedMessage]) -> ConsumeStatus:
        orderly.extend(numbers(messages))
        return ConsumeStatus.SUCCESS

    # Pulls of 7 (not a divisor of 300) keep many answers in the pipeline.
    async with consumer(cluster, one_at_a_time, pull_batch_size=7, max_concurrency=1):
        await until(lambda: len(plain) >= 300)
    async with orderly_consumer(cluster, in_order, pull_batch_size=7):
        await until(lambda: len(orderly) >= 300)
    assert plain == list(range(300))  # handed over in the order stored
    assert orderly == list(range(300))


async def test_the_offset_never_passes_a_message_in_flight_with_the_pipeline(
    cluster: DevClusterThread,
) -> None:
    cluster.backlog("Orders", 100)
    release = anyio.Event()
    stuck = 5

    async def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        if stuck in numbers(messages):
            await release.wait()
        return ConsumeStatus.SUCCESS

    async with consumer(cluster, listener, pull_batch_size=4) as c:
        await until(lambda: c.stats["consumed"] == 99)  # all but the stuck one
        await until(lambda: held_at(cluster) == [100])  # every pull answered
        (queue,) = [q for q in c.assigned_queues if q.topic == "Orders"]
        assert c.offsets.read(queue) == stuck
        await until(lambda: cluster.consumer_offsets("broker-a").get("Orders@cg") == {0: stuck})
        release.set()
        await until(lambda: c.offsets.read(queue) == 100)


async def test_a_dropped_queues_buffered_messages_are_not_delivered(
    cluster: DevClusterThread,
) -> None:
    cluster.backlog("Orders", 50)
    release = anyio.Event()
    first: list[int] = []
    second: list[int] = []

    async def stuck(messages: list[ReceivedMessage]) -> ConsumeStatus:
        first.extend(numbers(messages))
        await release.wait()
        return ConsumeStatus.SUCCESS

    def takes_over(messages: list[ReceivedMessage]) -> ConsumeStatus:
        second.extend(numbers(messages))
        return ConsumeStatus.SUCCESS

    # One call at a time: the first member holds message 0 and buffers the rest.
    old = consumer(cluster, stuck, instance_name="zz-old", max_concurrency=1)
    new = consumer(cluster, takes_over, instance_name="aa-new")  # sorts first: takes Orders
    async with old:
        await until(lambda: first == [0] and old.stats["held"] == 50)
        async with new:
            await until(lambda: not [q for q in old.assigned_queues if q.topic == "Orders"])
            release.set()
            await until(lambda: old.stats["in_flight"] == 0)  # its buffer went by
            await until(lambda: sorted(set(second)) == list(range(50)))
    assert first == [0]  # the dropped queue's buffered messages never reached it
