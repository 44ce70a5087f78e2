"""Routing strategies under broker faults: success, latency, share of the faulty broker.

A 3-broker sink cluster runs as a process of its own (``python -m producer cluster --sink
--brokers 3 --http-port 0``), its faults driven over its HTTP API. Every measurement is
one strategy ("off", "classic_4_9", "classic_5", "adaptive") alone, in a fresh process
with its own producer and event loop (:mod:`benchmarks._faults_worker`), so no strategy
shares a loop or a CPU with another. Strategies run one after another in interleaved
rounds (A B C D, B C D A, ...), and every figure is the median over the rounds with its
[min, max] spread: a noisy neighbour hits one round, not one strategy.

Matrix: rates (300 and 3,000 msg/s, and ``max`` = half the slowest strategy's healthy
closed-loop throughput, measured first: the highest offered rate ``send_async`` keeps up
with here with a margin; at 80% it fell behind, 50-58% of sends timing out) x loads
(``async``: ``send_async`` at the rate; ``await``: ``max(16, rate / 100)`` tasks each
``await send`` paced to its share of the rate) x the scenarios of
:mod:`benchmarks._faults_scenarios`. Each run: a healthy warm-up, then the measured
window with the scenario's faults on ``broker-b``.

``results.throughput.<strategy>``: healthy closed-loop (256 ``await send`` loops)
msgs/s and client CPU per message, median and spread. ``results.cells.<rate>/<load>
.scenarios.<scenario>.strategies.<strategy>``: see :mod:`benchmarks._faults_stats`.
The targets are issue 10's, checked on the medians of each cell.

``--failover`` runs issue 44's scenario instead (:mod:`benchmarks._faults_failover`): a
replicated cluster (``--slaves 1``), broker-a's master killed under steady produce +
consume, and what that cost: sends failed, p99 around the kill, seconds until the slave
is read, messages lost and duplicated.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rich.table import Table

from benchmarks import _common as common
from benchmarks import _faults_failover
from benchmarks._cluster import ClusterProcess
from benchmarks._faults_scenarios import FAULTY, SCENARIOS
from benchmarks._faults_stats import aggregate, median_of
from benchmarks._faults_targets import targets_of

NAME = "faults"
TOPIC = "BenchFaults"
STRATEGIES = ("off", "classic_4_9", "classic_5", "adaptive")
REPO = Path(__file__).resolve().parent.parent
THROUGHPUT_LOOPS = 256
MAX_RATE_FRACTION = 0.5


def build_parser() -> argparse.ArgumentParser:
    parser = common.base_parser(NAME, __doc__.split("\n\n")[0])
    parser.add_argument(
        "--rates",
        help="comma-separated msg/s, 'max' for the measured one (300,3000,max; --quick: 300)",
    )
    parser.add_argument("--loads", help="comma-separated: async, await (both; --quick: async)")
    parser.add_argument(
        "--scenario",
        action="append",
        help="only these scenarios (repeatable; --quick: "
        f"healthy, brownout); all: {', '.join(SCENARIOS)}",
    )
    parser.add_argument("--strategy", action="append", help="only these strategies")
    parser.add_argument(
        "--rounds", type=common.positive_int, help="rounds per cell (3; --quick: 1)"
    )
    parser.add_argument("--window", type=common.positive_float, help="measured s (10; --quick: 4)")
    parser.add_argument(
        "--warmup", type=common.positive_float, help="healthy s first (2; --quick: 1)"
    )
    parser.add_argument(
        "--flap-period", type=common.positive_float, help="flapping half-period s (2; --quick: 1)"
    )
    parser.add_argument(
        "--send-timeout", type=common.positive_float, default=3000.0, help="send budget, ms"
    )
    parser.add_argument(
        "--throughput-seconds", type=common.positive_float, help="closed-loop s (3; --quick: 1)"
    )
    parser.add_argument("--max-rate", type=common.positive_float, help="skip measuring 'max'")
    parser.add_argument(
        "--failover",
        action="store_true",
        help="instead: kill a replicated master under produce + consume (issue 44)",
    )
    parser.add_argument(
        "--failover-rate", type=common.positive_float, default=200.0, help="msg/s (200)"
    )
    parser.add_argument(
        "--failover-drain",
        type=common.positive_float,
        default=30.0,
        help="s the consumer may take to read the rest after the restart (30)",
    )
    return parser


def settle_args(args: argparse.Namespace) -> argparse.Namespace:
    quick = args.quick
    args.rates = [
        r.strip() for r in (args.rates or ("300" if quick else "300,3000,max")).split(",")
    ]
    for rate in args.rates:
        if rate != "max" and not (rate.replace(".", "", 1).isdigit() and float(rate) > 0):
            raise SystemExit(f"--rates: {rate!r} is neither a positive number nor 'max'")
    args.loads = [
        x.strip() for x in (args.loads or ("async" if quick else "async,await")).split(",")
    ]
    if not set(args.loads) <= {"async", "await"}:
        raise SystemExit(f"--loads: {args.loads} (valid: async, await)")
    args.scenario = args.scenario or (["healthy", "brownout"] if quick else list(SCENARIOS))
    if unknown := set(args.scenario) - set(SCENARIOS):
        raise SystemExit(f"unknown scenario(s) {sorted(unknown)}; valid: {', '.join(SCENARIOS)}")
    args.strategy = args.strategy or list(STRATEGIES)
    args.rounds = args.rounds or (1 if quick else 3)
    args.window = args.window or (4.0 if quick else 10.0)
    args.warmup = args.warmup or (1.0 if quick else 2.0)
    args.flap_period = args.flap_period or (1.0 if quick else 2.0)
    args.throughput_seconds = args.throughput_seconds or (1.0 if quick else 3.0)
    return args


def loops_for(rate: float) -> int:
    return max(16, math.ceil(rate / 100))


def run_worker(config: dict[str, Any]) -> dict[str, Any]:
    """One measurement in a fresh process; its JSON summary. A worker that crashes (not
    one that measured a failure) is run once more, and said so on stderr."""
    try:
        return _run_worker_once(config)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        common.console.print(f"[yellow]worker failed, running it again:[/yellow] {exc}")
        return _run_worker_once(config)


def _run_worker_once(config: dict[str, Any]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks._faults_worker", json.dumps(config)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120 + float(config["window_s"]),
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"worker failed ({config}):\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def rotation(strategies: list[str], round_no: int) -> list[str]:
    k = round_no % len(strategies)
    return strategies[k:] + strategies[:k]


class Runner:
    def __init__(self, args: argparse.Namespace, cluster: ClusterProcess) -> None:
        self.args = args
        self.base = {
            "namesrv": cluster.namesrv,
            "http": cluster.http_url,
            "topic": TOPIC,
            "send_timeout_ms": args.send_timeout,
            "flap_period_s": args.flap_period,
            "loop": args.loop,
        }

    def config(
        self,
        strategy: str,
        scenario: str,
        rate: float,
        load: str,
        loops: int,
        warmup_s: float,
        window_s: float,
    ) -> dict[str, Any]:
        return self.base | {
            "strategy": strategy,
            "scenario": scenario,
            "rate": rate,
            "load": load,
            "loops": loops,
            "warmup_s": warmup_s,
            "window_s": window_s,
        }

    def throughput(self, advance: Any) -> dict[str, Any]:
        args = self.args
        runs: dict[str, list[dict[str, Any]]] = {s: [] for s in args.strategy}
        for n in range(args.rounds):
            for strategy in rotation(args.strategy, n):
                runs[strategy].append(
                    run_worker(
                        self.config(
                            strategy,
                            "healthy",
                            1.0,
                            "closed",
                            THROUGHPUT_LOOPS,
                            0.5,
                            args.throughput_seconds,
                        )
                    )
                )
                advance()
        return {s: aggregate(r) for s, r in runs.items()}

    def cell(self, rate: float, load: str, advance: Any) -> dict[str, Any]:
        args, loops = self.args, loops_for(rate)
        scenarios: dict[str, Any] = {}
        for name in args.scenario:
            scenario = SCENARIOS[name]
            window = scenario.window_s(args.window)
            runs: dict[str, list[dict[str, Any]]] = {s: [] for s in args.strategy}
            for n in range(args.rounds):
                for strategy in rotation(args.strategy, n):
                    config = self.config(strategy, name, rate, load, loops, args.warmup, window)
                    runs[strategy].append(run_worker(config))
                    advance()
            scenarios[name] = {
                "description": scenario.description,
                "goal": scenario.goal,
                "window_s": window,
                "strategies": {s: aggregate(r) for s, r in runs.items()},
            }
        return {
            "rate": rate,
            "load": load,
            "loops": loops if load == "await" else None,
            "scenarios": scenarios,
        }


def run_all(args: argparse.Namespace, cluster: ClusterProcess) -> dict[str, Any]:
    runner = Runner(args, cluster)
    per_cell = args.rounds * len(args.strategy) * len(args.scenario)
    measure = "max" in args.rates and args.max_rate is None
    total = len(args.rates) * len(args.loads) * per_cell + measure * args.rounds * len(
        args.strategy
    )
    results: dict[str, Any] = {"brokers": sorted(cluster.brokers), "faulty_broker": FAULTY}
    with common.progress() as bar:
        task = bar.add_task("healthy throughput", total=total)
        results["throughput"] = runner.throughput(lambda: bar.advance(task)) if measure else None
        max_rate = args.max_rate
        if measure:
            slowest = min(median_of(c, "msgs_per_s") or 0.0 for c in results["throughput"].values())
            max_rate = max(100.0, round(MAX_RATE_FRACTION * slowest, -2))
        results["max_rate"] = max_rate
        results["cells"] = {}
        for label in args.rates:
            rate = float(label) if label != "max" else float(max_rate or 0.0)
            for load in args.loads:
                bar.update(task, description=f"{label} msg/s, {load}")
                results["cells"][f"{label}/{load}"] = runner.cell(
                    rate, load, lambda: bar.advance(task)
                )
    return results


def _spread(cell: dict[str, Any], figure: str, digits: int = 1, scale: float = 1.0) -> str:
    item = cell[figure]
    if item["median"] is None:
        return "-"
    low, high = item["spread"]
    text = f"{scale * item['median']:,.{digits}f}"
    if len(item["values"]) > 1:
        text += f" [{scale * low:,.{digits}f}-{scale * high:,.{digits}f}]"
    return text


def print_table(results: dict[str, Any]) -> None:
    for cell in results["cells"].values():
        loops = f", {cell['loops']} loops" if cell["loops"] else ""
        table = Table(title=f"{cell['rate']:,.0f} msg/s, {cell['load']}{loops}: median [min-max]")
        for column in (
            "scenario",
            "strategy",
            "success %",
            "p50 ms",
            "p99 ms",
            "p999 ms",
            f"{FAULTY} share max/1 s %",
            "retries/msg",
            "CPU us/msg",
        ):
            table.add_column(
                column, justify="left" if column in ("scenario", "strategy") else "right"
            )
        for name, scenario in cell["scenarios"].items():
            for strategy, row in scenario["strategies"].items():
                table.add_row(
                    name,
                    strategy,
                    _spread(row, "success_rate", 2, 100.0),
                    _spread(row, "p50_ms"),
                    _spread(row, "p99_ms"),
                    _spread(row, "p999_ms"),
                    _spread(row, "focus_share_max", 2, 100.0),
                    _spread(row, "retries_per_msg", 3),
                    _spread(row, "client_cpu_us_per_msg", 0),
                )
            table.add_section()
        common.out.print(table)
    if results.get("throughput"):
        table = Table(title=f"Healthy closed-loop throughput ({THROUGHPUT_LOOPS} await loops)")
        for column in ("strategy", "msg/s", "client CPU us/msg"):
            table.add_column(column, justify="left" if column == "strategy" else "right")
        for strategy, row in results["throughput"].items():
            table.add_row(
                strategy, _spread(row, "msgs_per_s", 0), _spread(row, "client_cpu_us_per_msg", 1)
            )
        common.out.print(table)


def print_failover(results: dict[str, Any]) -> None:
    table = Table(title=f"Failover: {results['scenario']}, {results['rate']:g} msg/s")
    table.add_column("figure")
    table.add_column("median [min-max]", justify="right")
    for name in results["figures"]:
        table.add_row(name, _spread(results["figures"], name, 2))
    common.out.print(table)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = settle_args(build_parser().parse_args(argv))
    started, machine = time.monotonic(), common.machine_info()
    if args.failover:
        failover = _faults_failover.run_rounds(args)
        return common.finish(
            args,
            NAME,
            argv,
            results=failover,
            targets=_faults_failover.targets(failover),
            plot="faults_failover",
            show=lambda: print_failover(failover),
            started=started,
            machine=machine,
        )
    with ClusterProcess(brokers=3, topics={TOPIC: 4}, sink=True, http=True) as cluster:
        results = run_all(args, cluster)
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
