"""Publishing a DataFrame with ``producer.spark`` in ``local[2]``, one broker browned out.

A 3-broker sink cluster runs as a process of its own with its HTTP fault control; after a
healthy warm-up ``broker-b`` answers every request ``--brownout-ms`` late. Each round then
publishes the same ``--rows`` generated rows (two partitions, ~110-byte bodies) three
ways, in an order that rotates from round to round:

* ``spark arrow`` - ``publish(..., engine="arrow")`` (``mapInArrow``, the default);
* ``spark rows``  - ``publish(..., engine="rows")`` (``rdd.mapPartitions`` over Rows);
* ``single``      - one async producer in a fresh process of its own, the same rows and
  the same concurrency per producer (``benchmarks._spark_single``).

Rows/s count wall time from the call to the last result (Spark's start-up excluded: the
session is up before the first round). Figures are medians over the rounds with their
[min, max]. The last round's Spark results are analysed with ``latency_report`` (1-second
buckets), printed, and plotted (``latency.png``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from rich.table import Table

from benchmarks import _common as common
from benchmarks._cluster import ClusterProcess

NAME = "spark_publish"
TOPIC = "BenchSpark"
FAULTY = "broker-b"
MODES = ("spark arrow", "spark rows", "single")
REPO = Path(__file__).resolve().parent.parent


def build_parser() -> argparse.ArgumentParser:
    parser = common.base_parser(NAME, __doc__.split("\n\n")[0])
    parser.add_argument(
        "--rows", type=common.positive_int, help="rows per run (100000; quick 4000)"
    )
    parser.add_argument("--rounds", type=common.positive_int, help="rounds (3; quick 1)")
    parser.add_argument(
        "--concurrency",
        type=common.positive_int,
        default=64,
        help="sends in flight per producer (per partition for Spark)",
    )
    parser.add_argument(
        "--brownout-ms",
        type=float,
        default=200.0,
        help="broker-b's extra latency during the measured runs",
    )
    return parser


def settle_args(args: argparse.Namespace) -> argparse.Namespace:
    args.rows = args.rows or (4_000 if args.quick else 100_000)
    args.rounds = args.rounds or (1 if args.quick else 3)
    return args


def set_fault(http_url: str, spec: dict[str, Any] | None) -> None:
    method = "DELETE" if spec is None else "PUT"
    data = None if spec is None else json.dumps(spec).encode()
    request = urllib.request.Request(
        f"{http_url}/brokers/{FAULTY}/fault",
        data=data,
        method=method,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10):
        pass


def run_single(args: argparse.Namespace, namesrv: str) -> dict[str, Any]:
    command = [
        sys.executable,
        "-m",
        "benchmarks._spark_single",
        namesrv,
        TOPIC,
        str(args.rows),
        str(args.concurrency),
        args.loop,
    ]
    done = subprocess.run(
        command,
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run_spark(
    args: argparse.Namespace, source: Any, namesrv: str, engine: str
) -> tuple[dict[str, Any], Any]:
    from producer.spark import publish

    began = time.perf_counter()
    results = publish(
        source,
        namesrv=namesrv,
        group="bench-spark",
        topic=TOPIC,
        body_col="body",
        id_col="id",
        concurrency=args.concurrency,
        engine=engine,
    )  # type: ignore[arg-type]
    seconds = time.perf_counter() - began
    failed = results.where("fate IS NOT NULL").count()
    return {
        "rows": args.rows,
        "seconds": seconds,
        "rows_per_s": args.rows / seconds,
        "failed": failed,
    }, results


def rounds(
    args: argparse.Namespace, cluster: ClusterProcess
) -> tuple[dict[str, list[dict[str, Any]]], Any]:
    spark = common.local_spark(NAME)
    source = (
        spark.range(args.rows, numPartitions=2)
        .selectExpr("id", "concat('body-', id, repeat('x', 100)) AS body")
        .cache()
    )
    source.count()
    from producer.spark import publish

    publish(
        source.limit(2_000),
        namesrv=cluster.namesrv,
        group="bench-spark",
        topic=TOPIC,
        body_col="body",
        id_col="id",
    )  # the workers start and import once, unmeasured
    assert cluster.http_url is not None
    set_fault(cluster.http_url, {"latency_ms": args.brownout_ms})
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    last = None
    with common.progress() as bar:
        task = bar.add_task("rounds", total=args.rounds * len(MODES))
        for number in range(args.rounds):
            order = MODES[number % 3 :] + MODES[: number % 3]
            for mode in order:
                if mode == "single":
                    runs[mode].append(run_single(args, cluster.namesrv))
                else:
                    engine = mode.split()[1]
                    figures, results = run_spark(args, source, cluster.namesrv, engine)
                    runs[mode].append(figures)
                    if engine == "arrow":
                        last = results
                bar.advance(task)
    set_fault(cluster.http_url, None)
    return runs, last


def summarise(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    summary = {}
    for mode, values in runs.items():
        rates = [v["rows_per_s"] for v in values]
        summary[mode] = {
            "rows_per_s": statistics.median(rates),
            "min": min(rates),
            "max": max(rates),
            "failed": sum(v["failed"] for v in values),
        }
    single = summary["single"]["rows_per_s"]
    for mode in MODES:
        summary[mode]["vs_single"] = summary[mode]["rows_per_s"] / single
    return summary


def report_of(results: Any, out_dir: Path, plots: bool) -> dict[str, Any]:
    from producer.spark import latency_report, plot_over_time, render_report

    report = latency_report(results, bucket="1 second")
    render_report(report, console=common.out)
    if plots:
        out_dir.mkdir(parents=True, exist_ok=True)
        plot_over_time(report.over_time, out_dir / "latency.png")
    return {
        "per_broker": [row.asDict() for row in report.per_broker.collect()],
        "broker_attempts": [row.asDict() for row in report.broker_attempts.collect()],
    }


def print_table(summary: dict[str, Any], rows: int) -> None:
    table = Table(title=f"{rows:,} rows per run, {FAULTY} browned out (median \\[min, max])")
    for column in ("mode", "rows/s", "vs single", "failed rows"):
        table.add_column(column, justify="left" if column == "mode" else "right")
    for mode in MODES:
        s = summary[mode]
        table.add_row(
            mode,
            f"{s['rows_per_s']:,.0f} [{s['min']:,.0f}, {s['max']:,.0f}]",
            f"{s['vs_single']:.2f}x",
            str(s["failed"]),
        )
    common.out.print(table)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = settle_args(build_parser().parse_args(argv))
    started, machine = time.monotonic(), common.machine_info()
    with ClusterProcess(brokers=3, topics={TOPIC: 8}, sink=True, http=True) as cluster:
        runs, last = rounds(args, cluster)
    summary = summarise(runs)
    report = report_of(last, args.out, args.plots)
    results = {
        "runs": runs,
        "summary": summary,
        "report": report,
        "server": {"command": cluster.command[1:]},
    }
    return common.finish(
        args,
        NAME,
        argv,
        results=results,
        targets=[],
        plot="spark_publish",
        show=lambda: print_table(summary, args.rows),
        started=started,
        machine=machine,
    )


if __name__ == "__main__":
    raise SystemExit(main())
