"""The push consumer's ``async with``: the life-cycle rule every started-and-closed object
shares (producer/_lifecycle.py), checked on a second class after the producer's own test
(tests/producer/test_lifecycle.py)."""

from __future__ import annotations

import pytest

from tests.testing.interrupt import assert_one_cancellation, interrupted

CTRL_C_WAIT = """
import asyncio
from producer.consumer import ConsumeStatus, PushConsumer
from producer.testing import DevClusterThread

async def main(addr):
    c = PushConsumer("g", addr, listener=lambda messages: ConsumeStatus.SUCCESS)
    c.subscribe("T")
    try:
        async with c:
            print("ready", flush=True)
            await asyncio.Event().wait()  # consume until Ctrl-C
    finally:
        print(repr(c), flush=True)

with DevClusterThread(brokers=2, topics={"T": 2}) as cluster:
    asyncio.run(main(cluster.namesrv_addr))
"""


@pytest.mark.timeout(60)
def test_ctrl_c_in_an_asyncio_consume_loop_is_one_cancellation_and_a_closed_consumer() -> None:
    out, err = interrupted(CTRL_C_WAIT)
    # closing ran to its end although the closing task was being cancelled
    assert out.startswith("PushConsumer('g', closed,"), out
    assert_one_cancellation(err)
