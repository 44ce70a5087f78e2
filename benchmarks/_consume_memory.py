"""``python -m benchmarks.consume --memory N``: memory over N consumed messages.

One ``PushConsumer`` (concurrent, ``async def`` listener, batch size 1: the default)
drains the pull sink's endless backlog; at every ``N / --samples`` messages the garbage
collector runs and RSS, Python's allocated blocks (``sys.getallocatedblocks``: the
interpreter's own heap, free of allocator slack), live asyncio tasks and messages held are
sampled; with ``--tracemalloc`` also the memory tracemalloc traces (which slows the run
several-fold). Growth after the first fifth compares the median of the last quarter of
the samples with the first's.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
import tracemalloc
from typing import Any

from rich.table import Table

from benchmarks import _common as common
from benchmarks._cluster import ClusterProcess
from benchmarks._consume_runs import POLL_S, Mode, Runs

MODE = Mode("async")
WARMUP_SHARE = 0.2


def _sample(consumed: int, started: float, stats: dict[str, int]) -> dict[str, Any]:
    gc.collect()
    return {
        "consumed": consumed,
        "seconds": round(time.perf_counter() - started, 2),
        "rss_bytes": common.rss_bytes(),
        "blocks": sys.getallocatedblocks(),
        "traced_bytes": tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else None,
        "tasks": len(asyncio.all_tasks()),
        "held": stats["held"],
        "in_flight": stats["in_flight"],
    }


async def run_memory(args: argparse.Namespace, namesrv: str) -> dict[str, Any]:
    runs = Runs(args, namesrv, None)
    consumer = runs.consumer(MODE)
    step = max(1, args.memory // args.samples)
    samples: list[dict[str, Any]] = []
    if args.tracemalloc:
        tracemalloc.start()
    async with consumer:
        started, next_at = time.perf_counter(), 0
        while next_at <= args.memory:
            while consumer.stats["consumed"] < next_at:  # noqa: ASYNC110 - polls a count
                await asyncio.sleep(POLL_S)
            samples.append(_sample(consumer.stats["consumed"], started, consumer.stats))
            next_at += step
    return {"samples": samples, "growth": growth(samples, args.memory * WARMUP_SHARE)}


def growth(samples: list[dict[str, Any]], warmup: float) -> dict[str, Any]:
    after = [s for s in samples if s["consumed"] >= warmup] or samples[-1:]
    quarter = max(1, len(after) // 4)

    def ends(key: str) -> tuple[float, float]:  # medians of the first and last quarters
        return (
            common.median([s[key] for s in after[:quarter]]),
            common.median([s[key] for s in after[-quarter:]]),
        )

    (head, tail), (blocks_head, blocks_tail) = ends("rss_bytes"), ends("blocks")
    return {
        "from_consumed": after[0]["consumed"],
        "to_consumed": after[-1]["consumed"],
        "rss_growth": round((tail - head) / head, 4) if head else None,
        "rss_mib": [round(head / 2**20, 2), round(tail / 2**20, 2)],
        "blocks_growth": round((blocks_tail - blocks_head) / blocks_head, 4),
        "tasks_delta": after[-1]["tasks"] - after[0]["tasks"],
        "max_held": max(s["held"] for s in samples),
    }


def print_table(results: dict[str, Any]) -> None:
    table = Table(title=f"Consumer memory ({MODE.name}; gc.collect() before each sample)")
    columns = ("consumed", "seconds", "RSS MiB", "blocks", "traced MiB", "tasks", "held")
    for column in (*columns, "in flight"):
        table.add_column(column, justify="right")
    for s in results["samples"]:
        traced = s["traced_bytes"]
        table.add_row(
            f"{s['consumed']:,}",
            common.fmt(s["seconds"], 1),
            common.fmt(s["rss_bytes"] / 2**20, 1),
            f"{s['blocks']:,}",
            "-" if traced is None else common.fmt(traced / 2**20, 2),
            str(s["tasks"]),
            str(s["held"]),
            str(s["in_flight"]),
        )
    common.out.print(table)


def main_memory(args: argparse.Namespace, argv: list[str]) -> int:
    started, machine = time.monotonic(), common.machine_info()
    topics = {args.topic: args.queues}
    with ClusterProcess(brokers=1, topics=topics, sink=False, pull_sink=True) as cluster:
        results = common.run(lambda: run_memory(args, cluster.namesrv), args.loop)
    summary = results["growth"]
    targets = [
        common.Target("RSS growth after warm-up", summary["rss_growth"], "<", 0.05),
        common.Target("allocated blocks growth after warm-up", summary["blocks_growth"], "<", 0.05),
        common.Target("asyncio tasks growth", summary["tasks_delta"], "<=", 0),
    ]
    return common.finish(
        args,
        "consume",
        argv,
        results=results,
        targets=targets,
        plot="consume_memory",
        show=lambda: print_table(results),
        started=started,
        machine=machine,
    )
