"""Reading a topic's backlog: Spark's ``rocketmq`` batch read vs the consumers draining it.

A 2-broker x 4-queue dev cluster (a process of its own, storing every message) is filled
with ``--messages`` ~100-byte messages once; the same backlog is then read three ways:

* ``spark read``    - ``spark.read.format("rocketmq")`` in ``local[2]`` (8 partitions, one
  per queue), aggregated (count and total body bytes) so every row crosses into the JVM;
* ``push consumer`` - a ``PushConsumer`` (``consume_from="first"``) counting messages in
  its listener until it has them all;
* ``pull consumer`` - one ``PullConsumer`` ``getmany`` loop over the 8 queues.

Rows/s count wall time of the read alone (Spark's session and Python workers are warmed up
on another topic first). CPU per message is the client side's CPU (for Spark: the driver,
its JVM and the Python workers, summed over the process tree, the cluster's process left
out) over the messages, with the broker process's CPU beside it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from rich.table import Table

from benchmarks import _common as common
from benchmarks._cluster import ClusterProcess

NAME = "spark_read"
TOPIC, WARM = "Backlog", "Warm"
MODES = ("spark read", "push consumer", "pull consumer")


def build_parser() -> argparse.ArgumentParser:
    parser = common.base_parser(NAME, __doc__.split("\n\n")[0])
    parser.add_argument(
        "--messages", type=common.positive_int, help="backlog size (1000000; quick 20000)"
    )
    return parser


def tree_cpu_seconds(root: int, leave_out: int) -> float:
    """CPU seconds of ``root`` and every live process below it (Spark's JVM, workers),
    but for ``leave_out`` and its own (the cluster: a child too, counted as the broker)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    family, grew = {root}, True
    while grew:
        more = {p for p, parent in parents.items() if parent in family} - family - {leave_out}
        family |= more
        grew = bool(more)
    return sum(common.cpu_seconds(pid) or 0.0 for pid in family)


def fill(namesrv: str, topic: str, count: int) -> None:
    from producer import Message
    from producer.blocking import Producer

    body = b"x" * 100

    async def send_all(producer: Any) -> None:
        import asyncio

        batch = 64
        gate = asyncio.Semaphore(16)

        async def one(n: int) -> None:
            async with gate:
                await producer.send_batch([Message(topic, body) for _ in range(n)])

        sizes = [batch] * (count // batch) + ([count % batch] if count % batch else [])
        await asyncio.gather(*(one(n) for n in sizes))

    with Producer("bench-fill", namesrv) as producer:
        producer.submit(send_all).result()


def measure(cluster: ClusterProcess, messages: int, work: Any, *, tree: bool) -> dict[str, Any]:
    me, broker = os.getpid(), cluster.pid
    cpu = tree_cpu_seconds(me, broker) if tree else common.cpu_seconds() or 0.0
    broker_cpu = cluster.cpu_seconds() or 0.0
    began = time.perf_counter()
    got = work()
    seconds = time.perf_counter() - began
    used = (tree_cpu_seconds(me, broker) if tree else common.cpu_seconds() or 0.0) - cpu
    broker_used = (cluster.cpu_seconds() or 0.0) - broker_cpu
    return {
        "messages": got,
        "seconds": round(seconds, 3),
        "rows_per_s": round(got / seconds),
        "client_cpu_us_per_msg": round(used / got * 1e6, 1),
        "broker_cpu_us_per_msg": round(broker_used / got * 1e6, 1),
    }


def spark_read(namesrv: str, messages: int) -> Any:
    from pyspark.sql import functions as sf

    from producer.spark import register

    spark = common.local_spark(NAME)
    register(spark)

    def read(topic: str) -> int:
        df = spark.read.format("rocketmq").option("namesrv", namesrv).option("topic", topic)
        row = df.load().agg(sf.count("*").alias("n"), sf.sum(sf.length("body"))).collect()[0]
        return int(row["n"])

    read(WARM)  # the JVM, the Python workers and the imports, unmeasured
    return spark, lambda: read(TOPIC)


def push_drain(namesrv: str, messages: int, loop: str) -> int:
    import anyio

    from producer.consumer import ConsumeStatus, PushConsumer

    async def main() -> int:
        seen = 0
        done = anyio.Event()

        def listener(batch: list[Any]) -> ConsumeStatus:
            nonlocal seen
            seen += len(batch)
            if seen >= messages:
                done.set()
            return ConsumeStatus.SUCCESS

        consumer = PushConsumer(
            "bench-push", namesrv, listener=listener, consume_from="first", consume_batch_size=32
        )
        consumer.subscribe(TOPIC)
        async with consumer:
            await done.wait()
        return seen

    return common.run(main, loop)


def pull_drain(namesrv: str, messages: int, loop: str) -> int:
    from producer.consumer import PullConsumer

    async def main() -> int:
        seen = 0
        async with PullConsumer("bench-pull", namesrv, auto_offset_reset="earliest") as c:
            c.assign(await c.queues(TOPIC))
            await c.seek_to_beginning()
            while seen < messages:
                seen += sum(len(b) for b in (await c.getmany(timeout_ms=1000)).values())
        return seen

    return common.run(main, loop)


def print_table(results: dict[str, Any]) -> None:
    table = Table(title=f"reading a backlog of {results['messages']:,} messages")
    for column in ("mode", "rows/s", "client CPU us/msg", "broker CPU us/msg"):
        table.add_column(column, justify="left" if column == "mode" else "right")
    for mode in MODES:
        m = results["modes"][mode]
        table.add_row(
            mode,
            f"{m['rows_per_s']:,}",
            str(m["client_cpu_us_per_msg"]),
            str(m["broker_cpu_us_per_msg"]),
        )
    common.out.print(table)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    args.messages = args.messages or (20_000 if args.quick else 1_000_000)
    args.plots = False  # one table says it all
    started, machine = time.monotonic(), common.machine_info()
    with ClusterProcess(brokers=2, topics={TOPIC: 4, WARM: 4}, sink=False) as cluster:
        fill(cluster.namesrv, TOPIC, args.messages)
        fill(cluster.namesrv, WARM, 1000)
        spark, read = spark_read(cluster.namesrv, args.messages)
        try:
            modes = {"spark read": measure(cluster, args.messages, read, tree=True)}
        finally:
            spark.stop()
        drains = {"push consumer": push_drain, "pull consumer": pull_drain}
        for mode, drain in drains.items():
            work = lambda drain=drain: drain(cluster.namesrv, args.messages, args.loop)  # noqa: E731
            modes[mode] = measure(cluster, args.messages, work, tree=False)
    results = {"messages": args.messages, "modes": modes}
    return common.finish(
        args,
        NAME,
        argv,
        results=results,
        targets=[],
        plot=NAME,
        show=lambda: print_table(results),
        started=started,
        machine=machine,
    )


if __name__ == "__main__":
    raise SystemExit(main())
