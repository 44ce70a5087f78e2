"""What every benchmark shares: options, the result file, machine facts, /proc readings.

The result file (``result.json``) has a stable shape, versioned by ``schema``::

    {"schema": 1, "benchmark": "throughput", "command": ".venv/bin/python -m benchmarks...",
     "argv": [...], "timestamp": "2025-01-01T12:00:00+00:00", "duration_s": 61.2,
     "machine": {...}, "config": {...}, "results": {...},
     "targets": [{"name", "value", "op", "threshold", "met", "note"}], "plots": ["x.png"]}

``results`` is benchmark-specific (see each module's docstring); adding keys keeps the
schema number, renaming or removing one bumps it.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

SCHEMA_VERSION = 1
RESULTS_ROOT = Path(__file__).resolve().parent / "results"
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

console = Console(stderr=True)  # progress and notes; tables go to stdout
out = Console(width=None if sys.stdout.isatty() else 160)

T = TypeVar("T")


# -- options and running -------------------------------------------------------------------


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows defaults, except ``None`` ones (their help says what happens instead)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default is None:
            return action.help or ""
        return super()._get_help_string(action) or ""


def base_parser(name: str, description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python -m benchmarks.{name}",
        description=description,
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="a short run (under a minute)")
    parser.add_argument(
        "--out",
        type=Path,
        default=RESULTS_ROOT / name,
        help="folder for result.json and the plots",
    )
    parser.add_argument(
        "--loop",
        choices=("uvloop", "asyncio"),
        default="uvloop" if _has_uvloop() else "asyncio",
        help="event loop for the client side (the dev cluster runs on uvloop when installed)",
    )
    parser.add_argument(
        "--plots", action=argparse.BooleanOptionalAction, default=True, help="write the PNGs"
    )
    return parser


def _has_uvloop() -> bool:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


def run(main: Callable[[], Coroutine[Any, Any, T]], loop: str) -> T:
    if loop == "uvloop":
        import uvloop

        return uvloop.run(main())
    return asyncio.run(main())


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def int_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} needs integers >= 1")
    return values


def progress() -> Progress:
    """A progress bar on stderr (quiet when stderr is not a terminal)."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )


# -- statistics ----------------------------------------------------------------------------


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in [0, 100]) of sorted values; ``None`` if empty."""
    if not sorted_values:
        return None
    rank = math.ceil(round(q / 100.0 * len(sorted_values), 9))  # 99.9% of 1000 is 999
    return sorted_values[min(max(rank, 1), len(sorted_values)) - 1]


def latency_summary(seconds: Iterable[float]) -> dict[str, float | int | None]:
    """p50 / p99 / p999 / max / mean in milliseconds, and the sample count."""
    values = sorted(seconds)
    ms = [v * 1000.0 for v in values]

    def q(p: float) -> float | None:
        value = percentile(ms, p)
        return None if value is None else round(value, 4)

    return {
        "count": len(ms),
        "p50_ms": q(50),
        "p99_ms": q(99),
        "p999_ms": q(99.9),
        "max_ms": q(100),
        "mean_ms": round(sum(ms) / len(ms), 4) if ms else None,
    }


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


# -- targets -------------------------------------------------------------------------------


@dataclass
class Target:
    """One checked claim: ``value op threshold`` (op is ``>=``, ``<=`` or ``<``)."""

    name: str
    value: float | None
    op: str
    threshold: float
    note: str = ""

    @property
    def met(self) -> bool:
        if self.value is None:
            return False
        if self.op == ">=":
            return self.value >= self.threshold
        if self.op == "<":
            return self.value < self.threshold
        return self.value <= self.threshold

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "met": self.met}


# -- /proc ---------------------------------------------------------------------------------


def cpu_seconds(pid: int | None = None) -> float | None:
    """User + system CPU seconds of a process (``None`` = this one; ``None`` if unknown)."""
    path = f"/proc/{'self' if pid is None else pid}/stat"
    try:
        with open(path, encoding="ascii") as f:
            text = f.read()
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()
    # after the ")" field 3 (state) is fields[0]; utime is field 14, stime field 15
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_bytes() -> int:
    """This process's resident set size (VmRSS), in bytes."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class CpuMeter:
    """CPU use of a process over an interval, as a fraction of one core."""

    def __init__(self, pid: int | None = None) -> None:
        self.pid = pid
        self._cpu = cpu_seconds(pid)
        self._wall = time.perf_counter()

    def reset(self) -> None:
        self._cpu = cpu_seconds(self.pid)
        self._wall = time.perf_counter()

    def read(self) -> float | None:
        now_cpu, now = cpu_seconds(self.pid), time.perf_counter()
        if now_cpu is None or self._cpu is None or now <= self._wall:
            return None
        return round((now_cpu - self._cpu) / (now - self._wall), 3)


# -- machine and result file ---------------------------------------------------------------


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    try:
        done = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=12"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def machine_info() -> dict[str, Any]:
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    return {
        "platform": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "cpu_model": _cpu_model(),
        "cpus": os.cpu_count(),
        "cpus_usable": affinity,
        "load_avg_at_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "git": _git_commit(),
        "versions": {
            p: _version(p) for p in ("rocketmq-aio-producer", "msgspec", "anyio", "uvloop")
        },
    }


def write_result(
    out_dir: Path,
    name: str,
    *,
    config: dict[str, Any],
    results: dict[str, Any],
    targets: Sequence[Target],
    plots: Sequence[str],
    started: float,
    machine: dict[str, Any],
    argv: Sequence[str],
) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    document = {
        "schema": SCHEMA_VERSION,
        "benchmark": name,
        "command": f".venv/bin/python -m benchmarks.{name} {shlex.join(argv)}".strip(),
        "argv": list(argv),
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "duration_s": round(time.monotonic() - started, 1),
        "machine": machine,
        "config": config,
        "results": results,
        "targets": [t.to_json() for t in targets],
        "plots": list(plots),
    }
    path = out_dir / "result.json"
    path.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    return path


def finish(
    args: argparse.Namespace,
    name: str,
    argv: Sequence[str],
    *,
    results: dict[str, Any],
    targets: Sequence[Target],
    plot: str,
    show: Callable[[], None],
    started: float,
    machine: dict[str, Any],
) -> int:
    """The end every benchmark shares: plots (``benchmarks._plots.<plot>``, imported only
    when plotting), ``result.json``, the table (``show``), the targets, where it all went."""
    plots: list[str] = []
    if args.plots:
        from benchmarks import _plots

        plots = getattr(_plots, plot)(results, args.out)
    path = write_result(
        args.out,
        name,
        config=config_of(args),
        results=results,
        targets=targets,
        plots=plots,
        started=started,
        machine=machine,
        argv=argv,
    )
    show()
    for line in target_lines(targets):
        out.print(line)
    if getattr(args, "quick", False) and targets:
        out.print(QUICK_NOTE)
    out.print(f"result: {path}" + "".join(f"\nplot: {args.out / p}" for p in plots))
    return 0


def config_of(args: argparse.Namespace) -> dict[str, Any]:
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}


def fmt(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


#: What a ``--quick`` run's figures and MET / MISSED marks are worth (issue 46).
QUICK_NOTE = (
    "[yellow]--quick: one short round, on a machine other work shares.[/yellow] It shows "
    "that every path runs and the figures' order of magnitude; it cannot show the "
    "targets: rates swing 20-30% between runs on a shared 2-core machine and one short "
    "window has no spread, so MET / MISSED here are not a verdict (the exit status stays "
    "0). The README's figures are full runs: interleaved rounds, medians with spread."
)


def target_lines(targets: Sequence[Target]) -> list[str]:
    lines = []
    for t in targets:
        mark = "[green]MET[/green]" if t.met else "[red]MISSED[/red]"
        lines.append(f"{mark}  {t.name}: {fmt(t.value, 3)} {t.op} {t.threshold:g} {t.note}")
    return lines


def local_spark(app_name: str) -> Any:
    """A local[2] SparkSession as every Spark benchmark runs one: its Python workers on this
    interpreter, everything bound to 127.0.0.1, no UI or progress bars, UTC, errors only
    in the log (pyspark is imported here: only the Spark benchmarks need it)."""
    for name in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        os.environ[name] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session
