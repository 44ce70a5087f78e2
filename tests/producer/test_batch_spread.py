"""Transparent batching keeps healthy brokers round-robin per message, not per request
(``latency_fault.spread_batch``): a burst and a steady stream of batched sends give each
of three healthy brokers a third of the messages, as sending one at a time does."""

from __future__ import annotations

import anyio
import pytest

from producer import Message, Producer
from producer.testing import DevClusterThread, FaultSpec
from tests.producer.conftest import TOPIC, make_producer
from tests.producer.test_batching import requests_served

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

TOLERANCE = 0.03  # +-3 points of the exact third


def even_latency(cluster: DevClusterThread) -> None:
    """Adaptive routing weighs brokers by latency: on a busy test machine a scheduling
    hiccup of a few ms can make one loopback broker look 2x slower than the others and
    move load, as it should. The same 30 ms on every broker keeps them equal."""
    for broker in cluster.broker_names:
        cluster.set_fault(broker, FaultSpec(latency_ms=30))


def assert_even(cluster: DevClusterThread, total: int) -> None:
    counts = {b: cluster.message_count(TOPIC, broker=b) for b in cluster.broker_names}
    assert sum(counts.values()) == total
    shares = {b: n / total for b, n in counts.items()}
    assert all(abs(share - 1 / 3) <= TOLERANCE for share in shares.values()), shares


@pytest.mark.parametrize("routing", ["adaptive", "off", "classic_4_9", "classic_5"])
async def test_bursts_of_send_async_spread_per_message(
    anyio_backend: str, cluster: DevClusterThread, routing: str
) -> None:
    if routing == "adaptive":
        even_latency(cluster)
    async with make_producer(cluster, routing=routing, batching=True) as p:
        await p.send(Message(TOPIC, b"warm"))  # the route is cached, as in a service
        before = requests_served(cluster)
        for _ in range(5):
            futures = [p.send_async(Message(TOPIC, b"x")) for _ in range(1000)]
            for future in futures:
                await future
        batched = requests_served(cluster) - before < 500  # far fewer requests than sends
    assert batched
    assert_even(cluster, 5001)


async def test_steady_loops_of_await_send_spread_per_message(
    anyio_backend: str, cluster: DevClusterThread
) -> None:
    async def loop(p: Producer) -> None:
        for _ in range(40):
            await p.send(Message(TOPIC, b"y"))

    even_latency(cluster)
    async with make_producer(cluster, routing="adaptive", batching=True) as p:
        await p.send(Message(TOPIC, b"warm"))
        before = requests_served(cluster)
        async with anyio.create_task_group() as tg:
            for _ in range(64):
                tg.start_soon(loop, p)
        batched = requests_served(cluster) - before < 64 * 40  # some sends shared a request
    assert batched
    assert_even(cluster, 64 * 40 + 1)
