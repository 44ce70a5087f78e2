"""The push consumer as the consumer tests make it: fast delay levels and background
intervals, group ``cg`` (orderly: ``og``) on topic ``Orders`` from its first message."""

from __future__ import annotations

from collections.abc import Callable

import anyio

from producer import Message, Producer
from producer.consumer import PushConsumer
from producer.testing import DevClusterThread

FAST_LEVELS = " ".join(["100ms"] * 18)  # every delay level 100 ms: retries in a blink
FAST = {"persist_interval_ms": 50, "rebalance_interval_ms": 500, "suspend_timeout_ms": 1000}
ORDERLY = {**FAST, "orderly": True, "suspend_current_queue_time_ms": 50}


async def publish(cluster: DevClusterThread, bodies: list[bytes], tags: str = "T") -> list[str]:
    """Send ``bodies`` to ``Orders`` with ``tags``; their msg ids."""
    async with Producer("pg", namesrv=cluster.namesrv_addr) as producer:
        return [(await producer.send(Message("Orders", b, tags=tags))).msg_id for b in bodies]


async def until(condition: Callable[[], bool], seconds: float = 20.0) -> None:
    """Wait until ``condition()`` holds (the cluster thread's or a consumer's state)."""
    with anyio.fail_after(seconds):
        while not condition():  # noqa: ASYNC110 - state of another process-side task
            await anyio.sleep(0.02)


def consumer(cluster: DevClusterThread, listener: object, **options: object) -> PushConsumer:
    """Group ``cg`` on ``Orders`` (all tags) from the first message, with FAST options."""
    c = PushConsumer(
        "cg",
        cluster.namesrv_addr,
        listener=listener,  # type: ignore[arg-type]
        consume_from="first",
        **{**FAST, **options},
    )
    c.subscribe("Orders", "*")
    return c


def orderly_consumer(
    cluster: DevClusterThread, listener: object, **options: object
) -> PushConsumer:
    """Group ``og`` consuming ``Orders`` orderly (ORDERLY options) from the first message."""
    c = PushConsumer(
        "og",
        cluster.namesrv_addr,
        listener=listener,  # type: ignore[arg-type]
        consume_from="first",
        **{**ORDERLY, **options},
    )
    c.subscribe("Orders", "*")
    return c
