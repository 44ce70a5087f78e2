"""A consumer group with dead letters: group ``cg`` sends what it consumes of ``Orders``
straight to ``%DLQ%cg``."""

from __future__ import annotations

import anyio

from producer import Message, Producer
from producer.consumer import ConsumeContext, ConsumeStatus, PushConsumer, ReceivedMessage
from producer.testing import DevCluster, DevClusterThread
from tests.helpers.push import FAST


async def dead_letters(cluster: DevCluster | DevClusterThread, bodies: list[bytes]) -> list[str]:
    """Publish ``bodies`` and let group ``cg`` send each straight to its DLQ; their ids."""
    async with Producer("pg", namesrv=cluster.namesrv_addr) as producer:
        ids = [
            (
                await producer.send(
                    Message("Orders", b, tags="paid", keys=["k1"], properties={"shop": "7"})
                )
            ).msg_id
            for b in bodies
        ]

    def hopeless(messages: list[ReceivedMessage], context: ConsumeContext) -> ConsumeStatus:
        context.delay_level = -1
        return ConsumeStatus.RECONSUME_LATER

    consumer = PushConsumer(
        "cg", cluster.namesrv_addr, listener=hopeless, consume_from="first", **FAST
    )
    consumer.subscribe("Orders")
    async with consumer:
        with anyio.fail_after(20):
            while len(cluster.messages("%DLQ%cg")) < len(bodies):  # noqa: ASYNC110
                await anyio.sleep(0.02)
    return ids
