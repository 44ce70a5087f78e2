"""What message trace costs a send: client CPU per message and p50 latency of ``await
send`` with ``trace=False`` and ``trace=True``, in separate processes, interleaved.

A sink cluster (``python -m producer cluster --sink``) with the benchmark topic and
``RMQ_SYS_TRACE_TOPIC`` runs in its own process; each round starts one process per
setting (off, on, off, on, ...) that makes ``--sends`` awaited sends at ``--concurrency``
after a warm-up, and reports ``time.process_time()`` over the window divided by the
messages (the trace records and their trace messages included), and the p50 latency.
Prints the medians of the rounds with their spread (min-max), and the ratio on/off.

``python -m benchmarks.trace_cost [--rounds 5] [--sends 5000] [--concurrency 1,16]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time

from benchmarks import _common as common
from benchmarks._cluster import ClusterProcess
from producer import Message, Producer
from producer._remoting.trace import TRACE_TOPIC

TOPIC = "BenchTopic"


async def _window(namesrv: str, trace: bool, sends: int, concurrency: int) -> dict[str, float]:
    body = b"x" * 1024
    latencies: list[float] = []
    async with Producer("bench-trace-cost", namesrv, trace=trace) as producer:
        for _ in range(200):  # warm-up: routes, connections, the trace topic's route
            await producer.send(Message(TOPIC, body))
        per_task = sends // concurrency

        async def one_task() -> None:
            for _ in range(per_task):
                started = time.perf_counter()
                await producer.send(Message(TOPIC, body))
                latencies.append(time.perf_counter() - started)

        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.gather(*(one_task() for _ in range(concurrency)))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    latencies.sort()
    count = len(latencies)
    return {
        "cpu_us_per_msg": cpu / count * 1e6,
        "p50_ms": latencies[count // 2] * 1000,
        "msgs_per_s": count / wall,
    }


def _child(args: argparse.Namespace) -> None:
    result = asyncio.run(_window(args.namesrv, args.trace == "on", args.sends, args.concurrency))
    print(json.dumps(result))


def _run_child(namesrv: str, trace: str, sends: int, concurrency: int) -> dict[str, float]:
    command = [sys.executable, "-m", "benchmarks.trace_cost", "--child", "--namesrv", namesrv]
    command += ["--trace", trace, "--sends", str(sends), "--concurrency-one", str(concurrency)]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.trace_cost", description=__doc__)
    parser.add_argument("--rounds", type=common.positive_int, default=5)
    parser.add_argument("--sends", type=common.positive_int, default=5000)
    parser.add_argument("--concurrency", type=common.int_list, default=[1, 16])
    parser.add_argument("--quick", action="store_true", help="2 rounds of 1000 sends")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--namesrv", help=argparse.SUPPRESS)
    parser.add_argument("--trace", choices=("on", "off"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--concurrency-one", type=int, dest="concurrency_one", help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.child:
        args.concurrency = args.concurrency_one
        _child(args)
        return
    rounds, sends = (2, 1000) if args.quick else (args.rounds, args.sends)
    with ClusterProcess(brokers=1, topics={TOPIC: 8, TRACE_TOPIC: 1}) as cluster:
        for concurrency in args.concurrency:
            runs: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
            for _ in range(rounds):
                for trace in ("off", "on"):
                    runs[trace].append(_run_child(cluster.namesrv, trace, sends, concurrency))
            print(f"concurrency {concurrency}, {sends} sends x {rounds} rounds (median (min-max)):")
            for metric in ("cpu_us_per_msg", "p50_ms", "msgs_per_s"):
                off = [r[metric] for r in runs["off"]]
                on = [r[metric] for r in runs["on"]]
                ratio = statistics.median(on) / statistics.median(off)
                both = f"off {_spread(off):<24} on {_spread(on):<24}"
                print(f"  {metric:<15} {both} on/off {ratio:.2f}x")


if __name__ == "__main__":
    main()
