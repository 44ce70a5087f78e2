"""How fast the push consumer drains a backlog, against the raw-pull limit on the same broker.

By default it starts ``python -m producer cluster --pull-sink --brokers 1`` as a separate
process: its topic is an endless backlog of 1 KiB records answered from a pre-built
commit log, so the broker is not the bottleneck (its CPU is read from ``/proc``). Each
round runs every mode once, in a rotated order, for a timed window after a warm-up:

* ``raw pull``            - :mod:`benchmarks._puller`: ``--depth`` pulls in flight per
  queue, records counted by their size words (the limit);
* ``concurrent|orderly plain|async bN`` - a ``PushConsumer`` (fresh group, from offset 0)
  with a plain-function or ``async def`` listener and ``consume_batch_size=N``.

``--broker dev`` uses the ordinary dev cluster instead, and ``--namesrv`` a real cluster:
the topic is filled with ``--backlog`` messages first, and each mode drains it whole
with a fresh group (the raw puller pulls every queue until empty; its count is the
backlog). ``--memory N`` consumes N messages in one mode and samples RSS instead.

``results.modes.<mode>``: per-round readings (msgs/s, client CPU us per message,
client and broker CPU as a fraction of a core), medians and [min, max] spreads, and the
median of the per-round ratios to the raw puller. CPU is ``time.process_time()``
(all threads); wall-clock msgs/s on a shared machine is noisy, CPU per message less so.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from rich.markup import escape
from rich.table import Table

from benchmarks import _common as common
from benchmarks._cluster import ClusterProcess
from benchmarks._consume_runs import Mode, Runs
from producer import Message, Producer

NAME = "consume"
LIMIT = Mode("raw")


def build_parser() -> argparse.ArgumentParser:
    parser = common.base_parser(NAME, __doc__.split("\n\n")[0])
    parser.add_argument("--namesrv", help="a real cluster's name server (default: a pull sink)")
    parser.add_argument(
        "--broker", choices=("sink", "dev"), default="sink", help="the local broker kind"
    )
    parser.add_argument("--topic", default="BenchConsume", help="topic to consume")
    parser.add_argument("--queues", type=common.positive_int, default=8, help="local queues")
    parser.add_argument(
        "--listeners", default="plain,async", help="listener kinds: plain, async (comma list)"
    )
    parser.add_argument("--batches", type=common.int_list, default=[1, 32], help="batch sizes")
    parser.add_argument(
        "--kinds", default="concurrent,orderly", help="concurrent, orderly (comma list)"
    )
    parser.add_argument("--depth", type=common.positive_int, default=2, help="raw pulls/queue")
    parser.add_argument(
        "--duration", type=common.positive_float, help="seconds per window (5; --quick: 1.5)"
    )
    parser.add_argument(
        "--warmup", type=common.positive_float, help="seconds before each (1.5; --quick: 0.5)"
    )
    parser.add_argument("--rounds", type=common.positive_int, help="rounds (3; --quick: 1)")
    parser.add_argument(
        "--backlog", type=common.positive_int, help="drain mode: messages (100000; quick 5000)"
    )
    parser.add_argument(
        "--drain-timeout", type=common.positive_float, default=600.0, help="drain limit (s)"
    )
    parser.add_argument("--memory", type=common.positive_int, help="memory mode: messages")
    parser.add_argument("--samples", type=common.positive_int, default=20, help="memory samples")
    parser.add_argument(
        "--tracemalloc", action="store_true", help="memory mode: sample traced memory too"
    )
    return parser


def settle_args(args: argparse.Namespace) -> argparse.Namespace:
    quick = args.quick
    args.duration = args.duration or (1.5 if quick else 5.0)
    args.warmup = args.warmup or (0.5 if quick else 1.5)
    args.rounds = args.rounds or (1 if quick else 3)
    args.backlog = args.backlog or (5000 if quick else 100_000)
    return args


def modes_of(args: argparse.Namespace) -> list[Mode]:
    listeners = [k.strip() for k in args.listeners.split(",") if k.strip()]
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    return [LIMIT] + [
        Mode(listener, batch, kind == "orderly")
        for kind in kinds
        for batch in args.batches
        for listener in listeners
    ]


async def fill(namesrv: str, topic: str, count: int) -> None:
    """``count`` 1 KiB messages into ``topic`` (drain mode), 32 to a batch."""
    async with Producer("bench-consume-fill", namesrv=namesrv) as producer:
        body = b"x" * 1024
        for start in range(0, count, 32):
            batch = [Message(topic, body, tags="TagA") for _ in range(min(32, count - start))]
            await producer.send_batch(batch)


async def run_bench(args: argparse.Namespace, namesrv: str, pid: int | None) -> dict[str, Any]:
    runs = Runs(args, namesrv, pid)
    drained = args.broker == "dev" or bool(args.namesrv)
    if drained:
        await fill(namesrv, args.topic, args.backlog)
    await runs.prepare()
    modes = modes_of(args)
    rounds: dict[str, list[dict[str, Any]]] = {m.name: [] for m in modes}
    with common.progress() as bar:
        task = bar.add_task(NAME, total=len(modes) * args.rounds)
        for n in range(args.rounds):
            # the raw drain comes first (it finds the backlog); windows rotate, so a drift
            # in machine load hits every mode
            order = modes if drained else modes[n % len(modes) :] + modes[: n % len(modes)]
            for mode in order:
                bar.update(task, description=f"round {n + 1}: {mode.name}")
                if mode is LIMIT:
                    reading = await runs.raw(drained)
                else:
                    reading = await runs.sdk(mode, drained)
                rounds[mode.name].append(reading)
                bar.advance(task)
    return summarize(modes, rounds, drained)


def _spread(values: list[float]) -> list[float]:
    return [round(min(values), 2), round(max(values), 2)] if values else []


def summarize(
    modes: list[Mode], rounds: dict[str, list[dict[str, Any]]], drained: bool
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    limits = rounds[LIMIT.name]
    for mode in modes:
        entries = rounds[mode.name]
        row: dict[str, Any] = {"listener": mode.listener, "batch": mode.batch}
        row["orderly"], row["rounds"] = mode.orderly, entries
        for key in ("msgs_per_s", "cpu_us_per_msg", "client_cpu", "server_cpu"):
            values = [float(e[key]) for e in entries if e.get(key) is not None]
            row[key] = round(common.median(values), 2) if values else None
            row[f"{key}_spread"] = _spread(values)
        ratios = [
            common.ratio(e["msgs_per_s"], limit["msgs_per_s"])
            for e, limit in zip(entries, limits, strict=True)
        ]
        found = [r for r in ratios if r is not None]
        row["ratio"] = round(common.median(found), 3) if found else None
        out[mode.name] = row
    return {"modes": out, "drain": drained}


def targets_of(results: dict[str, Any]) -> list[common.Target]:
    """Issue 23's targets, for the modes this run measured."""
    modes = results["modes"]
    checks = [
        ("concurrent async b1", "cpu_us_per_msg", "<=", 15.0),
        ("concurrent async b1", "ratio", ">=", 0.7),
        ("concurrent plain b1", "cpu_us_per_msg", "<=", 30.0),
        ("concurrent async b32", "cpu_us_per_msg", "<=", 8.0),
        ("concurrent plain b32", "cpu_us_per_msg", "<=", 8.0),
    ]
    targets = [
        common.Target(f"{name} {key}", modes[name][key], op, goal)
        for name, key, op, goal in checks
        if name in modes and modes[name][key] is not None
    ]
    for name, row in modes.items():
        twin = modes.get(name.replace("orderly", "concurrent"))
        if row["orderly"] and twin is not None and row["msgs_per_s"]:
            slower = common.ratio(twin["msgs_per_s"], row["msgs_per_s"])
            label = f"{name}: concurrent / orderly msgs/s"
            targets.append(common.Target(label, slower, "<=", 2.0))
    return targets


def print_table(results: dict[str, Any]) -> None:
    title = "drains of the backlog" if results.get("drain") else "windows on an endless backlog"
    table = Table(
        title=escape(f"Push consumer vs raw pulls, {title} (medians [min-max] over rounds)")
    )
    for column in ("mode", "msg/s", "/ raw", "client us/msg", "client CPU", "broker CPU"):
        table.add_column(column, justify="left" if column == "mode" else "right")
    for name, row in results["modes"].items():
        rate = "-".join(common.fmt(v, 0) for v in row["msgs_per_s_spread"])
        cpu = "-".join(common.fmt(v, 1) for v in row["cpu_us_per_msg_spread"])
        table.add_row(
            name,
            escape(f"{common.fmt(row['msgs_per_s'], 0)} [{rate}]"),
            common.fmt(row["ratio"], 3),
            escape(f"{common.fmt(row['cpu_us_per_msg'], 1)} [{cpu}]"),
            common.fmt(row["client_cpu"]),
            common.fmt(row["server_cpu"]),
        )
    common.out.print(table)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = settle_args(build_parser().parse_args(argv))
    if args.memory:
        from benchmarks._consume_memory import main_memory

        return main_memory(args, argv)
    started, machine = time.monotonic(), common.machine_info()
    if args.namesrv:
        results = common.run(lambda: run_bench(args, args.namesrv, None), args.loop)
        results["server"] = {"namesrv": args.namesrv}
    else:
        sink = args.broker == "sink"
        topics = {args.topic: args.queues}
        with ClusterProcess(brokers=1, topics=topics, sink=False, pull_sink=sink) as cluster:
            results = common.run(lambda: run_bench(args, cluster.namesrv, cluster.pid), args.loop)
            results["server"] = {"pull_sink": sink, "command": cluster.command[1:]}
    return common.finish(
        args,
        NAME,
        argv,
        results=results,
        targets=targets_of(results),
        plot="consume",
        show=lambda: print_table(results),
        started=started,
        machine=machine,
    )


if __name__ == "__main__":
    raise SystemExit(main())
