"""On asyncio an async send's first attempt needs no task of its own: a loop future with
a callback, when nothing needs more (no hooks, no OpenTelemetry SDK) and a connection is
open. Run in a fresh interpreter: other tests install OpenTelemetry SDKs process-wide,
and with one installed every send is a task (its spans need one)."""

from __future__ import annotations

import json
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
            loop = asyncio.get_running_loop()
            made = []  # every task made until the last result is in (flushes come later)

            def factory(loop, coro, **kw):
                made.append(coro)
                return asyncio.Task(coro, loop=loop, **kw)

            loop.set_task_factory(factory)
            futures = [p.send_async(Message("T", b"%d" % i)) for i in range(200)]
            results = [await future for future in futures]
            loop.set_task_factory(None)
            stored = cluster.unique_msg_ids("T")
    assert {r.msg_id for r in results} <= stored and len(results) == 200
    print(len(made))

asyncio.run(main(sys.argv[1] == "on"))
"""


@pytest.mark.parametrize("batching", ["off", "on"])
def test_async_sends_make_no_task_each(batching: str) -> None:
    """No task at all: batching off, each send's first attempt is a loop future; on, the
    turn's first send alone and each batch (one per broker) too."""
    assert tasks_made(SCRIPT, batching) == 0


LONE = """
import asyncio, sys
from benchmarks._cluster import ClusterProcess
from producer import Message, Producer
from producer._send.accumulator import Accumulator

flushes = []  # every turn's flush: a turn was opened, so a group could form
flush = Accumulator.flush

def counting_flush(self):
    flushes.append(1)
    flush(self)

async def main(namesrv):
    async with Producer("g", namesrv, routing="off") as p:  # batching on
        await p.send(Message("T", b"warm"))
        Accumulator.flush = counting_flush
        for i in range(300):  # one at a time: each next send follows its answer
            await p.send(Message("T", b"%d" % i))
        Accumulator.flush = flush
    print(len(flushes))

with ClusterProcess(brokers=1, topics={"T": 4}, sink=True) as cluster:  # answers fast
    if sys.argv[1] == "uvloop":
        import uvloop
        uvloop.run(main(cluster.namesrv))
    else:
        asyncio.run(main(cluster.namesrv))
"""


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_lone_send_never_joins_a_group_nor_opens_one(loop: str) -> None:
    """One send at a time with batching on, against a broker in its own process that
    answers at once: each send has nothing else in flight, so it goes alone and opens no
    turn - no group, no flush callback (the script prints how many turns were flushed)."""
    assert tasks_made(LONE, loop) == 0


def run_fresh(script: str, *arguments: str) -> str:
    """What ``script`` prints, run in a fresh interpreter (no task or loop left over from
    other tests); a failing script fails the test with its stderr."""
    done = subprocess.run(
        [sys.executable, "-c", script, *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def tasks_made(script: str, argument: str) -> int:
    """The number of tasks (or, LONE, flushes) ``script`` saw made, run fresh."""
    return int(run_fresh(script, argument))


ONE_COROUTINE = """
import asyncio, json
from producer import Message, Producer
from producer.testing import DevCluster, FaultSpec

async def main():
    async with DevCluster(brokers=1, topics={"T": 4}) as cluster:
        async with Producer("g", cluster.namesrv_addr) as p:  # adaptive routing
            await p.send(Message("T", b"warm"))  # the route, and the connection
            (broker,) = cluster.broker_names
            await cluster.set_fault(broker, FaultSpec(blackhole=True))  # the answer never comes
            sending = asyncio.ensure_future(p.send(Message("T", b"x"), timeout_ms=60_000))
            await asyncio.sleep(0)  # its first step: the request is out, the send suspended
            chain, awaited = [], sending.get_coro()
            while hasattr(awaited, "cr_await"):  # the coroutines it is suspended in
                chain.append(awaited.cr_code.co_qualname)
                awaited = awaited.cr_await
            out = p.in_flight
            sending.cancel()  # S5, S8: over, no fault learnt, its slot and ticket given back
            try:
                await sending
            except asyncio.CancelledError:
                pass
            now = int(asyncio.get_running_loop().time() * 1000)
            report = {
                "chain": chain,
                "awaits": type(awaited).__name__,
                "out": out,
                "in_flight": p.in_flight,
                "available": p.router.is_available(broker, now),
                "outstanding": len(p.router.health(broker).outstanding),  # S8
            }
            await asyncio.wait_for(p.flush(), 10)  # its ticket ended
            await cluster.clear_fault(broker)
    print(json.dumps(report))

asyncio.run(main())
"""


def test_a_lone_send_is_one_coroutine_straight_to_the_connection() -> None:
    """A lone ``await send`` (batching on, the default) suspends in ``Producer.send``
    itself, on its connection's loop future - no coroutine between them, no task - and,
    cancelled there, lets go of everything (S5, S8)."""
    report = json.loads(run_fresh(ONE_COROUTINE).splitlines()[-1])
    assert report["chain"] == ["Producer.send"]
    assert report["awaits"] == "FutureIter"  # the loop future itself, awaited
    assert report["out"] == 1
    assert (report["in_flight"], report["available"], report["outstanding"]) == (0, True, 0)
