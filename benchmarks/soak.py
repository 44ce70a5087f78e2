"""Soak: mixed sends through random faults for a long time, proving nothing is lost.

A 3-broker dev cluster runs in a process of its own, storing what it receives; one
producer sends a mix (``await send``, ``send_async``, ``send_oneway``, ``send_batch``,
keyed sends) at a steady rate while faults of every kind hit one broker at a time
(latency, retriable and non-retriable codes, non-OK store status, down = a restart,
blackhole, reset, garbage) and the name server goes down once. Checked at the end:

* no acknowledged message lost: every msg id of a successful send is stored;
* no hung send: every send (oneway too) ended within its budget + 100 ms;
* flat memory: the median RSS and traced Python memory of the last third of the run are
  within 20% (+ 2 MiB) of the first third's (after a warm-up), since a leak of even a few
  bytes per send grows without bound over hundreds of thousands of sends while caches
  (routes, header prefixes, the JIT-less interpreter's free lists) settle early;
* nothing left behind: open file descriptors do not grow over the run, and once the
  producer has closed, its tasks are gone and no socket it opened is left open.

Failures are allowed only where a fault explains them; they are counted by kind, error
and fate. ``--quick`` runs 60 s.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from typing import Any

import anyio

from benchmarks import _common as common
from benchmarks._cluster import ClusterProcess
from benchmarks._soak_load import (
    FaultDriver,
    Ledger,
    live_tasks,
    open_fds,
    sample,
    send_mix,
    stored_ids,
)
from producer import Producer

NAME = "soak"
TOPIC = "Soak"
BUDGET_MS = 3000.0
WARMUP_FRACTION = 0.2  # memory is compared after this share of the run


def build_parser() -> argparse.ArgumentParser:
    parser = common.base_parser(NAME, __doc__.split("\n\n")[0])
    for action in parser._actions:  # the soak also runs on trio
        if action.dest == "loop":
            action.choices = (*(action.choices or ()), "trio")
    parser.add_argument("--duration-s", type=common.positive_float, help="1800; --quick: 60")
    parser.add_argument("--rate", type=common.positive_float, default=250.0, help="sends/s")
    parser.add_argument("--seed", type=int, default=1, help="seeds the fault schedule")
    return parser


async def soak(args: argparse.Namespace, cluster: ClusterProcess) -> dict[str, Any]:
    assert cluster.http_url is not None
    ids_file = tempfile.NamedTemporaryFile("w", encoding="ascii", suffix=".ids")  # noqa: SIM115
    ledger, samples = Ledger(BUDGET_MS, ids_file), list[dict[str, Any]]()
    driver = FaultDriver(cluster.http_url, random.Random(args.seed))
    fds_before = open_fds()
    baseline = {"tasks": live_tasks(), "fds": len(fds_before)}
    async with Producer("soak", cluster.namesrv, send_timeout_ms=BUDGET_MS) as producer:
        stop = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(sample, producer, samples, stop)
            tg.start_soon(driver.run, stop, args.duration_s / 2)
            tg.start_soon(send_mix, producer, ledger, args.rate, stop)
            await anyio.sleep(args.duration_s)
            stop.set()
        await producer.flush()
        drained = {"tasks": live_tasks(), "fds": len(open_fds())}
    fds_after = open_fds()
    after = {"tasks": live_tasks(), "fds": len(fds_after)}
    stored = stored_ids(cluster.http_url, TOPIC)
    with ids_file:
        acknowledged = ledger.acknowledged_ids()
    lost = acknowledged - stored
    return {
        "duration_s": args.duration_s,
        "rate": args.rate,
        "sent": dict(ledger.sent),
        "acknowledged": len(acknowledged),
        "stored_unique": len(stored),
        "lost": sorted(lost)[:20],
        "lost_count": len(lost),
        "failures": dict(ledger.failures),
        "hung": ledger.hung[:20],
        "hung_count": ledger.hung_count,
        "slowest_over_budget_ms": round(ledger.slowest_over_budget_ms, 1),
        "baseline": baseline,
        "drained": drained,
        "after": after,
        "fds_left_open": sorted(
            link for fd, link in fds_after.items() if fds_before.get(fd) != link
        ),
        "memory": _memory_trend(samples),
        "faults": driver.applied,
        "samples": samples,
    }


def _memory_trend(samples: list[dict[str, Any]]) -> dict[str, Any]:
    usable = samples[int(len(samples) * WARMUP_FRACTION) :]
    third = max(len(usable) // 3, 1)
    out: dict[str, Any] = {}
    for key in ("rss_mib", "traced_mib"):
        first = statistics.median(s[key] for s in usable[:third])
        last = statistics.median(s[key] for s in usable[-third:])
        out[key] = {"first_third": first, "last_third": last, "growth": round(last / first, 3)}
        out[key]["allowed"] = round(first * 1.2 + 2, 2)
    # Open fds are the producer's connections: at most one per server, whatever the load.
    out["fds"] = {
        "first_third_max": max(s["fds"] for s in usable[:third]),
        "last_third_median": statistics.median(s["fds"] for s in usable[-third:]),
    }
    return out


def targets_of(results: dict[str, Any]) -> list[common.Target]:
    memory = results["memory"]
    return [
        common.Target("acknowledged messages not stored", results["lost_count"], "<=", 0),
        common.Target("sends over budget + 100 ms", results["hung_count"], "<=", 0),
        *(
            common.Target(
                f"{key} median, last third of the run (MiB)",
                memory[key]["last_third"],
                "<=",
                memory[key]["allowed"],
                note="first third * 1.2 + 2 MiB",
            )
            for key in ("rss_mib", "traced_mib")
        ),
        common.Target(
            "open fds, last third median vs first third max",
            memory["fds"]["last_third_median"] - memory["fds"]["first_third_max"],
            "<=",
            0,
        ),
        common.Target(
            "tasks after close vs before start",
            results["after"]["tasks"] - results["baseline"]["tasks"],
            "<=",
            0,
        ),
        common.Target(
            "sockets left open after close",
            sum(link.startswith("socket:") for link in results["fds_left_open"]),
            "<=",
            0,
            note="any other new fd is listed in fds_left_open",
        ),
    ]


def show(results: dict[str, Any]) -> None:
    common.out.print(
        f"soak {results['duration_s']:g} s at {results['rate']:g} sends/s: "
        f"{sum(results['sent'].values())} sends {results['sent']}, "
        f"{results['acknowledged']} acknowledged msg ids, {results['stored_unique']} stored, "
        f"{results['lost_count']} lost, {results['hung_count']} over budget "
        f"(slowest {results['slowest_over_budget_ms']:+.0f} ms vs budget), "
        f"{len(results['faults'])} faults applied"
    )
    for failure, count in sorted(results["failures"].items()):
        common.out.print(f"  failed: {count} x {failure}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    args.duration_s = args.duration_s or (60.0 if args.quick else 1800.0)
    started, machine = time.monotonic(), common.machine_info()
    tracemalloc.start()
    with ClusterProcess(brokers=3, topics={TOPIC: 4}, sink=False, http=True) as cluster:
        if args.loop == "trio":
            results = anyio.run(soak, args, cluster, backend="trio")
        else:
            results = common.run(lambda: soak(args, cluster), args.loop)
    targets = targets_of(results)
    common.finish(
        args,
        NAME,
        argv,
        results=results,
        targets=targets,
        plot="soak",
        show=lambda: show(results),
        started=started,
        machine=machine,
    )
    return 0 if all(t.met for t in targets) else 1


if __name__ == "__main__":
    raise SystemExit(main())
