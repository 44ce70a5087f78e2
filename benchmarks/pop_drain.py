"""Pop against pull on the dev cluster (5.x): a backlog drained, and a pop consumer killed.

``python -m benchmarks.pop_drain`` starts ``python -m producer cluster --broker-version 5.x``
in its own process (its CPU is not the client's), fills a topic with ``--backlog``
messages of ``--body`` bytes, then drains the whole backlog once per mode with a fresh
group: ``pull bN`` (``PushConsumer``, pull-based, ``consume_batch_size=N``) and
``pop bN`` (``PopConsumer``, ``pop_batch_size=32``), each with an ``async`` listener that
only counts. Per mode: messages/s (wall clock: noisy on a shared machine) and the client's
CPU microseconds per message (``time.process_time()``).

``--kill`` then runs the at-least-once check: a victim process pops from a topic of
``--kill-backlog`` messages with a slow listener (``--victim-ms`` per message) and is
SIGKILLed mid-batch; two survivor consumers of the same group consume the topic until
every message was acked. It prints what the victim saw and acked, what the survivors
got, which messages were delivered twice (the victim saw them and died before its ack
landed) and how long after the kill they came back (the invisible time, 10 s, plus the
dev broker's revive tick).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._cluster import ClusterProcess
from producer import Message, Producer
from producer.consumer import ConsumeStatus, PopConsumer, PushConsumer

TOPIC, KILL_TOPIC = "PopBench", "PopKill"
INVISIBLE_MS = 10_000  # the smallest a SimpleConsumer allows: redeliveries come soonest
_REPO = Path(__file__).resolve().parent.parent


async def fill(namesrv: str, topic: str, count: int, body: int) -> None:
    payload = b"x" * body
    async with Producer("pop-bench-fill", namesrv=namesrv) as producer:
        for start in range(0, count, 256):
            await asyncio.gather(
                *(
                    producer.send(Message(topic, payload, keys=[str(i)]))
                    for i in range(start, min(count, start + 256))
                )
            )


async def drain(namesrv: str, mode: str, batch: int, backlog: int, group: str) -> dict[str, float]:
    got = 0
    done = asyncio.Event()

    async def count(messages: list[Any]) -> ConsumeStatus:
        nonlocal got
        got += len(messages)
        if got >= backlog:
            done.set()
        return ConsumeStatus.SUCCESS

    consumer: PopConsumer | PushConsumer
    if mode == "pop":
        consumer = PopConsumer(
            group, namesrv, listener=count, consume_batch_size=batch, pop_batch_size=32,
            max_cached_messages=1024, invisible_duration_ms=60_000, await_duration_ms=1000,
        )  # fmt: skip
    else:
        consumer = PushConsumer(
            group, namesrv, listener=count, consume_batch_size=batch, consume_from="first"
        )
    consumer.subscribe(TOPIC)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    async with consumer:
        await asyncio.wait_for(done.wait(), 600)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return {
        "messages": got,
        "seconds": wall,
        "msgs_per_s": got / wall,
        "cpu_us_per_msg": cpu / got * 1e6,
    }


# -- the kill ---------------------------------------------------------------------------


async def victim(namesrv: str, group: str, per_message_ms: float) -> None:
    """Run by the victim process: print SEEN/ACKED per message until killed."""

    async def slow(messages: list[Any]) -> ConsumeStatus:
        for m in messages:
            print("SEEN", m.keys[0], flush=True)
        await asyncio.sleep(per_message_ms * len(messages) / 1000)
        return ConsumeStatus.SUCCESS

    consumer = PopConsumer(
        group, namesrv, listener=slow, consume_batch_size=8, pop_batch_size=32,
        max_cached_messages=64, invisible_duration_ms=INVISIBLE_MS, await_duration_ms=1000,
    )  # fmt: skip
    consumer.subscribe(KILL_TOPIC)
    async with consumer:
        acked = 0
        while True:
            await asyncio.sleep(0.005)
            if consumer.stats["acked"] != acked:
                acked = consumer.stats["acked"]
                print("ACKED_COUNT", acked, flush=True)


async def _kill_victim(
    namesrv: str, group: str, per_message_ms: float, kill_after: int
) -> tuple[list[str], int, float]:
    """Start the victim, SIGKILL it once its listener saw ``kill_after`` messages; what it
    saw, the ack count it last printed, and when it was killed."""
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.pop_drain",
        "--victim",
        namesrv,
        group,
        str(per_message_ms),
    ]
    env = {**os.environ, "PYTHONPATH": str(_REPO)}
    proc = await asyncio.create_subprocess_exec(
        *cmd, stdout=asyncio.subprocess.PIPE, env=env, cwd=_REPO
    )
    assert proc.stdout is not None
    seen: list[str] = []
    acked_count = 0

    def note(line: str) -> None:
        nonlocal acked_count
        word, _, value = line.strip().partition(" ")
        if word == "SEEN":
            seen.append(value)
        elif word == "ACKED_COUNT":
            acked_count = int(value)

    while len(seen) < kill_after:
        line = (await proc.stdout.readline()).decode()
        if not line:
            raise RuntimeError("the victim exited early")
        note(line)
    proc.send_signal(signal.SIGKILL)
    killed_at = time.perf_counter()
    for line in (await proc.stdout.read()).decode().splitlines():
        note(line)
    await proc.wait()
    return seen, acked_count, killed_at


async def kill_run(
    namesrv: str, count: int, per_message_ms: float, kill_after: int
) -> dict[str, Any]:
    await fill(namesrv, KILL_TOPIC, count, 64)
    group = f"kill-{os.getpid()}"
    seen, acked_count, killed_at = await _kill_victim(namesrv, group, per_message_ms, kill_after)
    got: list[tuple[str, float, int]] = []  # (key, seconds after the kill, reconsumeTimes)

    covered = asyncio.Event()

    async def survive(messages: list[Any]) -> ConsumeStatus:
        got.extend(
            (m.keys[0], time.perf_counter() - killed_at, m.reconsume_times) for m in messages
        )
        if len({k for k, _, _ in got} | set(seen)) >= count:
            covered.set()
        return ConsumeStatus.SUCCESS

    survivors = [
        PopConsumer(
            group,
            namesrv,
            listener=survive,
            pop_batch_size=16,
            invisible_duration_ms=60_000,
            await_duration_ms=1000,
        )
        for _ in range(2)
    ]
    for s in survivors:
        s.subscribe(KILL_TOPIC)
    async with survivors[0], survivors[1]:
        # Until every message reached a survivor or the victim's listener, then one more
        # invisible time (and the revive) for what the victim held to come back.
        await asyncio.wait_for(covered.wait(), 600)
        await asyncio.sleep(INVISIBLE_MS / 1000 + 3)
    return _kill_report(count, seen, acked_count, got)


def _kill_report(
    count: int, seen: list[str], acked_count: int, got: list[tuple[str, float, int]]
) -> dict[str, Any]:
    """Classified after the fact: a message the victim's listener saw and a survivor got
    too is a duplicate (the victim died before its ack landed); one it saw that never
    came back was acked by it."""
    keys = [k for k, _, _ in got]
    seen_set = set(seen)
    again = [(k, t, r) for k, t, r in got if k in seen_set]
    times = [t for _, t, _ in again]
    return {
        "messages": count,
        "victim_seen": len(seen),
        "victim_acked_printed": acked_count,
        "victim_acked": len(seen_set - set(keys)),
        "survivor_deliveries": len(keys),
        "survivor_unique": len(set(keys)),
        "duplicates": len(again),
        "redelivered_after_s": [round(min(times), 2), round(max(times), 2)] if times else None,
        "redelivered_reconsume_times": sorted({r for _, _, r in again}),
        "never_seen_by_victim_came_back": len(
            [k for k, _, r in got if k not in seen_set and r > 0]
        ),
        "lost": count - len(set(keys) | seen_set),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with ClusterProcess(
        brokers=1, topics={TOPIC: args.queues, KILL_TOPIC: 2}, sink=False, broker_version="5.x"
    ) as cluster:
        await fill(cluster.namesrv, TOPIC, args.backlog, args.body)
        for batch in args.batches:
            for mode in ("pull", "pop"):
                name = f"{mode} b{batch}"
                results[name] = await drain(
                    cluster.namesrv, mode, batch, args.backlog, f"g-{mode}-{batch}"
                )
                print(name, json.dumps(results[name]), file=sys.stderr, flush=True)
        if args.kill:
            results["kill"] = await kill_run(
                cluster.namesrv, args.kill_backlog, args.victim_ms, args.kill_after
            )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.pop_drain", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--victim", nargs=3, metavar=("NAMESRV", "GROUP", "MS"), help=argparse.SUPPRESS
    )
    parser.add_argument("--backlog", type=int, help="messages drained (20000; --quick: 2000)")
    parser.add_argument("--quick", action="store_true", help="a short run (under a minute)")
    parser.add_argument("--body", type=int, default=1024)
    parser.add_argument("--queues", type=int, default=4)
    parser.add_argument("--batches", type=lambda t: [int(x) for x in t.split(",")], default=[1, 32])
    parser.add_argument("--kill", action="store_true", help="also run the consumer-killed check")
    parser.add_argument("--kill-backlog", type=int, default=500)
    parser.add_argument("--kill-after", type=int, default=100, help="SIGKILL once it saw this many")
    parser.add_argument(
        "--victim-ms", type=float, default=5.0, help="the victim's time per message"
    )
    args = parser.parse_args(argv)
    args.backlog = args.backlog or (2_000 if args.quick else 20_000)
    if args.victim:
        namesrv, group, ms = args.victim
        asyncio.run(victim(namesrv, group, float(ms)))
        return 0
    print(json.dumps(asyncio.run(run(args)), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
