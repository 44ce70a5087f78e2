"""The cost of one send: client CPU per message, and what the event loop did per send.

Two measurements, neither a throughput race:

* **CPU** (default): for each concurrency, ``--sends`` sends through ``await send`` (one
  task per in-flight send) with batching on and off, and the raw-frame blaster at the
  same window; client CPU is ``time.process_time()`` of this process over the whole
  window, divided by the messages. Prints one JSON line with ``--json``.
* **Loopback** (``--loopback``): the SDK sides only, each connection answered in-process
  by the sink's encoder (:mod:`benchmarks._loopback`): the SDK's own CPU per send with no
  syscall and no scheduler in it, the steadiest A/B on a shared machine.
* **Counts** (``--count``): the same loads on a plain asyncio loop that counts, per send,
  its loop iterations, ``call_soon`` callbacks, timers armed (``call_at``) and cancelled,
  loop futures, tasks, and socket writes (the connections' flush counter). Counting
  slows the loop, so it reports no CPU; uvloop runs the same Python code, so the counts
  are the same there.

``--ab A B`` runs the CPU measurement of two source trees (e.g. a ``git archive`` of the
base commit, and the work tree) in separate processes, interleaved, ``--rounds`` times,
against one sink, and prints the medians with their spread (min-max).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from benchmarks import _common as common
from benchmarks import _loopback
from benchmarks._blaster import Blaster
from benchmarks._cluster import ClusterProcess
from benchmarks._loads import AwaitLoad
from benchmarks._loopback import pool_of
from producer import Message, Producer

TOPIC = "BenchTopic"
GROUP = "bench-send-cost"
METRICS = ("cpu_us_per_msg", "user_us_per_msg", "sys_us_per_msg", "p50_ms", "msgs_per_s")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.send_cost", description=__doc__)
    parser.add_argument("--namesrv", help="a running sink's name server (default: start one)")
    parser.add_argument("--concurrency", type=common.int_list, default=[1, 4, 16])
    parser.add_argument(
        "--sends", type=common.positive_int, help="per window (20000; --quick: 5000)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="a short run: fewer sends, A/B in 2 rounds"
    )
    parser.add_argument(
        "--blaster-s", type=common.positive_float, default=1.5, help="blaster window, s"
    )
    parser.add_argument("--body", type=common.positive_int, default=1024)
    parser.add_argument("--count", action="store_true", help="count loop work per send")
    parser.add_argument(
        "--loopback", action="store_true", help="answer in-process: the SDK's own CPU only"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    parser.add_argument("--ab", nargs=2, metavar=("TREE_A", "TREE_B"), help="A/B two trees")
    parser.add_argument("--rounds", type=common.positive_int, help="A/B rounds (5; --quick: 2)")
    parser.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop")
    return parser


# -- counting ------------------------------------------------------------------------------


class _Counting:
    """Counters over an event loop class (benchmark-only): what each send makes it do."""

    counts: dict[str, int]

    def _start_counting(self) -> None:
        self.counts = dict.fromkeys(
            ("iterations", "call_soon", "call_at", "timer_cancels", "futures", "tasks"), 0
        )

    def call_soon(self, *args: Any, **kwargs: Any) -> Any:
        self.counts["call_soon"] += 1
        return super().call_soon(*args, **kwargs)  # type: ignore[misc]

    def call_at(self, *args: Any, **kwargs: Any) -> Any:
        self.counts["call_at"] += 1
        return super().call_at(*args, **kwargs)  # type: ignore[misc]

    def call_later(self, delay: float, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(self, asyncio.SelectorEventLoop):  # asyncio's goes via call_at
            self.counts["call_at"] += 1
        return super().call_later(delay, *args, **kwargs)  # type: ignore[misc]

    def create_future(self) -> Any:
        self.counts["futures"] += 1
        return super().create_future()  # type: ignore[misc]

    def create_task(self, *args: Any, **kwargs: Any) -> Any:
        self.counts["tasks"] += 1
        return super().create_task(*args, **kwargs)  # type: ignore[misc]


class CountingLoop(_Counting, asyncio.SelectorEventLoop):
    """Plain asyncio, which also counts loop iterations and timer cancels."""

    def __init__(self) -> None:
        super().__init__()
        self._start_counting()

    def _run_once(self) -> None:
        self.counts["iterations"] += 1
        super()._run_once()  # type: ignore[misc]

    def _timer_handle_cancelled(self, handle: Any) -> None:
        self.counts["timer_cancels"] += 1
        super()._timer_handle_cancelled(handle)  # type: ignore[misc]


def counting_loop(kind: str) -> asyncio.AbstractEventLoop:
    """A counting loop; uvloop's counts leave out iterations and cancels (no hook there)."""
    if kind == "asyncio":
        return CountingLoop()
    import uvloop

    class CountingUvloop(_Counting, uvloop.Loop):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self._start_counting()

    return CountingUvloop()


def _flushes(producer: Producer) -> int:
    pool = pool_of(producer)
    return sum(c.stats.flushes for c in pool._connections.values())


# -- one process: the measurements ---------------------------------------------------------


async def _sdk_window(
    producer: Producer, message: Message, inflight: int, sends: int
) -> dict[str, Any]:
    warm = AwaitLoad(producer, message, inflight, limit=max(sends // 5, inflight))
    await warm.start()
    await warm.finished()
    load = AwaitLoad(producer, message, inflight, limit=sends)
    load.counter.recording = True
    loop = asyncio.get_running_loop()
    counts0 = dict(getattr(loop, "counts", {}))
    flushes0 = _flushes(producer)
    times0, cpu0, wall0 = os.times(), time.process_time(), time.perf_counter()
    await load.start()
    await load.finished()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    done = load.counter.done
    row: dict[str, Any] = {
        "cpu_us_per_msg": round(cpu * 1e6 / done, 2),
        **_user_sys(times0, done),
        "msgs_per_s": round(done / wall, 1),
        "p50_ms": common.latency_summary(load.counter.latencies)["p50_ms"],
        "failed": load.counter.failed,
    }
    counts = getattr(loop, "counts", None)
    if counts is not None:
        per = {k: round((v - counts0[k]) / done, 3) for k, v in counts.items()}
        per["writes"] = round((_flushes(producer) - flushes0) / done, 3)
        row["per_send"] = per
    return row


async def _blaster_window(namesrv: str, inflight: int, seconds: float, body: int) -> dict[str, Any]:
    """The blaster at the same window, over a fixed time (it has no send count to stop at)."""
    from benchmarks._blaster import build_frames
    from benchmarks.throughput import fetch_targets

    targets = await fetch_targets(namesrv, TOPIC)
    wall_ms = time.time_ns() // 1_000_000
    frames = {
        t.address: build_frames(
            t, topic=TOPIC, group=GROUP, body_size=body, batch=0, wall_ms=wall_ms
        )
        for t in targets
    }
    blaster = Blaster(targets, frames, window=inflight)
    await blaster.start()
    counter = blaster.counter
    await asyncio.sleep(seconds / 5)  # warm-up
    counter.recording = True
    times0 = os.times()
    done0, cpu0, wall0 = counter.done, time.process_time(), time.perf_counter()
    await asyncio.sleep(seconds)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    done = counter.done - done0
    counter.recording = False
    await blaster.stop()
    return {
        "cpu_us_per_msg": round(cpu * 1e6 / done, 2),
        **_user_sys(times0, done),
        "msgs_per_s": round(done / wall, 1),
        "p50_ms": common.latency_summary(counter.latencies)["p50_ms"],
    }


def _user_sys(times0: Any, done: int) -> dict[str, float]:
    """User and kernel CPU per message (10 ms ticks: coarse, fine over a whole window)."""
    now = os.times()
    return {
        "user_us_per_msg": round((now.user - times0.user) * 1e6 / done, 2),
        "sys_us_per_msg": round((now.system - times0.system) * 1e6 / done, 2),
    }


async def measure_all(args: argparse.Namespace, namesrv: str) -> dict[str, Any]:
    body = b"x" * args.body
    message = Message(TOPIC, body)
    out: dict[str, Any] = {}
    for batching in (True, False):
        side = "sdk" if batching else "sdk_unbatched"
        async with Producer(GROUP, namesrv=namesrv, batching=batching) as producer:
            await producer.send(message)  # route and connection
            swapped = _loopback.short_circuit(producer) if args.loopback else []
            for n in args.concurrency:
                out.setdefault(f"await x{n}", {})[side] = await _sdk_window(
                    producer, message, n, args.sends
                )
            _loopback.restore(swapped)
    if not (args.count or args.loopback):
        for n in args.concurrency:
            out[f"await x{n}"]["blaster"] = await _blaster_window(
                namesrv, n, args.blaster_s, args.body
            )
    return out


def run_one(args: argparse.Namespace, namesrv: str) -> dict[str, Any]:
    if args.count:
        loop = counting_loop(args.loop)
        try:
            return loop.run_until_complete(measure_all(args, namesrv))
        finally:
            loop.close()
    return common.run(lambda: measure_all(args, namesrv), args.loop)


# -- A/B: two trees, interleaved processes -------------------------------------------------


def _child(tree: str, args: argparse.Namespace, namesrv: str) -> dict[str, Any]:
    argv = [sys.executable, "-m", "benchmarks.send_cost", "--json", "--namesrv", namesrv]
    argv += ["--concurrency", ",".join(map(str, args.concurrency)), "--sends", str(args.sends)]
    argv += ["--loopback"] if args.loopback else []
    env = {**os.environ, "PYTHONPATH": tree}
    done = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def ab(args: argparse.Namespace, namesrv: str) -> None:
    trees = {"A": args.ab[0], "B": args.ab[1]}
    runs: dict[str, list[dict[str, Any]]] = {"A": [], "B": []}
    for n in range(args.rounds):
        for name in "AB" if n % 2 == 0 else "BA":  # alternate who goes first
            runs[name].append(_child(trees[name], args, namesrv))
            print(f"round {n + 1} {name} done", file=sys.stderr)
    print(f"A = {trees['A']}\nB = {trees['B']}\nmedian (min-max) over {args.rounds} rounds")
    print(f"{'mode':<10} {'side':<14} {'metric':<16} {'A':>22} {'B':>22}")
    for mode, sides in runs["A"][0].items():
        for side in sides:
            for metric in METRICS:
                cells = [_spread([r[mode][side][metric] for r in runs[k]]) for k in "AB"]
                print(f"{mode:<10} {side:<14} {metric:<16} {cells[0]:>22} {cells[1]:>22}")
    print(json.dumps({"trees": trees, "runs": runs}), file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.sends = args.sends or (5_000 if args.quick else 20_000)
    args.rounds = args.rounds or (2 if args.quick else 5)
    if args.namesrv:
        return _run(args, args.namesrv)
    with ClusterProcess(brokers=1, topics={TOPIC: 4}, sink=True) as cluster:
        return _run(args, cluster.namesrv)


def _run(args: argparse.Namespace, namesrv: str) -> int:
    if args.ab:
        ab(args, namesrv)
        return 0
    result = run_one(args, namesrv)
    if args.json:
        print(json.dumps(result))
        return 0
    for mode, sides in result.items():
        for side, row in sides.items():
            print(f"{mode:<10} {side:<14} {row}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
