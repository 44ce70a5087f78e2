"""One attempt, one step of the round-robin: sends made one at a time visit every queue of
the topic in turn, whichever way their first attempt goes out (a bare loop future on
asyncio, the sender's coroutine under trio or before a connection is open)."""

from __future__ import annotations

from collections import Counter

import pytest

from producer import Message
from producer.testing import DevClusterThread
from tests.producer.conftest import TOPIC, make_producer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

QUEUES = 12  # the cluster fixture's 3 brokers x 4 queues


@pytest.mark.parametrize("batching", [True, False], ids=["batching", "no-batching"])
async def test_sends_one_at_a_time_visit_every_queue_in_turn(
    cluster: DevClusterThread, batching: bool
) -> None:
    async with make_producer(cluster, batching=batching) as p:
        awaited = [await p.send(Message(TOPIC, b"s")) for _ in range(2 * QUEUES)]
        futures = []
        for _ in range(2 * QUEUES):
            future = p.send_async(Message(TOPIC, b"a"))
            await future
            futures.append(future.result())
    for name, results in (("await send", awaited), ("send_async", futures)):
        visits = Counter((r.queue.broker_name, r.queue.queue_id) for r in results)
        assert len(visits) == QUEUES and set(visits.values()) == {2}, f"{name}: {visits}"
