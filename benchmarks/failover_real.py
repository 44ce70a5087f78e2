"""A master SIGKILLed under a push consumer with a backlog, on a real cluster with slaves
(docs/consuming.md 8.4): how long the group's reads pause, and whether all are read.

    # a RocketMQ 4.9.4 of 2 groups, each a master and a slave, its name server on :9876
    mqadmin updateTopic -n 127.0.0.1:9876 -c DefaultCluster -t Fo1 -r 4 -w 4
    sleep 11                                                  # the slave copies topic configs
    python -m benchmarks.failover_real --namesrv 127.0.0.1:9876 --topic Fo1 \\
        --pid-file BROKER_A_MASTER.pid

It sends ``--count`` messages, waits 3 s (the slaves catch up), then a new group reads from the
first offset 4 at a time, 10 ms per message, holding at most 8 messages per queue (so the
backlog stays on the broker); after ``--kill-after`` reads it SIGKILLs the pid in
``--pid-file`` (broker-a's master) and reports the longest pause in broker-a's reads from
then on. ``benchmarks/java/SlowConsumer.java`` is the same consumer written for the official
Java client (compile it against the 4.9.4 client jars), to run beside it.
"""

from __future__ import annotations

import argparse
import itertools
import os
import signal
import time
from collections import Counter

import anyio

from producer import Message, Producer
from producer.consumer import ConsumeStatus, PushConsumer, ReceivedMessage

HELD_PER_QUEUE = 8
CONCURRENCY = 4
PER_MESSAGE_S = 0.01


async def produce(namesrv: str, topic: str, count: int) -> Counter[str]:
    """``count`` messages with bodies ``0..count-1``; how many each broker stored."""
    per_broker: Counter[str] = Counter()
    async with Producer("failover-real-p", namesrv=namesrv) as producer:
        for n in range(count):
            result = await producer.send(Message(topic, str(n).encode()))
            per_broker[result.queue.broker_name] += 1
    return per_broker


async def consume(args: argparse.Namespace) -> str:
    seen: Counter[bytes] = Counter()
    a_times: list[float] = []
    killed_at = 0.0

    async def handle(messages: list[ReceivedMessage]) -> ConsumeStatus:
        for message in messages:
            seen[message.body] += 1
            if message.queue.broker_name == args.broker:
                a_times.append(time.monotonic())
            await anyio.sleep(PER_MESSAGE_S)
        return ConsumeStatus.SUCCESS

    consumer = PushConsumer(
        f"failover-real-{args.topic}",
        namesrv=args.namesrv,
        listener=handle,
        consume_from="first",
        max_concurrency=CONCURRENCY,
        pull_batch_size=HELD_PER_QUEUE,
        max_cached_messages=HELD_PER_QUEUE,
    )
    consumer.subscribe(args.topic)
    started = time.monotonic()
    async with consumer:
        while len(seen) < args.count and time.monotonic() - started < args.timeout_s:
            await anyio.sleep(0.05)
            if not killed_at and len(seen) >= args.kill_after:
                os.kill(int(await anyio.Path(args.pid_file).read_text()), signal.SIGKILL)
                killed_at = time.monotonic()
    after = [killed_at, *(t for t in a_times if t > killed_at)] if killed_at else []
    longest = max((b - a for a, b in itertools.pairwise(after)), default=0.0)
    return (
        f"read {len(seen)} of {args.count} ({sum(seen.values())} deliveries); "
        f"{len(after) - 1 if after else 0} of {args.broker}'s read after the kill; longest "
        f"pause in its reads from the kill on {longest:.2f} s; "
        f"{time.monotonic() - started:.1f} s in all"
    )


async def run(args: argparse.Namespace) -> None:
    stored = await produce(args.namesrv, args.topic, args.count)
    print(f"sent {dict(stored)}", flush=True)
    await anyio.sleep(3)  # async replication: the slaves catch up
    print(await consume(args))


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--namesrv", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--pid-file", required=True, help="the master to SIGKILL")
    parser.add_argument("--broker", default="broker-a", help="the broker name of that master")
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--kill-after", type=int, default=500)
    parser.add_argument("--timeout-s", type=float, default=120.0)
    parser.add_argument(
        "--quick", action="store_true", help="400 messages, the master killed after 100 reads"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.count, args.kill_after = 400, 100
    return args


def main(argv: list[str] | None = None) -> int:
    anyio.run(run, parse(argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
