"""A latency report for people: rich tables in the terminal, a PNG of percentiles over time."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from producer.spark._report import LatencyReport

TABLES = ("overall", "per_broker", "per_topic", "broker_attempts", "attempts", "fates")


def render_report(
    report: LatencyReport, *, console: Console | None = None, png: str | Path | None = None
) -> None:
    """Print the report's tables; with ``png``, also plot p50/p99 per broker over time."""
    out = console or Console()
    for name in TABLES:
        table = _table(name.replace("_", " "), getattr(report, name))
        if out.is_terminal:
            out.print(table)
        else:
            _print_whole(out, table)
    if png is not None:
        plot_over_time(report.over_time, png)


IDENTIFIERS = ("broker", "topic")


def _table(title: str, frame: DataFrame) -> Table:
    """Identifiers are never cut or folded; in a narrow terminal the figures fold instead
    of ending in an ellipsis, so no cell ever loses characters."""
    rows = [[_cell(value) for value in row] for row in frame.collect()]
    table = Table(title=title, title_justify="left")
    for index, column in enumerate(frame.columns):
        if column in IDENTIFIERS:
            widest = max([len(column), *(len(row[index]) for row in rows)])
            table.add_column(column, no_wrap=True, min_width=widest)
        else:
            table.add_column(column, justify="right", overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


def _print_whole(console: Console, table: Table) -> None:
    """Print a table unsqueezed: output to a file or pipe has no screen edge, so it is
    printed whole rather than at the 80 columns rich assumes for it."""
    unbounded = console.options.update_width(10_000)
    saved = console.width
    console.width = max(saved, Measurement.get(console, unbounded, table).maximum)
    try:
        console.print(table)
    finally:
        console.width = saved


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if value < 1 else f"{value:,.1f}"
    if isinstance(value, (list, tuple)):
        return ",".join(_cell(v) for v in value) or "-"
    return str(value)


def plot_over_time(over_time: DataFrame, png: str | Path) -> Path:
    """p50 and p99 of successful sends per broker per bucket, one line each."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            'the PNG needs matplotlib: pip install "rocketmq-aio-producer[spark]"'
        ) from exc
    series: dict[str, tuple[list[Any], list[float], list[float]]] = {}
    for row in over_time.where("p50_ms IS NOT NULL").collect():
        times, p50, p99 = series.setdefault(row["broker"] or "-", ([], [], []))
        times.append(row["bucket_start"])
        p50.append(row["p50_ms"])
        p99.append(row["p99_ms"])
    figure, axes = plt.subplots(figsize=(10, 5))
    for broker, (times, p50, p99) in sorted(series.items()):
        line = axes.plot(times, p99, marker="o", label=f"{broker} p99")[0]
        axes.plot(times, p50, linestyle="--", color=line.get_color(), label=f"{broker} p50")
    _label(axes, ["send start (bucket)", "latency of successful sends, ms"])
    path = Path(png)
    figure.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(figure)
    return path


def _label(axes: Any, names: Sequence[str]) -> None:
    axes.set_xlabel(names[0])
    axes.set_ylabel(names[1])
    axes.set_yscale("log")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(loc="upper left", fontsize="small")
    axes.set_title("publish latency per broker")
