"""Memory over a million sends: RSS, tracemalloc, tasks, connections, pending requests.

Against ``python -m producer cluster --sink --brokers 1`` in its own process (so the
broker's memory is not ours), the producer sends ``--sends`` 1 KiB messages with
``send_async`` keeping ``--window`` outstanding (or ``--mode await``: that many tasks
each awaiting ``send``). ``tracemalloc`` runs from the start. At each of ``--samples``
points the load pauses until nothing is in flight, the garbage collector runs, and one
sample is taken: RSS (``VmRSS`` of ``/proc/self/status``), traced memory,
``len(asyncio.all_tasks())``, open connections and their ``pending_count``, and
``producer.in_flight``. Growth after ``--warmup-share`` of the sends compares the median of
the last quarter of the pauses with the median of the first quarter.

``results``: ``samples`` (a list of those readings), ``growth`` (relative RSS and traced
growth after warm-up, task and connection deltas, the most pending seen at a pause).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
import tracemalloc
from types import TracebackType
from typing import Any

from rich.table import Table

from benchmarks import _common as common
from benchmarks._cluster import ClusterProcess
from benchmarks._loads import AwaitLoad, PipelineLoad
from producer import Message, Producer
from producer._transport import Connection, Connector, default_connector

NAME = "memory"
TOPIC = "BenchMemory"


class CountingConnector:
    """The default connector, remembering the connections it made (for the census)."""

    def __init__(self) -> None:
        self.inner: Connector | None = None
        self.connections: list[Connection] = []
        self.opened = 0

    async def __aenter__(self) -> CountingConnector:
        self.inner = default_connector()
        await self.inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self.inner is not None
        return await self.inner.__aexit__(exc_type, exc, tb)

    async def connect(self, address: str, timeout_ms: float) -> Connection:
        assert self.inner is not None
        connection = await self.inner.connect(address, timeout_ms)
        self.opened += 1
        self.connections = [c for c in self.connections if not c.is_closed] + [connection]
        return connection

    def census(self) -> tuple[int, int]:
        """(open connections, their pending requests)."""
        live = [c for c in self.connections if not c.is_closed]
        return len(live), sum(c.pending_count for c in live)


def build_parser() -> argparse.ArgumentParser:
    parser = common.base_parser(NAME, __doc__.split("\n\n")[0])
    parser.add_argument(
        "--sends", type=common.positive_int, help="messages (1,000,000; --quick: 60,000)"
    )
    parser.add_argument("--mode", choices=("async", "await"), default="async")
    parser.add_argument("--window", type=common.positive_int, default=1000, help="in flight")
    parser.add_argument("--samples", type=common.positive_int, default=40, help="pause points")
    parser.add_argument("--warmup-share", type=float, default=0.1, help="share of the sends")
    parser.add_argument("--body", type=common.positive_int, default=1024, help="body bytes")
    parser.add_argument(
        "--tracemalloc",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="trace allocations too (--no-tracemalloc: RSS only, about 3x faster)",
    )
    return parser


def settle_args(args: argparse.Namespace) -> argparse.Namespace:
    args.sends = args.sends or (60_000 if args.quick else 1_000_000)
    if not 0 <= args.warmup_share < 1:
        raise SystemExit("--warmup-share must be in [0, 1)")
    return args


async def _quiesce(load: AwaitLoad | PipelineLoad, connector: CountingConnector) -> None:
    """Stop the load; give the producer's own upkeep (heartbeats, probes) up to 0.5 s to
    finish what it has in flight; collect garbage."""
    await load.stop()
    for _ in range(50):
        if not connector.census()[1]:
            break
        await asyncio.sleep(0.01)
    gc.collect()


def sample(
    sends: int, started: float, producer: Producer, connector: CountingConnector
) -> dict[str, Any]:
    current, peak = tracemalloc.get_traced_memory()
    connections, pending = connector.census()
    return {
        "sends": sends,
        "elapsed_s": round(time.perf_counter() - started, 3),
        "rss_bytes": common.rss_bytes(),
        "traced_bytes": current,
        "traced_peak_bytes": peak,
        "tasks": len(asyncio.all_tasks()),
        "connections": connections,
        "connections_opened": connector.opened,
        "pending": pending,
        "in_flight": producer.in_flight,
    }


async def run_sends(args: argparse.Namespace, namesrv: str) -> list[dict[str, Any]]:
    message = Message(TOPIC, b"x" * args.body)
    connector = CountingConnector()
    samples: list[dict[str, Any]] = []
    step = max(1, args.sends // args.samples)
    async with Producer("bench-memory", namesrv=namesrv, connector=connector) as producer:
        await producer.send(message)
        started, done = time.perf_counter(), 0
        samples.append(sample(done, started, producer, connector))
        with common.progress() as bar:
            task = bar.add_task(f"{args.mode} sends", total=args.sends)
            while done < args.sends:
                target = min(done + step, args.sends)
                load: AwaitLoad | PipelineLoad
                if args.mode == "async":
                    load = PipelineLoad(producer, message, args.window, limit=target - done)
                else:
                    load = AwaitLoad(producer, message, args.window, limit=target - done)
                await load.start()
                await load.finished()
                await _quiesce(load, connector)
                done += load.counter.done + load.counter.failed
                samples.append(sample(done, started, producer, connector))
                bar.update(task, completed=done)
    return samples


def growth(samples: list[dict[str, Any]], warmup_sends: float) -> dict[str, Any]:
    """Change after warm-up, robust to what happens to be alive at one pause: the median
    of the last quarter of the samples against the median of the first quarter."""
    after = [s for s in samples if s["sends"] >= warmup_sends] or samples[-1:]
    quarter = max(1, len(after) // 4)
    head, tail = after[:quarter], after[-quarter:]

    def change(key: str) -> float | None:
        before = common.median([s[key] for s in head])
        return (common.median([s[key] for s in tail]) - before) / before if before else None

    def mib(values: list[float], digits: int = 2) -> list[float]:
        return [round(v / 2**20, digits) for v in values]

    return {
        "from_sends": after[0]["sends"],
        "to_sends": after[-1]["sends"],
        "quarter_samples": quarter,
        "rss_growth": change("rss_bytes"),
        "traced_growth": change("traced_bytes"),
        "rss_mib": mib([after[0]["rss_bytes"], after[-1]["rss_bytes"]]),
        "rss_mib_range": mib(
            [min(s["rss_bytes"] for s in after), max(s["rss_bytes"] for s in after)]
        ),
        "traced_mib": mib([after[0]["traced_bytes"], after[-1]["traced_bytes"]], 3),
        "traced_mib_range": mib(
            [min(s["traced_bytes"] for s in after), max(s["traced_bytes"] for s in after)], 3
        ),
        "tasks_delta": after[-1]["tasks"] - after[0]["tasks"],
        "connections_delta": after[-1]["connections"] - after[0]["connections"],
        "max_pending_at_pause": max(s["pending"] for s in samples),
        "max_in_flight_at_pause": max(s["in_flight"] for s in samples),
    }


def targets_of(summary: dict[str, Any]) -> list[common.Target]:
    traced = []
    if summary["traced_growth"] is not None:  # None: run with --no-tracemalloc
        traced.append(
            common.Target("traced memory growth after warm-up", summary["traced_growth"], "<", 0.05)
        )
    return [
        common.Target("RSS growth after warm-up", summary["rss_growth"], "<", 0.05),
        *traced,
        common.Target("asyncio tasks growth", summary["tasks_delta"], "<=", 0),
        common.Target("open connections growth", summary["connections_delta"], "<=", 0),
        common.Target("pending requests at a pause", summary["max_pending_at_pause"], "<=", 0),
        common.Target("producer.in_flight at a pause", summary["max_in_flight_at_pause"], "<=", 0),
    ]


def print_table(samples: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    table = Table(title="Memory at pauses (nothing in flight, after gc.collect())")
    for column in (
        "sends",
        "elapsed s",
        "RSS MiB",
        "traced MiB",
        "traced peak MiB",
        "tasks",
        "connections",
        "pending",
        "in_flight",
    ):
        table.add_column(column, justify="right")
    shown = samples[:: max(1, len(samples) // 10)]
    if shown[-1] is not samples[-1]:
        shown.append(samples[-1])
    for s in shown:
        table.add_row(
            f"{s['sends']:,}",
            common.fmt(s["elapsed_s"], 1),
            common.fmt(s["rss_bytes"] / 2**20, 1),
            common.fmt(s["traced_bytes"] / 2**20, 2),
            common.fmt(s["traced_peak_bytes"] / 2**20, 2),
            str(s["tasks"]),
            str(s["connections"]),
            str(s["pending"]),
            str(s["in_flight"]),
        )
    common.out.print(table)
    traced = "tracemalloc off"
    if summary["traced_growth"] is not None:
        low, high = summary["traced_mib_range"]
        traced = f"traced {100 * summary['traced_growth']:+.2f}% (range {low}-{high} MiB)"
    low, high = summary["rss_mib_range"]
    common.out.print(
        f"after warm-up ({summary['from_sends']:,} -> {summary['to_sends']:,} sends; growth ="
        f" median of the last {summary['quarter_samples']} pauses vs the first"
        f" {summary['quarter_samples']}): RSS {100 * (summary['rss_growth'] or 0):+.2f}%"
        f" (range {low}-{high} MiB), {traced}"
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = settle_args(build_parser().parse_args(argv))
    started, machine = time.monotonic(), common.machine_info()
    if args.tracemalloc:
        tracemalloc.start()
    with ClusterProcess(brokers=1, topics={TOPIC: 4}, sink=True) as cluster:
        samples = common.run(lambda: run_sends(args, cluster.namesrv), args.loop)
    if args.tracemalloc:
        tracemalloc.stop()
    summary = growth(samples, args.warmup_share * args.sends)
    results = {"samples": samples, "growth": summary, "server": {"command": cluster.command[1:]}}
    targets = targets_of(summary)
    return common.finish(
        args,
        NAME,
        argv,
        results=results,
        targets=targets,
        plot="memory",
        show=lambda: print_table(samples, summary),
        started=started,
        machine=machine,
    )


if __name__ == "__main__":
    raise SystemExit(main())
