"""When a master dies (issue 44): readers go on from its slave, come back to it, follow a
promoted slave, and lose nothing; a message failed while its master is down is retried.
On the dev cluster with a slave per group (``slaves=1``): ``kill_master`` is a ``kill -9``
(connections closed, brokerId 0 gone from the route), as a 4.9.4 cluster shows it."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator

import anyio
import pytest

from producer import Message, Producer
from producer.consumer import (
    ConsumeStatus,
    DeadLetterQueue,
    PullConsumer,
    ReceivedMessage,
    SimpleConsumer,
)
from producer.consumer._options import ConsumerOptions
from producer.errors import TransportError
from producer.testing import DevClusterThread, FaultSpec
from tests.helpers.clocks import MovingClock
from tests.helpers.dead_letters import dead_letters
from tests.helpers.push import FAST_LEVELS, consumer, until

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

# Per queue at most this many held (flow control) plus one batch in flight: what a
# reader can have pulled from a master before it dies is bounded by these.
HELD, BATCH, QUEUES = 4, 4, 4
SMALL = {"max_cached_messages": HELD, "pull_batch_size": BATCH}


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(
        brokers=2, topics={"Orders": QUEUES}, slaves=1, delay_levels=FAST_LEVELS, seed=44
    ) as c:
        yield c


async def publish(cluster: DevClusterThread, count: int, prefix: str) -> dict[str, str]:
    """``count`` messages; msg id -> the broker it was stored on."""
    stored: dict[str, str] = {}
    async with Producer("pg", namesrv=cluster.namesrv_addr) as producer:
        for n in range(count):
            result = await producer.send(Message("Orders", f"{prefix}{n}".encode()))
            stored[result.msg_id] = result.queue.broker_name
    return stored


def stored_copies(cluster: DevClusterThread) -> int:
    """Messages stored in ``Orders``, on every master, dead or alive."""
    return len(cluster.messages("Orders"))


def committed_on_slave(cluster: DevClusterThread) -> int:
    """Group ``cg``'s committed offsets of ``Orders`` on broker-a's slave, summed."""
    return sum(cluster.slave_consumer_offsets("broker-a").get("Orders@cg", {}).values())


async def until_copied(cluster: DevClusterThread, name: str) -> None:
    await until(lambda: cluster.replication(name)["behind"] == 0)


async def test_push_consumer_reads_on_from_the_slave_when_the_master_dies_mid_stream(
    cluster: DevClusterThread,
) -> None:
    stored = await publish(cluster, 400, "m")
    on_a = {m for m, b in stored.items() if b == "broker-a"}
    assert len(on_a) > 2 * QUEUES * (HELD + BATCH)  # most of them read after the kill
    await until_copied(cluster, "broker-a")
    delivered: Counter[str] = Counter()
    gate = anyio.Event()

    async def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        if len(delivered) >= 20:
            await gate.wait()  # mid-stream: the master dies while these are held
        delivered.update(m.msg_id for m in messages)
        return ConsumeStatus.SUCCESS

    async with consumer(cluster, listener, **SMALL):
        await until(lambda: len(delivered) >= 20)
        cluster.kill_master("broker-a")
        gate.set()
        await until(lambda: set(delivered) >= set(stored))
    assert set(delivered) == set(stored)  # none lost, broker-a's from its slave
    # and each stored copy once (a send retried after a timeout on a loaded machine may
    # store its message twice, under one msg id: that is the producer's, not a redelivery)
    assert sum(delivered.values()) == stored_copies(cluster)


async def test_reading_returns_to_the_master_when_it_is_back(cluster: DevClusterThread) -> None:
    first = await publish(cluster, 80, "a")
    await until_copied(cluster, "broker-a")
    cluster.kill_master("broker-a")
    delivered: Counter[str] = Counter()

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        delivered.update(m.msg_id for m in messages)
        return ConsumeStatus.SUCCESS

    async with consumer(cluster, listener, **SMALL):
        await until(lambda: set(delivered) >= set(first))  # broker-a's from the slave
        # Committed to the slave while the master is gone, as RemoteBrokerOffsetStore does.
        on_a = sum(b == "broker-a" for b in first.values())
        await until(lambda: committed_on_slave(cluster) == on_a)
        cluster.restart_master("broker-a")
        # The slave copies nothing more: what follows is readable on the master only.
        cluster.set_replication_lag("broker-a", messages=1_000_000)
        second = await publish(cluster, 80, "b")
        assert "broker-a" in second.values()
        await until(lambda: set(delivered) >= set(first) | set(second))
    assert set(delivered) == set(first) | set(second)
    assert sum(delivered.values()) == stored_copies(cluster)  # no redelivery


async def test_producer_and_consumer_follow_a_promoted_master(cluster: DevClusterThread) -> None:
    first = await publish(cluster, 80, "a")
    await until_copied(cluster, "broker-a")
    delivered: Counter[str] = Counter()

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        delivered.update(m.msg_id for m in messages)
        return ConsumeStatus.SUCCESS

    async with (
        consumer(cluster, listener, **SMALL),
        Producer("pg2", namesrv=cluster.namesrv_addr) as producer,
    ):
        await producer.send(Message("Orders", b"warm-up"))  # its routes are known
        await until(lambda: len(delivered) >= 10)
        new_master = cluster.promote("broker-a")
        second: dict[str, str] = {}
        # The producer writes to broker-a again only through its new address: its route
        # is asked every 2 s while it bans a broker (Java's 30 s poll would time out here).
        with anyio.fail_after(15):
            while "broker-a" not in second.values():
                result = await producer.send(Message("Orders", b"after"))
                second[result.msg_id] = result.queue.broker_name
                await anyio.sleep(0.05)
        await until(lambda: set(delivered) >= set(first) | set(second))
    assert new_master == cluster.replication("broker-a")["master"]
    assert set(delivered) >= set(first) | set(second)


async def test_a_message_failed_while_its_master_is_down_is_retried(
    cluster: DevClusterThread,
) -> None:
    stored = await publish(cluster, 40, "m")
    failing = next(m for m, b in stored.items() if b == "broker-a")
    await until_copied(cluster, "broker-a")
    cluster.kill_master("broker-a")
    deliveries: list[tuple[str, int, str]] = []

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        deliveries.extend((m.msg_id, m.reconsume_times, m.queue.topic) for m in messages)
        if any(m.msg_id == failing and m.reconsume_times == 0 for m in messages):
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.SUCCESS

    async with consumer(cluster, listener, **SMALL):
        await until(lambda: any(d[:2] == (failing, 1) for d in deliveries))
    assert {m for m, _, _ in deliveries} == set(stored)  # none lost
    # Sent back as Java does with the master gone: a copy to %RETRY%cg through broker-b's
    # live master (not a local retry), its reconsume count kept.
    assert [d for d in deliveries if d[0] == failing] == [
        (failing, 0, "Orders"),
        (failing, 1, "%RETRY%cg"),
    ]


async def test_pull_consumer_reads_the_whole_topic_with_a_dead_master(
    cluster: DevClusterThread,
) -> None:
    stored = await publish(cluster, 200, "m")
    await until_copied(cluster, "broker-a")
    read: Counter[str] = Counter()
    async with PullConsumer("pull", namesrv=cluster.namesrv_addr, max_pull_messages=8) as c:
        c.assign(await c.queues("Orders"))
        await c.seek_to_beginning()
        for batch in (await c.getmany(timeout_ms=100)).values():
            read.update(m.msg_id for m in batch)
        cluster.kill_master("broker-a")  # mid-read: the pulls go on from the slave
        with anyio.fail_after(30):
            while set(read) != set(stored):
                for batch in (await c.getmany(timeout_ms=100)).values():
                    read.update(m.msg_id for m in batch)
    assert sum(read.values()) == stored_copies(cluster)


async def test_dead_letters_are_read_from_the_slave_with_the_master_dead() -> None:
    skew = [0]  # the cluster's clock, moved on to the slave's next metadata sync
    with DevClusterThread(
        brokers=2,
        topics={"Orders": QUEUES},
        slaves=1,
        clock_ms=lambda: int(time.time() * 1000) + skew[0],
    ) as cluster:
        ids = await dead_letters(cluster, [b"d%d" % n for n in range(12)])
        assert "broker-a" in {m.broker_name for m in cluster.messages("%DLQ%cg")}
        await until_copied(cluster, "broker-a")
        # SlaveSynchronize (every 10 s) copies the %DLQ% topic's config and the offsets.
        skew[0] += 10_001
        await until(
            lambda: any(k.endswith("@cg") for k in cluster.slave_consumer_offsets("broker-a"))
        )
        cluster.kill_master("broker-a")
        async with DeadLetterQueue("cg", cluster.namesrv_addr) as dlq:
            found = {letter.msg_id for letter in await dlq.read()}
    assert found == set(ids)


async def test_pops_in_flight_come_back_from_a_promoted_5x_master() -> None:
    clock = MovingClock()
    with DevClusterThread(
        brokers=1, topics={"Orders": 1}, slaves=1, clock_ms=clock, broker_version="5.x"
    ) as cluster:
        async with Producer("pg", namesrv=cluster.namesrv_addr) as producer:
            sent = {(await producer.send(Message("Orders", b"p%d" % n))).msg_id for n in (0, 1)}
        async with SimpleConsumer(
            "pops", cluster.namesrv_addr, await_duration_ms=0, clock=clock
        ) as consumer:
            consumer.subscribe("Orders")
            first = await consumer.receive(invisible_duration_ms=10_000)  # never acked
            assert {m.msg_id for m in first} == sent
            cluster.tick()  # the slave copies the log
            cluster.promote("broker-a")
            with pytest.raises(TransportError):
                await consumer.receive()  # the dead master's connection; the route is due
            assert await consumer.receive() == []  # the new master: still invisible
            clock.ms += 10_001
            cluster.tick()  # the new master revives them (5.x: check points in its log)
            again = await consumer.receive()
    assert sorted((m.msg_id, m.reconsume_times) for m in again) == sorted((i, 1) for i in sent)


HELD_PULL_MS = ConsumerOptions().suspend_timeout_ms  # a long poll's hold, by default


async def test_readers_leave_a_hung_master_once_the_route_drops_it() -> None:
    """A master that hangs (connections open, nothing answered) fails no pull: its
    readers' long polls wait. Once the name server drops it from the route (a real one
    after 120 s of silence), they read its slave within one route period (3 s) of
    injected time: the route is read that often, and a pull in flight to an address the
    route no longer names is abandoned, its offset not advanced (docs/consuming.md)."""
    clock = MovingClock()
    with DevClusterThread(brokers=2, topics={"Orders": QUEUES}, slaves=1, seed=44) as cluster:
        delivered: Counter[str] = Counter()

        def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
            delivered.update(m.msg_id for m in messages)
            return ConsumeStatus.SUCCESS

        # No offset persisted meanwhile: its timeout on the hung master would mark it down
        # (and the reader degraded, its route read every 2 s) before the route drops it;
        # a pull consumer or pull_records reader that commits nothing sees only the route.
        # And the rebalance's own route read at its default 20 s, not FAST's 0.5 s.
        quiet = {"persist_interval_ms": 600_000.0, "rebalance_interval_ms": 20_000.0}
        async with consumer(cluster, listener, clock=clock, **quiet):
            first = await publish(cluster, 40, "a")
            await until(lambda: set(delivered) >= set(first))  # long polls now held
            await until(lambda: len(cluster.held_pulls("broker-a").get("Orders", {})) > 0)
            cluster.set_fault("broker-a", FaultSpec(hang=True))  # hung, still open
            cluster.backlog("Orders", per_queue=3)  # on the hung master and its slave
            await until_copied(cluster, "broker-a")
            stored = {m.uniq_key or m.offset_msg_id for m in cluster.messages("Orders")}
            dropped_at = clock.monotonic_ms()
            cluster.expire_master("broker-a")
            clock.advance(cluster, 3_000)  # one route period of the reader's
            await until(lambda: set(delivered) >= stored, seconds=60)
            took_ms = clock.monotonic_ms() - dropped_at
        assert set(delivered) == stored  # none lost: broker-a's backlog from its slave
        assert sum(delivered.values()) == stored_copies(cluster)  # none twice
        # The bound is the rule, not a speed: read after the route period the clock was
        # moved by, before a held pull's own 15 s hold (or the old 20 s route period)
        # could have moved the reader - those take 19 s here. Load only adds real time to
        # the fixed path's ~1 s, never takes it from the broken ones (the 5 s target is
        # measured in docs/consuming.md 8.2, not judged here).
        assert took_ms < 3_000 + HELD_PULL_MS, f"slave read {took_ms:.0f} ms after the drop"
