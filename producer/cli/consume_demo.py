"""``python -m producer consume-demo``: the consuming side of retry, live, against an
in-process cluster whose 18 delay levels are shortened (100 ms x level).

It publishes ``--messages`` orders; a push consumer fails ``--fail-rate`` of first
deliveries (RECONSUME_LATER: sent back, re-delivered through ``%RETRY%`` after a delay)
and every delivery of ``--poison`` orders (dead-lettered after ``--max-reconsume-times``
retries, each waiting a longer level). A line per second shows consumed, sent back, the
delay backlog and the DLQ. Then the "fix" is deployed: the dead letters are re-driven to
their topic and consumed. It ends with a verdict: every order consumed successfully,
duplicates counted; exit status 0 only if nothing was lost.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter
from typing import TextIO

import anyio

from producer import Message, Producer
from producer.cli.common import positive_int, wrapped
from producer.consumer import (
    ConsumeStatus,
    DeadLetterQueue,
    PushConsumer,
    ReceivedMessage,
    dlq_topic,
)
from producer.testing import DevCluster

__all__ = ["add_consume_demo_arguments", "run_consume_demo"]

TOPIC, GROUP = "DemoOrders", "demo-workers"
LEVELS = " ".join(f"{100 * n}ms" for n in range(1, 19))
TICK_S = 1.0
EXIT_LOST = 1


def add_consume_demo_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--messages", type=positive_int, default=2000, metavar="N")
    parser.add_argument(
        "--fail-rate",
        type=float,
        default=0.2,
        metavar="P",
        help="share of first deliveries that fail (default 0.2)",
    )
    parser.add_argument(
        "--poison",
        type=int,
        default=5,
        metavar="N",
        help="orders that fail every time until re-driven (default 5)",
    )
    parser.add_argument("--max-reconsume-times", type=positive_int, default=3, metavar="N")
    parser.add_argument("--seed", type=int, default=1)
    return parser


class DemoListener:
    """The demo's consumer: flaky on first deliveries, always failing on poison."""

    def __init__(self, poison: set[str], fail_rate: float, seed: int) -> None:
        self.poison = poison
        self.fail_rate = fail_rate
        self.rng = random.Random(seed)
        self.fixed = False  # the "deploy" that makes poison orders consumable
        self.succeeded: Counter[str] = Counter()
        self.failures = 0

    def __call__(self, messages: list[ReceivedMessage]) -> ConsumeStatus:
        (m,) = messages
        broken = m.msg_id in self.poison and not self.fixed
        if broken or (m.reconsume_times == 0 and self.rng.random() < self.fail_rate):
            self.failures += 1
            return ConsumeStatus.RECONSUME_LATER
        self.succeeded[m.msg_id] += 1
        return ConsumeStatus.SUCCESS


async def run_consume_demo(args: argparse.Namespace, out: TextIO) -> int:
    if not 0.0 <= args.fail_rate < 1.0 or not 0 <= args.poison <= args.messages:
        print("error: --fail-rate in [0, 1), --poison in [0, --messages]", file=out)
        return 2
    async with DevCluster(brokers=2, topics={TOPIC: 4}, delay_levels=LEVELS) as cluster:
        ids = await _publish(cluster.namesrv_addr, args.messages)
        poison = set(random.Random(args.seed).sample(ids, args.poison))
        listener = DemoListener(poison, args.fail_rate, args.seed)
        print(f"published {len(ids)} orders to {TOPIC}; {len(poison)} are poison", file=out)
        consumer = PushConsumer(
            GROUP,
            cluster.namesrv_addr,
            listener=listener,
            consume_from="first",
            persist_interval_ms=500,
            max_reconsume_times=args.max_reconsume_times,
        )
        consumer.subscribe(TOPIC)
        async with consumer:
            await _watch(
                cluster,
                consumer,
                listener,
                out,
                lambda: len(listener.succeeded) + _dead_letters(cluster)[0] >= len(ids),
            )
            dead, _ = _dead_letters(cluster)
            print(
                f"{dead} order(s) in %DLQ%{GROUP}; deploying the fix and re-driving them", file=out
            )
            listener.fixed = True
            await _redrive(cluster.namesrv_addr, out)
            await _watch(
                cluster, consumer, listener, out, lambda: len(listener.succeeded) >= len(ids)
            )
        return _verdict(ids, listener, out)


async def _publish(namesrv: str, count: int) -> list[str]:
    ids: list[str] = []
    async with Producer("demo-orders", namesrv) as producer:
        for start in range(0, count, 100):
            batch = [
                Message(TOPIC, b"order %d" % i, keys=[f"order-{i}"])
                for i in range(start, min(count, start + 100))
            ]
            ids += (await producer.send_batch(batch)).msg_ids
    return ids


async def _redrive(namesrv: str, out: TextIO) -> None:
    async with DeadLetterQueue(GROUP, namesrv) as dlq, Producer("demo-redrive", namesrv) as p:
        letters = await dlq.read()
        await dlq.redrive(letters, p)
    print(f"re-drove {len(letters)} dead letter(s) to {TOPIC}", file=out)


async def _watch(
    cluster: DevCluster,
    consumer: PushConsumer,
    listener: DemoListener,
    out: TextIO,
    finished: object,
) -> None:
    """A line of counters each tick until ``finished()``, and one for the state that ended it."""
    started = time.monotonic()
    with anyio.fail_after(120):
        while not finished():  # type: ignore[operator]
            await anyio.sleep(TICK_S)
            print(_tick(cluster, consumer, listener, time.monotonic() - started), file=out)
    print(_tick(cluster, consumer, listener, time.monotonic() - started), file=out)


def _tick(
    cluster: DevCluster, consumer: PushConsumer, listener: DemoListener, seconds: float
) -> str:
    backlog = sum(sum(cluster.delay_backlog(b).values()) for b in cluster.broker_names)
    stats = consumer.stats
    letters, redriven = _dead_letters(cluster)
    return (
        f"t={seconds:5.1f}s consumed={len(listener.succeeded):>6} "
        f"failed={listener.failures:>5} sent_back={stats['sent_back']:>5} "
        f"delayed={backlog:>4} dlq={letters:>3} redriven={redriven:>3} lag={stats['lag']:>5}"
    )


def _dead_letters(cluster: DevCluster) -> tuple[int, int]:
    """``(letters, re-driven)`` in the group's DLQ: a re-drive's marks are not letters."""
    stored = cluster.messages(dlq_topic(GROUP))
    marks = sum(1 for m in stored if DeadLetterQueue.is_redrive_mark(m.properties))
    return len(stored) - marks, marks


def _verdict(ids: list[str], listener: DemoListener, out: TextIO) -> int:
    missing = set(ids) - set(listener.succeeded)
    duplicates = sum(n - 1 for n in listener.succeeded.values())
    verdict = (
        f"VERDICT: {len(ids) - len(missing)} of {len(ids)} orders consumed successfully, "
        f"{len(missing)} missing, {duplicates} duplicate deliveries "
        f"({listener.failures} failed deliveries retried through %RETRY% or the DLQ)"
    )
    print(wrapped(verdict), file=out)
    return EXIT_LOST if missing else 0
