"""Python calls per send: ``pstats.Stats(profile).total_calls / sends`` (issue 47).

A call count is deterministic where a time is not: it holds on a loaded machine, so a
test guards it (``tests/benchmarks/test_call_count.py``). The dev cluster runs in another
process (:class:`ClusterProcess`), so only the client's calls are counted; cProfile
counts every Python call, builtins included, made in this process between ``enable``
and ``disable``. The loop is uvloop (as shipped), whose own code is C and not counted;
``--loop asyncio`` counts the pure-Python loop's calls too.

Loads, each ``--warm`` sends first (route, connection, caches), then ``--sends`` counted:

* ``lone``: ``await producer.send(message)`` one at a time (batching on, as shipped: a
  lone send goes alone).
* ``async``: ``producer.send_async(message)`` in windows of ``--in-flight`` (batching on,
  as shipped), each send told done by its ``on_success``;
  ``async_unbatched`` the same with batching off (each send its own request).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
from collections.abc import Awaitable, Callable

from benchmarks import _common as common
from benchmarks._cluster import ClusterProcess
from producer import Message, Producer

TOPIC = "CallCount"
GROUP = "bench-call-count"
LOADS = ("lone", "async", "async_unbatched")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.call_count", description=__doc__)
    parser.add_argument("--namesrv", help="a running cluster's name server (default: start one)")
    parser.add_argument("--sends", type=common.positive_int, default=1_000, help="counted")
    parser.add_argument("--warm", type=common.positive_int, default=300, help="not counted")
    parser.add_argument("--in-flight", type=common.positive_int, default=2_000)
    parser.add_argument("--body", type=common.positive_int, default=1024)
    parser.add_argument("--load", action="append", choices=LOADS, help="default: all")
    parser.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop")
    parser.add_argument("--routing", default="adaptive", help="the producer's routing option")
    parser.add_argument("--top", type=int, default=0, help="print the N most-called functions")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="300 sends after 100 warm-up: a count is the same per send, only noisier "
        "where adaptive routing's once-a-millisecond recompute lands",
    )
    return parser


async def _lone(producer: Producer, message: Message, sends: int, _in_flight: int) -> None:
    for _ in range(sends):
        await producer.send(message)


class _Window:
    """``size`` sends, told done one by one by their callbacks."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.answered = 0
        self.errors: list[BaseException] = []
        self.done = asyncio.Event()

    def one(self, _result: object) -> None:
        self.answered += 1
        if self.answered == self.size:
            self.done.set()

    def failed(self, error: BaseException) -> None:
        self.errors.append(error)
        self.one(None)


async def _async(producer: Producer, message: Message, sends: int, in_flight: int) -> None:
    """Windows of ``in_flight`` sends, each told done by its ``on_success`` (gather's own
    calls per future would be counted as the SDK's otherwise)."""
    left = sends
    while left:
        window = _Window(min(left, in_flight))
        for _ in range(window.size):
            producer.send_async(message, window.one, window.failed)
        await window.done.wait()
        if window.errors:  # a failed send's path is not the one counted
            raise SystemExit(f"{len(window.errors)} counted sends failed: {window.errors[0]!r}")
        left -= window.size


Load = Callable[[Producer, Message, int, int], Awaitable[None]]
_RUNS: dict[str, tuple[Load, bool]] = {
    "lone": (_lone, True),
    "async": (_async, True),
    "async_unbatched": (_async, False),
}


async def count(namesrv: str, load: str, args: argparse.Namespace) -> tuple[float, pstats.Stats]:
    """Calls per send of ``load``, and the profile they came from."""
    run, batching = _RUNS[load]
    message = Message(TOPIC, b"x" * args.body)
    # A generous budget: a retry or a timeout on a loaded machine would change the count.
    budget = 120_000
    async with Producer(
        GROUP, namesrv=namesrv, batching=batching, send_timeout_ms=budget, routing=args.routing
    ) as producer:
        await run(producer, message, args.warm, args.in_flight)
        profile = cProfile.Profile()
        profile.enable()
        await run(producer, message, args.sends, args.in_flight)
        profile.disable()
    stats = pstats.Stats(profile)
    return stats.total_calls / args.sends, stats  # type: ignore[attr-defined]


def measure(namesrv: str, args: argparse.Namespace) -> dict[str, float]:
    out: dict[str, float] = {}
    for load in args.load or LOADS:
        per_send, stats = common.run(lambda load=load: count(namesrv, load, args), args.loop)
        out[load] = round(per_send, 2)
        if args.top:
            print(f"-- {load}: {per_send:.2f} calls per send")
            stats.sort_stats("ncalls").print_stats(args.top)
    return out


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.quick:
        args.sends, args.warm = 300, 100
    if args.namesrv:
        out = measure(args.namesrv, args)
    else:
        with ClusterProcess(brokers=2, topics={TOPIC: 4}) as cluster:
            out = measure(cluster.namesrv, args)
    if args.json:
        print(json.dumps(out))
    else:
        print(f"Python calls per send ({args.sends} after {args.warm} warm-up, {args.loop})")
        for load, calls in out.items():
            print(f"  {load:16} {calls:8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
