"""On asyncio an async send's first attempt needs no task of its own: a loop future with
a callback, when nothing needs more (no hooks, no OpenTelemetry SDK) and a connection is
open. Run in a fresh interpreter: other tests install OpenTelemetry SDKs process-wide,
and with one installed every send is a task (its spans need one)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import asyncio, sys
from producer import Message, Producer
from producer.testing import DevCluster

async def main(batching):
    async with DevCluster(brokers=3, topics={"T": 4}) as cluster:
        async with Producer("g", cluster.namesrv_addr, routing="off", batching=batching) as p:
            for _ in range(12):  # the route, and a connection to each broker (12 queues)
                await p.send(Message("T", b"warm"))
            before = len(asyncio.all_tasks())
            futures = [p.send_async(Message("T", b"%d" % i)) for i in range(200)]
            made = len(asyncio.all_tasks()) - before
            results = [await future for future in futures]
            stored = cluster.unique_msg_ids("T")
    assert {r.msg_id for r in results} <= stored and len(results) == 200
    print(made)

asyncio.run(main(sys.argv[1] == "on"))
"""


@pytest.mark.parametrize(("batching", "most"), [("off", 0), ("on", 3)])
def test_async_sends_make_no_task_each(batching: str, most: int) -> None:
    """Batching off: no task at all; on: the turn's first send alone, a task per batch."""
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, batching],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip()) <= most
