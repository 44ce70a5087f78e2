"""Throughput and latency of the SDK against the protocol limit on the same broker.

By default it starts ``python -m producer cluster --sink --brokers 1`` as a separate
process (its CPU is read from ``/proc``); with ``--namesrv`` it measures a real cluster.
Each round runs every mode twice, back to back: the raw-frame blaster (see
:mod:`benchmarks._blaster`) with the same number of frames in flight, then the SDK:

* ``await xN``    - N tasks each awaiting ``send`` in a loop (N = 1, 4, 16, 256);
* ``async wW``    - ``send_async`` keeping W futures outstanding;
* ``batch BxC``   - C tasks awaiting ``send_batch`` of B messages (msgs/s counts messages).

``results.modes.<mode>`` holds per-round ``sdk`` / ``blaster`` windows (msgs/s, latency
p50/p99 in ms, client and server CPU as a fraction of a core) and the medians; the
headline ratios are medians of the per-round ratios: ``<side>_ratio`` of msgs/s and
``<side>_cpu_ratio`` of client CPU per message, each SDK side against the blaster of the
same round and mode.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from dataclasses import dataclass
from typing import Any

from rich.table import Table

from benchmarks import _common as common
from benchmarks._blaster import Blaster, BlastTarget, build_frames
from benchmarks._cluster import ClusterProcess
from benchmarks._loads import AwaitLoad, BatchLoad, PipelineLoad
from benchmarks._meter import measure
from producer import Message, Producer
from producer._remoting.producer_requests import parse_route_response, route_request
from producer._remoting.route import build_publish_queues, master_addresses
from producer._transport import AsyncioConnector

NAME = "throughput"
GROUP = "bench-producer"
SIDES = {
    "both": ("blaster", "sdk", "sdk_unbatched"),
    "on": ("blaster", "sdk"),
    "off": ("blaster", "sdk_unbatched"),
}
SIDE_NAMES = {"blaster": "blaster", "sdk": "SDK", "sdk_unbatched": "SDK, batching off"}


@dataclass(frozen=True)
class Mode:
    name: str
    kind: str  # "await" | "async" | "batch"
    inflight: int  # awaiting tasks, async window, or batches in flight
    batch: int = 0

    @property
    def blaster_window(self) -> int:
        return self.inflight


def build_parser() -> argparse.ArgumentParser:
    parser = common.base_parser(NAME, __doc__.split("\n\n")[0])
    parser.add_argument("--namesrv", help="a real cluster's name server (default: a sink)")
    parser.add_argument("--topic", default="BenchTopic", help="topic to send to")
    parser.add_argument("--queues", type=common.positive_int, default=4, help="sink queues")
    parser.add_argument(
        "--concurrency", type=common.int_list, default=[1, 4, 16, 256], help="await tasks"
    )
    parser.add_argument("--window", type=common.positive_int, default=1000, help="async window")
    parser.add_argument("--batch", type=common.positive_int, default=32, help="batch size")
    parser.add_argument(
        "--batch-concurrency", type=common.positive_int, default=16, help="batches in flight"
    )
    parser.add_argument("--body", type=common.positive_int, default=1024, help="body bytes")
    parser.add_argument(
        "--duration", type=common.positive_float, help="seconds per window (5; --quick: 1.5)"
    )
    parser.add_argument(
        "--warmup", type=common.positive_float, help="seconds before each (1; --quick: 0.3)"
    )
    parser.add_argument(
        "--rounds", type=common.positive_int, help="repetitions of all modes (3; --quick: 1)"
    )
    parser.add_argument(
        "--batching",
        choices=("both", "on", "off"),
        default="both",
        help="SDK with transparent batching on, off, or both side by side (default: both)",
    )
    parser.add_argument(
        "--routing",
        default="adaptive",
        choices=("off", "classic_4_9", "classic_5", "adaptive"),
        help="the producer's routing strategy",
    )
    return parser


def settle_args(args: argparse.Namespace) -> argparse.Namespace:
    quick = args.quick
    args.duration = args.duration or (1.5 if quick else 5.0)
    args.warmup = args.warmup or (0.3 if quick else 1.0)
    args.rounds = args.rounds or (1 if quick else 3)
    return args


def modes_of(args: argparse.Namespace) -> list[Mode]:
    modes = [Mode(f"await x{n}", "await", n) for n in args.concurrency]
    modes.append(Mode(f"async w{args.window}", "async", args.window))
    modes.append(
        Mode(
            f"batch {args.batch}x{args.batch_concurrency}",
            "batch",
            args.batch_concurrency,
            args.batch,
        )
    )
    return modes


async def fetch_targets(namesrv: str, topic: str) -> list[BlastTarget]:
    """The topic's brokers and write queues, asked of the name server with our own code."""
    async with AsyncioConnector() as connector:
        connection = await connector.connect(namesrv.split(";")[0], 3000)
        response = await connection.request(route_request(topic), 3000)
    route = parse_route_response(response)
    masters = master_addresses(route)
    by_broker: dict[str, list[int]] = {}
    for queue in build_publish_queues(topic, route):
        by_broker.setdefault(queue.broker_name, []).append(queue.queue_id)
    return [BlastTarget(masters[b], b, tuple(ids)) for b, ids in by_broker.items()]


class Bench:
    def __init__(self, args: argparse.Namespace, namesrv: str, server_pid: int | None) -> None:
        self.args = args
        self.namesrv = namesrv
        self.server_pid = server_pid
        self.body = b"x" * args.body
        self.frames: dict[tuple[str, int], dict[str, list[bytes]]] = {}
        self.targets: list[BlastTarget] = []

    async def prepare(self) -> None:
        self.targets = await fetch_targets(self.namesrv, self.args.topic)
        wall_ms = time.time_ns() // 1_000_000
        for batch in (0, self.args.batch):
            self.frames[("frames", batch)] = {
                t.address: build_frames(
                    t,
                    topic=self.args.topic,
                    group=GROUP,
                    body_size=self.args.body,
                    batch=batch,
                    wall_ms=wall_ms,
                )
                for t in self.targets
            }

    async def blaster(self, mode: Mode) -> dict[str, Any]:
        frames = self.frames[("frames", mode.batch)]
        blaster = Blaster(
            self.targets, frames, window=mode.blaster_window, per_frame=max(mode.batch, 1)
        )
        await blaster.start()
        try:
            return await self._measure(blaster.counter)
        finally:
            await blaster.stop()

    async def sdk(self, producer: Producer, mode: Mode) -> dict[str, Any]:
        message = Message(self.args.topic, self.body)
        load: AwaitLoad | PipelineLoad
        if mode.kind == "await":
            load = AwaitLoad(producer, message, mode.inflight)
        elif mode.kind == "async":
            load = PipelineLoad(producer, message, mode.inflight)
        else:
            batch = [Message(self.args.topic, self.body) for _ in range(mode.batch)]
            load = BatchLoad(producer, batch, mode.inflight)
        await load.start()
        try:
            return await self._measure(load.counter)
        finally:
            await load.stop()

    async def _measure(self, counter: Any) -> dict[str, Any]:
        return await measure(
            counter,
            warmup_s=self.args.warmup,
            duration_s=self.args.duration,
            server_pid=self.server_pid,
        )


async def run_bench(
    args: argparse.Namespace, namesrv: str, server_pid: int | None
) -> dict[str, Any]:
    bench = Bench(args, namesrv, server_pid)
    await bench.prepare()
    modes = modes_of(args)
    rounds: dict[str, list[dict[str, Any]]] = {m.name: [] for m in modes}
    sides = SIDES[args.batching]
    async with contextlib.AsyncExitStack() as stack:
        producers = {}
        for side in sides[1:]:
            producer = Producer(
                GROUP, namesrv=namesrv, routing=args.routing, batching=side == "sdk"
            )
            producers[side] = await stack.enter_async_context(producer)
            await producer.send(Message(args.topic, bench.body))  # route and connection
        with common.progress() as bar:
            task = bar.add_task(NAME, total=len(modes) * args.rounds * len(sides))
            for n in range(args.rounds):
                for mode in modes:
                    entry: dict[str, Any] = {}
                    # rotate who goes first, so a drift in machine load hits every side
                    for side in sides[n % len(sides) :] + sides[: n % len(sides)]:
                        bar.update(task, description=f"round {n + 1}: {side} {mode.name}")
                        if side == "blaster":
                            entry[side] = await bench.blaster(mode)
                        else:
                            entry[side] = await bench.sdk(producers[side], mode)
                        bar.advance(task)
                    rounds[mode.name].append(entry)
    return summarize(modes, rounds, sides)


def _median_of(entries: list[dict[str, Any]], side: str, *path: str) -> float | None:
    values = []
    for entry in entries:
        value: Any = entry[side]
        for key in path:
            value = value[key]
        if value is not None:
            values.append(float(value))
    return round(common.median(values), 4) if values else None


def _ratio_median(entries: list[dict[str, Any]], side: str) -> float | None:
    ratios = [common.ratio(e[side]["msgs_per_s"], e["blaster"]["msgs_per_s"]) for e in entries]
    found = [r for r in ratios if r is not None]
    return round(common.median(found), 4) if found else None


def _us_per_msg(window: dict[str, Any]) -> float | None:
    """Client CPU (fraction of a core) over messages per second, in microseconds."""
    if window.get("client_cpu") is None or not window["msgs_per_s"]:
        return None
    return float(window["client_cpu"]) * 1e6 / float(window["msgs_per_s"])


def _cpu_us_per_msg(entries: list[dict[str, Any]], side: str) -> float | None:
    values = [v for v in (_us_per_msg(e[side]) for e in entries) if v is not None]
    return round(common.median(values), 2) if values else None


def _cpu_ratio_median(entries: list[dict[str, Any]], side: str) -> float | None:
    """The SDK's client CPU per message over the blaster's, per round; their median."""
    ratios = [common.ratio(_us_per_msg(e[side]), _us_per_msg(e["blaster"])) for e in entries]
    found = [r for r in ratios if r is not None]
    return round(common.median(found), 3) if found else None


def summarize(
    modes: list[Mode], rounds: dict[str, list[dict[str, Any]]], sides: tuple[str, ...]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    sdks = [side for side in sides if side != "blaster"]
    for mode in modes:
        entries = rounds[mode.name]
        out[mode.name] = {
            "kind": mode.kind,
            "inflight": mode.inflight,
            "batch": mode.batch,
            "rounds": entries,
            **{f"{side}_ratio": _ratio_median(entries, side) for side in sdks},
            **{f"{side}_cpu_ratio": _cpu_ratio_median(entries, side) for side in sdks},
            **{f"{side}_cpu_us_per_msg": _cpu_us_per_msg(entries, side) for side in sides},
            **{
                f"{side}_{key}": _median_of(entries, side, *path)
                for side in sides
                for key, path in (
                    ("msgs_per_s", ("msgs_per_s",)),
                    ("p50_ms", ("latency", "p50_ms")),
                    ("p99_ms", ("latency", "p99_ms")),
                    ("client_cpu", ("client_cpu",)),
                    ("server_cpu", ("server_cpu",)),
                )
            },
        }
    singles = [m for m in modes if m.kind == "await" and m.inflight == 1]
    single = None
    if singles:
        row = out[singles[0].name]
        side = sdks[0]
        single = {
            "side": side,
            "sdk_p50_ms": row[f"{side}_p50_ms"],
            "raw_p50_ms": row["blaster_p50_ms"],
            "ratio": common.ratio(row[f"{side}_p50_ms"], row["blaster_p50_ms"]),
        }
    limit = max(
        (row["blaster_msgs_per_s"] or 0.0 for row in out.values() if not row["batch"]),
        default=None,
    )
    return {"modes": out, "single_inflight": single, "limit_msgs_per_s": limit}


#: Issue 28's targets: (mode, key, name, op, goal). "No worse than today" is the
#: figure of the quick run the issue quotes (0.44x / 0.58x of the blaster, 12.6 / 10.5 us).
TARGETS = (
    ("await x1", "sdk_cpu_ratio", "await x1 client CPU/msg vs blaster, batching on", "<=", 1.6),
    ("await x1", "sdk_unbatched_cpu_ratio", "await x1 client CPU/msg vs blaster, off", "<=", 1.6),
    ("await x16", "sdk_ratio", "await x16 msgs/s vs blaster, batching on", ">=", 0.7),
    ("await x16", "sdk_cpu_us_per_msg", "await x16 client CPU us/msg, batching on", "<=", 12.0),
    ("await x256", "sdk_ratio", "await x256 msgs/s vs blaster, batching on", ">=", 0.44),
    ("await x256", "sdk_cpu_us_per_msg", "await x256 client CPU us/msg, batching on", "<=", 12.6),
    ("async", "sdk_ratio", "send_async msgs/s vs blaster, batching on", ">=", 0.58),
    ("async", "sdk_cpu_us_per_msg", "send_async client CPU us/msg, batching on", "<=", 10.5),
)


def targets_of(results: dict[str, Any], args: argparse.Namespace) -> list[common.Target]:
    """Issue 28's targets, each on the sides this run measured."""
    modes = results["modes"]
    targets = []
    for mode, key, name, op, goal in TARGETS:
        row = modes.get(f"async w{args.window}" if mode == "async" else mode)
        if row is not None and row.get(key) is not None:
            targets.append(common.Target(name, row[key], op, goal))
    single = results["single_inflight"]
    if single is not None:
        targets.append(
            common.Target("single-in-flight p50 vs raw round trip", single["ratio"], "<=", 1.5)
        )
    return targets


def print_table(results: dict[str, Any]) -> None:
    table = Table(title="SDK vs raw-frame blaster (medians over rounds)")
    for column in (
        "mode",
        "side",
        "msg/s",
        "/ blaster",  # the README's names (benchmarks/report.py writes them there)
        "p50 / p99 ms",
        "client CPU",
        "client us/msg",
        "CPU / blaster",
        "broker CPU",
    ):
        table.add_column(column, justify="left" if column in ("mode", "side") else "right")
    for name, row in results["modes"].items():
        for side in ("blaster", "sdk", "sdk_unbatched"):
            if f"{side}_msgs_per_s" not in row:
                continue
            table.add_row(
                name,
                SIDE_NAMES[side],
                common.fmt(row[f"{side}_msgs_per_s"], 0),
                common.fmt(row.get(f"{side}_ratio", 1.0), 3),
                f"{common.fmt(row[f'{side}_p50_ms'], 3)} / {common.fmt(row[f'{side}_p99_ms'], 3)}",
                common.fmt(row[f"{side}_client_cpu"]),
                common.fmt(row[f"{side}_cpu_us_per_msg"], 1),
                common.fmt(row.get(f"{side}_cpu_ratio", 1.0), 2),
                common.fmt(row[f"{side}_server_cpu"]),
            )
    common.out.print(table)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = settle_args(build_parser().parse_args(argv))
    started, machine = time.monotonic(), common.machine_info()
    if args.namesrv:
        results = common.run(lambda: run_bench(args, args.namesrv, None), args.loop)
        results["server"] = {"namesrv": args.namesrv}
    else:
        topics = {args.topic: args.queues}
        with ClusterProcess(brokers=1, topics=topics, sink=True) as cluster:
            results = common.run(lambda: run_bench(args, cluster.namesrv, cluster.pid), args.loop)
            results["server"] = {"sink": True, "command": cluster.command[1:]}
    targets = targets_of(results, args)
    return common.finish(
        args,
        NAME,
        argv,
        results=results,
        targets=targets,
        plot="throughput",
        show=lambda: print_table(results),
        started=started,
        machine=machine,
    )


if __name__ == "__main__":
    raise SystemExit(main())
