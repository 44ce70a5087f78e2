"""The blocking producer (scripts, Spark executors) and flush()."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import anyio
import pytest

from producer import Message, SendStatus
from producer import Producer as AsyncProducer
from producer.blocking import Producer as BlockingProducer
from producer.errors import (
    InvalidOptionError,
    MessageValidationError,
    ProducerClosedError,
    SendTimeout,
)
from producer.testing import DevClusterThread, FaultSpec
from tests.producer.conftest import TOPIC, make_producer


def test_blocking_sends_from_many_threads(cluster: DevClusterThread) -> None:
    with BlockingProducer("g", cluster.namesrv_addr, routing="off") as p:
        results: list[SendStatus] = []
        threads = [
            threading.Thread(
                target=lambda i=i: results.append(p.send(Message(TOPIC, b"%d" % i)).status)
            )
            for i in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        futures = [p.send_async(Message(TOPIC, b"async")) for _ in range(5)]
        p.send_oneway(Message(TOPIC, b"oneway"))
        batch = p.send_batch([Message(TOPIC, b"b1"), Message(TOPIC, b"b2")])
        p.flush()
        assert all(f.done() for f in futures)  # flush waited for them
    assert results == [SendStatus.SEND_OK] * 4
    assert [f.result().status for f in futures] == [SendStatus.SEND_OK] * 5
    assert len(batch.msg_ids) == 2
    with pytest.raises(ProducerClosedError, match="closed"):
        p.send(Message(TOPIC, b"late"))


def test_submit_runs_concurrent_sends_on_the_loop(cluster: DevClusterThread) -> None:
    peak = 0

    async def many(producer: AsyncProducer) -> list[str]:
        async def one(i: int) -> str:
            nonlocal peak
            peak = max(peak, producer.in_flight)
            return (await producer.send(Message(TOPIC, b"%d" % i))).msg_id

        return list(await asyncio.gather(*(one(i) for i in range(50))))

    with BlockingProducer("g", cluster.namesrv_addr, routing="off", batching=False) as p:
        ids = p.submit(many).result(timeout=10)
    assert set(ids) == cluster.unique_msg_ids(TOPIC) and len(ids) == 50
    assert peak > 1  # they were in flight together, not one after another
    with pytest.raises(ProducerClosedError):
        p.submit(many)


def test_blocking_errors_reach_the_caller(cluster: DevClusterThread) -> None:
    with pytest.raises(InvalidOptionError):
        BlockingProducer("g", "nohost")
    with BlockingProducer("g", cluster.namesrv_addr, routing="off") as p:
        with pytest.raises(MessageValidationError):
            p.send_async(Message("TBW102", b"x"))
        for name in cluster.broker_names:
            cluster.set_fault(name, FaultSpec(error_code=13))
        future = p.send_async(Message(TOPIC, b"x"))
        with pytest.raises(Exception, match="MESSAGE_ILLEGAL"):
            future.result(timeout=10)
        assert isinstance(future, concurrent.futures.Future)


@pytest.mark.anyio
async def test_flush_waits_for_sends_begun_before_it_only(cluster: DevClusterThread) -> None:
    # Batching off: each early send is written by its own call, so the brokers have all
    # three before the blackhole (grouped, two of them leave one flush later, as a batch
    # that may reach its broker after the blackhole and never be answered).
    async with make_producer(cluster, batching=False) as p:
        await p.send(Message(TOPIC, b"warm"))
        for name in cluster.broker_names:
            cluster.set_fault(name, FaultSpec(latency_ms=200))
        early = [p.send_async(Message(TOPIC, b"early")) for _ in range(3)]
        await anyio.wait_all_tasks_blocked()  # the early sends wait on the slow brokers
        for name in cluster.broker_names:
            cluster.set_fault(name, FaultSpec(blackhole=True))  # only later requests
        async with anyio.create_task_group() as tg:
            tg.start_soon(p.flush)
            await anyio.wait_all_tasks_blocked()
            late = p.send_async(Message(TOPIC, b"late"), timeout_ms=3000)
        assert all(f.done() for f in early)
        assert not late.done()  # begun after flush: not waited for
        with pytest.raises(SendTimeout, match="flush timed out after 50 ms, 1 open"):
            await p.flush(timeout_ms=50)
        for name in cluster.broker_names:
            cluster.clear_fault(name)
        assert (await late).status is SendStatus.SEND_OK
