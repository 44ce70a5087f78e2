"""Send latency and success under broker faults, for every routing strategy.

A 3-broker sink cluster runs as a separate process (``python -m producer cluster --sink
--brokers 3 --http-port 0``): the brokers' event loop and CPU are not the producers', so
a 300 ms brown-out is 300 ms on the wire and nothing else, and the faults go through the
documented HTTP control API. Scenarios (the fault hits ``broker-b``): healthy, brown-out
(300 ms, under classic's 550 ms threshold), 30% errors (code 14), blackhole, flapping
(down / up every 5 s). In each, the four strategies ("off", "classic_4_9", "classic_5",
"adaptive") run side by side at a fixed offered rate of ``send_async`` with
``send_timeout_ms=3000`` (see :mod:`benchmarks._faults_run`). Before the scenarios, each
strategy's healthy closed-loop throughput (256 concurrent ``await send``) is measured.

``results.scenarios.<scenario>.strategies.<strategy>``: ``sent``, ``ok``,
``success_rate``, ``latency`` (p50/p99/p999/max ms, every send offered in the window,
failures at their failure time), ``latency_steady`` (offered after the first
``steady_after_s``), ``retries_per_msg``, ``attempt_share`` / ``stored_share`` per broker,
and a ``timeline`` per ``bin_s``. ``results.healthy_throughput.<strategy>``: msgs/s.
"Adaptive beats classic" is checked as a p99 at most 0.95x the worse-placed classic
strategy's: within 5% is a tie on a noisy machine, not a win.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections import Counter
from typing import Any

import aiohttp
from rich.table import Table

from benchmarks import _common as common
from benchmarks._cluster import ClusterProcess
from benchmarks._faults_run import (
    FAULTY,
    STRATEGIES,
    FaultControl,
    Sample,
    Scenario,
    run_scenario,
    scenarios,
)
from benchmarks._loads import AwaitLoad
from benchmarks._meter import measure
from producer import Message, Producer

NAME = "faults"
TOPIC = "BenchFaults"
CLASSIC = ("classic_4_9", "classic_5")
BEATS = 0.95  # "adaptive beats classic": its p99 at least 5% lower, not a tie within noise


def build_parser() -> argparse.ArgumentParser:
    parser = common.base_parser(NAME, __doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=common.positive_float, default=300.0, help="msg/s each")
    parser.add_argument(
        "--window", type=common.positive_float, help="seconds of fault each (25; --quick: 5)"
    )
    parser.add_argument(
        "--warmup", type=common.positive_float, help="healthy seconds before (3; --quick: 1)"
    )
    parser.add_argument(
        "--flap-period", type=common.positive_float, help="flapping half-period s (5; --quick: 2)"
    )
    parser.add_argument("--bin", type=common.positive_float, default=1.0, help="timeline bin s")
    parser.add_argument(
        "--send-timeout", type=common.positive_float, default=3000.0, help="send budget, ms"
    )
    parser.add_argument(
        "--throughput-seconds",
        type=common.positive_float,
        help="closed-loop window s (3; --quick: 1)",
    )
    parser.add_argument(
        "--rounds", type=common.positive_int, help="closed-loop repetitions (5; --quick: 1)"
    )
    parser.add_argument("--scenario", action="append", help="run only these scenarios (repeatable)")
    return parser


def settle_args(args: argparse.Namespace) -> argparse.Namespace:
    quick = args.quick
    args.window = args.window or (5.0 if quick else 25.0)
    args.warmup = args.warmup or (1.0 if quick else 3.0)
    args.flap_period = args.flap_period or (2.0 if quick else 5.0)
    args.throughput_seconds = args.throughput_seconds or (1.0 if quick else 3.0)
    args.rounds = args.rounds or (1 if quick else 5)
    args.steady_after_s = min(5.0, args.window / 3)
    return args


async def healthy_throughput(args: argparse.Namespace, namesrv: str, pid: int) -> dict[str, Any]:
    """Each strategy's closed-loop msgs/s on the healthy cluster, rounds interleaved, and
    the client CPU it spent per message (less sensitive to a noisy neighbour)."""
    rates: dict[str, list[float]] = {s: [] for s in STRATEGIES}
    cpu_us: dict[str, list[float]] = {s: [] for s in STRATEGIES}
    message = Message(TOPIC, b"x" * 1024)
    async with contextlib.AsyncExitStack() as stack:  # producers close in reverse order
        producers = {
            s: await stack.enter_async_context(
                Producer(f"bench-tp-{s}", namesrv=namesrv, routing=s)
            )
            for s in STRATEGIES
        }
        for producer in producers.values():
            await producer.send(message)
        for n in range(args.rounds):
            for strategy in STRATEGIES[n % 4 :] + STRATEGIES[: n % 4]:
                load = AwaitLoad(producers[strategy], message, 256)
                await load.start()
                window = await measure(
                    load.counter, warmup_s=0.5, duration_s=args.throughput_seconds, server_pid=pid
                )
                await load.stop()
                rates[strategy].append(window["msgs_per_s"])
                if window["client_cpu"] is not None and window["msgs_per_s"]:
                    cpu_us[strategy].append(1e6 * window["client_cpu"] / window["msgs_per_s"])
    return {
        s: {
            "msgs_per_s": common.median(r),
            "rounds": r,
            "client_cpu_us_per_msg": round(common.median(cpu_us[s]), 2) if cpu_us[s] else None,
        }
        for s, r in rates.items()
    }


def summarize(
    samples: list[Sample], args: argparse.Namespace, brokers: list[str]
) -> dict[str, Any]:
    sent = len(samples)
    ok = sum(s.ok for s in samples)
    attempts = Counter(b for s in samples for b in s.attempt_brokers)
    stored = Counter(s.broker for s in samples if s.broker is not None)
    total_attempts = sum(attempts.values())
    return {
        "sent": sent,
        "ok": ok,
        "failed": sent - ok,
        "success_rate": ok / sent if sent else None,
        "latency": common.latency_summary(s.latency_s for s in samples),
        "latency_steady": common.latency_summary(
            s.latency_s for s in samples if s.offered_s >= args.steady_after_s
        ),
        "retries_per_msg": (total_attempts - sent) / sent if sent else None,
        "throughput_msgs_per_s": ok / args.window,
        "attempt_share": {
            b: attempts[b] / total_attempts if total_attempts else 0 for b in brokers
        },
        "stored_share": {b: stored[b] / ok if ok else 0 for b in brokers},
        "timeline": timeline(samples, args, brokers),
    }


def timeline(samples: list[Sample], args: argparse.Namespace, brokers: list[str]) -> dict[str, Any]:
    bins = max(1, round(args.window / args.bin))
    by_bin: list[list[Sample]] = [[] for _ in range(bins)]
    for sample in samples:
        by_bin[min(int(sample.offered_s / args.bin), bins - 1)].append(sample)
    out: dict[str, Any] = {"t": [round(i * args.bin, 3) for i in range(bins)]}
    for key, q in (("p50_ms", 50), ("p99_ms", 99), ("max_ms", 100)):
        out[key] = [
            common.percentile(sorted(s.latency_s * 1000 for s in chunk), q) for chunk in by_bin
        ]
    out["failed"] = [sum(not s.ok for s in chunk) for chunk in by_bin]
    shares: dict[str, list[float]] = {b: [] for b in brokers}
    for chunk in by_bin:
        counts = Counter(b for s in chunk for b in s.attempt_brokers)
        total = sum(counts.values()) or 1
        for b in brokers:
            shares[b].append(counts[b] / total)
    out["attempt_share"] = shares
    return out


async def run_all(args: argparse.Namespace, cluster: ClusterProcess) -> dict[str, Any]:
    brokers = sorted(cluster.brokers)
    chosen = [
        s for s in scenarios(args.flap_period) if not args.scenario or s.name in args.scenario
    ]
    results: dict[str, Any] = {"brokers": brokers, "faulty_broker": FAULTY, "scenarios": {}}
    with common.progress() as bar:
        task = bar.add_task("healthy throughput", total=None)
        results["healthy_throughput"] = await healthy_throughput(args, cluster.namesrv, cluster.pid)
        bar.update(task, total=len(chosen) * (args.warmup + args.window), completed=0)
        async with aiohttp.ClientSession() as session:
            assert cluster.http_url is not None
            control = FaultControl(cluster.http_url, session)
            for scenario in chosen:
                bar.update(task, description=f"scenario {scenario.name}")
                samples = await run_scenario(
                    scenario,
                    namesrv=cluster.namesrv,
                    control=control,
                    topic=TOPIC,
                    rate=args.rate,
                    warmup_s=args.warmup,
                    window_s=args.window,
                    send_timeout_ms=args.send_timeout,
                    on_tick=lambda dt: bar.advance(task, dt),
                )
                results["scenarios"][scenario.name] = describe(scenario) | {
                    "strategies": {s: summarize(samples[s], args, brokers) for s in STRATEGIES}
                }
    return results


def describe(scenario: Scenario) -> dict[str, Any]:
    return {
        "description": scenario.description,
        "fault": scenario.fault,
        "flap_period_s": scenario.flap_period_s,
    }


def _p99(results: dict[str, Any], scenario: str, strategy: str) -> float | None:
    value = results["scenarios"][scenario]["strategies"][strategy]["latency"]["p99_ms"]
    return None if value is None else float(value)


def targets_of(results: dict[str, Any]) -> list[common.Target]:
    ran = results["scenarios"]
    targets = []
    rates = {name: ran[name]["strategies"]["adaptive"]["success_rate"] for name in ran}
    worst = min(rates, key=lambda n: rates[n] if rates[n] is not None else -1.0)
    targets.append(
        common.Target(
            "adaptive success rate, worst scenario",
            rates[worst],
            ">=",
            1.0,
            worst if (rates[worst] or 0.0) < 1.0 else "every scenario",
        )
    )
    if "healthy" in ran and "brownout" in ran:
        value = common.ratio(
            _p99(results, "brownout", "adaptive"), _p99(results, "healthy", "adaptive")
        )
        targets.append(common.Target("adaptive p99 brown-out / healthy", value, "<=", 1.5))
    for name in ran:
        if name == "healthy":
            continue
        ratios = {
            c: common.ratio(_p99(results, name, "adaptive"), _p99(results, name, c))
            for c in CLASSIC
        }
        worst_classic = max(ratios, key=lambda c: ratios[c] or float("inf"))
        targets.append(
            common.Target(
                f"adaptive p99 / classic p99 ({name})",
                ratios[worst_classic],
                "<=",
                BEATS,
                f"vs {worst_classic}",
            )
        )
    healthy = results["healthy_throughput"]
    ratios = {
        c: common.ratio(healthy["adaptive"]["msgs_per_s"], healthy[c]["msgs_per_s"])
        for c in CLASSIC
    }
    worst_classic = min(ratios, key=lambda c: ratios[c] or 0.0)
    targets.append(
        common.Target(
            "adaptive healthy throughput / classic",
            ratios[worst_classic],
            ">=",
            0.95,
            f"vs {worst_classic}",
        )
    )
    return targets


def print_table(results: dict[str, Any]) -> None:
    table = Table(title=f"Send latency under faults on {FAULTY} (fixed offered rate, send_async)")
    for column in (
        "scenario",
        "strategy",
        "success",
        "p50 ms",
        "p99 ms",
        "p999 ms",
        "max ms",
        "p99 steady",
        "retries/msg",
        f"{FAULTY} attempts",
        "msg/s",
    ):
        table.add_column(column, justify="left" if column in ("scenario", "strategy") else "right")
    for name, scenario in results["scenarios"].items():
        for strategy, row in scenario["strategies"].items():
            latency = row["latency"]
            table.add_row(
                name,
                strategy,
                f"{100 * (row['success_rate'] or 0):.2f}%",
                common.fmt(latency["p50_ms"], 1),
                common.fmt(latency["p99_ms"], 1),
                common.fmt(latency["p999_ms"], 1),
                common.fmt(latency["max_ms"], 0),
                common.fmt(row["latency_steady"]["p99_ms"], 1),
                common.fmt(row["retries_per_msg"], 3),
                f"{100 * row['attempt_share'][FAULTY]:.1f}%",
                common.fmt(row["throughput_msgs_per_s"], 0),
            )
        table.add_section()
    common.out.print(table)
    healthy = Table(title="Healthy closed-loop throughput (256 concurrent await send)")
    healthy.add_column("strategy")
    healthy.add_column("msg/s (median)", justify="right")
    healthy.add_column("client CPU us/msg", justify="right")
    healthy.add_column("rounds", justify="right")
    for strategy, row in results["healthy_throughput"].items():
        rounds = ", ".join(f"{r:,.0f}" for r in row["rounds"])
        cpu = common.fmt(row["client_cpu_us_per_msg"], 1)
        healthy.add_row(strategy, common.fmt(row["msgs_per_s"], 0), cpu, rounds)
    common.out.print(healthy)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = settle_args(build_parser().parse_args(argv))
    started, machine = time.monotonic(), common.machine_info()
    with ClusterProcess(brokers=3, topics={TOPIC: 4}, sink=True, http=True) as cluster:
        results = common.run(lambda: run_all(args, cluster), args.loop)
        results["server"] = {"sink": True, "command": cluster.command[1:]}
    targets = targets_of(results)
    return common.finish(
        args,
        NAME,
        argv,
        results=results,
        targets=targets,
        plot="faults",
        show=lambda: print_table(results),
        started=started,
        machine=machine,
    )


if __name__ == "__main__":
    raise SystemExit(main())
