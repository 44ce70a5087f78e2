"""``PullConsumer.pull_records`` against the dev cluster (2 brokers x 4 queues), on asyncio
and trio: one pull's records undecoded, the position moved past them as ``getmany``
moves it, and ``decode_records`` making of them what ``getmany`` hands out."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from producer import Message, Producer
from producer.consumer import MessageQueue, PullConsumer, decode_records
from producer.testing import DevClusterThread

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]
TOPIC = "Orders"


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=2, topics={TOPIC: 4}) as c:
        yield c


def _fields(message: object) -> tuple[object, ...]:
    names = ("topic", "body", "msg_id", "tags", "keys", "queue_offset", "store_timestamp")
    return tuple(getattr(message, name) for name in names)


async def test_records_decode_to_what_getmany_hands_out(cluster: DevClusterThread) -> None:
    queues: set[MessageQueue] = set()
    async with Producer("pg", namesrv=cluster.namesrv_addr, compress_over=1024) as producer:
        for i in range(40):  # more than one pull's 32 into one queue; one compressed body
            body = b"z" * 3000 if i == 5 else b"body-%d" % i
            message = Message(TOPIC, body, tags="t", keys=[f"k{i}"])
            queues.add((await producer.send(message, order_key="one")).queue)
    (queue,) = queues
    async with (
        PullConsumer("g1", cluster.namesrv_addr) as raw,
        PullConsumer("g2", cluster.namesrv_addr) as decoded,
    ):
        for consumer in (raw, decoded):
            consumer.assign([queue])
            consumer.seek(queue, 0)
        records = await raw.pull_records(queue)
        pulled = decode_records(records, queue.broker_name)
        assert await raw.position(queue) == len(pulled) == 32  # the broker's per-pull cap
        expected = (await decoded.getmany(queue))[queue]
        assert [_fields(m) for m in pulled] == [_fields(m) for m in expected]
        assert pulled[5].body == b"z" * 3000  # inflated
        rest = decode_records(await raw.pull_records(queue), queue.broker_name)
        assert [m.queue_offset for m in rest] == list(range(32, 40))
        assert await raw.pull_records(queue) == b""  # nothing more: the position stays
        assert await raw.position(queue) == 40
