"""The push consumer on trio (and asyncio, the same test): retries through ``%RETRY%``,
the DLQ, and orderly consumption, against the dev cluster on its own thread."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from producer import Message, Producer
from producer.consumer import ConsumeStatus, PushConsumer, ReceivedMessage
from producer.testing import DevClusterThread
from tests.helpers.push import FAST, FAST_LEVELS

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=2, topics={"Orders": 2}, delay_levels=FAST_LEVELS) as c:
        yield c


async def wait_for(condition: object, seconds: float = 20.0) -> None:
    with anyio.fail_after(seconds):
        while not condition():  # type: ignore[operator]  # noqa: ASYNC110
            await anyio.sleep(0.02)


@pytest.mark.parametrize("orderly", [False, True], ids=["concurrently", "orderly"])
async def test_retries_and_dead_letters(cluster: DevClusterThread, orderly: bool) -> None:
    async with Producer("pg", namesrv=cluster.namesrv_addr) as producer:
        for i in range(10):
            await producer.send(Message("Orders", b"%d" % i), order_key="k" if orderly else None)
    done: list[bytes] = []
    tries: list[int] = []

    async def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        (message,) = messages
        if message.body == b"3":
            tries.append(message.reconsume_times)
            return ConsumeStatus.RECONSUME_LATER
        if message.body == b"5" and message.reconsume_times == 0:
            return ConsumeStatus.RECONSUME_LATER  # one retry, then fine
        done.append(message.body)
        return ConsumeStatus.SUCCESS

    options = {**FAST, "orderly": orderly, "max_reconsume_times": 2}
    if orderly:
        options["suspend_current_queue_time_ms"] = 20
    consumer = PushConsumer(
        "tg", cluster.namesrv_addr, listener=listener, consume_from="first", **options
    )
    consumer.subscribe("Orders")
    async with consumer:
        await wait_for(lambda: len(done) == 9 and len(cluster.messages("%DLQ%tg")) == 1)
    assert sorted(done) == sorted(b"%d" % i for i in range(10) if i != 3)
    assert tries == [0, 1, 2]
    if orderly:
        assert done == [b"%d" % i for i in range(10) if i != 3]  # one key, one queue, in order
