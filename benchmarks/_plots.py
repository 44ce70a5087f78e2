"""PNG figures (matplotlib, Agg backend; imported only when plotting)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

STRATEGY_COLOURS = {
    "off": "tab:gray",
    "classic_4_9": "tab:orange",
    "classic_5": "tab:red",
    "adaptive": "tab:blue",
}
BROKER_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown")


def _save(fig: Any, out_dir: Path, name: str) -> str:
    out_dir.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    return name


def _bars(ax: Any, labels: list[str], series: dict[str, list[float]], log: bool = False) -> None:
    width = 0.8 / len(series)
    for i, (label, values) in enumerate(series.items()):
        xs = [x + (i - (len(series) - 1) / 2) * width for x in range(len(labels))]
        ax.bar(xs, [v or 0.0 for v in values], width, label=label)
    ax.set_xticks(range(len(labels)), labels, rotation=15)
    if log:
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)
    ax.legend()


_THROUGHPUT_SIDES = {
    "sdk": "SDK",
    "sdk_unbatched": "SDK, batching off",
    "blaster": "raw-frame blaster",
}


def throughput(results: dict[str, Any], out_dir: Path) -> list[str]:
    modes = results["modes"]
    labels = list(modes)
    sides = [s for s in _THROUGHPUT_SIDES if f"{s}_msgs_per_s" in modes[labels[0]]]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    _bars(
        ax,
        labels,
        {_THROUGHPUT_SIDES[s]: [modes[m][f"{s}_msgs_per_s"] for m in labels] for s in sides},
    )
    first = sides[0]
    for x, m in enumerate(labels):
        top = max(modes[m][f"{s}_msgs_per_s"] or 0 for s in sides)
        ratio = modes[m].get(f"{first}_ratio")
        if ratio is not None:
            ax.annotate(f"{ratio:.2f}x", (x, top), ha="center", va="bottom")
    ax.set_ylabel("messages / s")
    ax.set_title(
        f"Throughput vs raw frames on the same broker (label: {_THROUGHPUT_SIDES[first]}/blaster)"
    )
    names = [_save(fig, out_dir, "throughput.png")]

    fig, ax = plt.subplots(figsize=(9, 4.5))
    series = {}
    for s in sides:
        for q in ("p50", "p99"):
            series[f"{_THROUGHPUT_SIDES[s]} {q}"] = [modes[m][f"{s}_{q}_ms"] for m in labels]
    _bars(ax, labels, series, log=True)
    ax.set_ylabel("latency (ms, log)")
    ax.set_title("Send latency: SDK vs raw frames")
    names.append(_save(fig, out_dir, "latency.png"))
    return names


def faults(results: dict[str, Any], out_dir: Path) -> list[str]:
    """Per cell (rate/load): the p99 of every scenario and strategy with its spread, and
    for each scenario adaptive must win, broker-b's share and the p99 per 1 s over time."""
    names = []
    for label, cell in results["cells"].items():
        stem = "faults_" + label.replace("/", "_").replace(".", "_")
        names.append(_faults_summary(label, cell, out_dir, f"{stem}_summary.png"))
        for name, scenario in cell["scenarios"].items():
            if scenario["goal"] == "win":
                names.append(_timeline(label, name, scenario, out_dir, f"{stem}_{name}.png"))
    return names


def faults_failover(results: dict[str, Any], out_dir: Path) -> list[str]:
    """Per round: send p99 before the kill, in the 5 s after it, and later."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    rounds = results["rounds"]
    labels = [f"round {n + 1}" for n in range(len(rounds))]
    series = {
        "before the kill": [r["p99_before_ms"] or 0.0 for r in rounds],
        "5 s after the kill": [r["p99_around_ms"] or 0.0 for r in rounds],
        "later": [r["p99_after_ms"] or 0.0 for r in rounds],
    }
    _bars(ax, labels, series, log=True)
    ax.set_ylabel("send p99 (ms, log)")
    fig.suptitle(f"Failover: {results['scenario']}")
    return [_save(fig, out_dir, "faults_failover.png")]


def _timeline(label: str, name: str, scenario: dict[str, Any], out_dir: Path, file: str) -> str:
    fig, (share, p99) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
    for strategy, cell in scenario["strategies"].items():
        line = cell["timeline"]
        colour = STRATEGY_COLOURS.get(strategy)
        focus = [100 * v for v in line["attempt_share"][cell["focus"]]]
        share.plot(line["t"], focus, "o-", ms=3, label=strategy, color=colour)
        p99.plot(line["t"], [v or 0.0 for v in line["p99_ms"]], "o-", ms=3, color=colour)
    share.set_yscale("symlog", linthresh=0.5)
    share.axhline(0.5, color="gray", ls=":", lw=1)
    share.set_ylabel(
        f"{next(iter(scenario['strategies'].values()))['focus']} share of attempts (%)"
    )
    share.grid(alpha=0.3)
    share.legend(fontsize="small")
    p99.set_yscale("log")
    p99.set_ylabel("p99 per 1 s (ms, log)")
    p99.set_xlabel("seconds since the fault began (the median round of each strategy)")
    p99.grid(alpha=0.3)
    fig.suptitle(f"{name} at {label}: {scenario['description']}")
    return _save(fig, out_dir, file)


def _faults_summary(label: str, cell: dict[str, Any], out_dir: Path, file: str) -> str:
    scenarios = list(cell["scenarios"])
    strategies = list(next(iter(cell["scenarios"].values()))["strategies"])
    fig, ax = plt.subplots(figsize=(11, 4.5))
    width = 0.8 / len(strategies)
    for i, strategy in enumerate(strategies):
        xs = [x + (i - (len(strategies) - 1) / 2) * width for x in range(len(scenarios))]
        rows = [cell["scenarios"][s]["strategies"][strategy]["p99_ms"] for s in scenarios]
        values = [r["median"] or 0.0 for r in rows]
        low = [v - (r["spread"] or [v, v])[0] for v, r in zip(values, rows, strict=True)]
        high = [(r["spread"] or [v, v])[1] - v for v, r in zip(values, rows, strict=True)]
        ax.bar(xs, values, width, label=strategy, color=STRATEGY_COLOURS.get(strategy))
        ax.errorbar(xs, values, yerr=[low, high], fmt="none", ecolor="black", lw=0.8)
    ax.set_xticks(range(len(scenarios)), scenarios, rotation=15)
    ax.set_yscale("log")
    ax.set_ylabel("p99 send latency (ms, log)")
    ax.set_title(f"p99 per scenario and strategy at {label} (median, bars: min-max of rounds)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    return _save(fig, out_dir, file)


def memory(results: dict[str, Any], out_dir: Path) -> list[str]:
    samples = results["samples"]
    sends = [s["sends"] for s in samples]
    warm = results["growth"]["from_sends"]
    fig, (mem, counts) = plt.subplots(1, 2, figsize=(11, 4.2))
    mem.plot(sends, [s["rss_bytes"] / 2**20 for s in samples], "o-", ms=3, label="RSS")
    mem.plot(sends, [s["traced_bytes"] / 2**20 for s in samples], "s-", ms=3, label="traced")
    mem.axvline(warm, color="gray", ls=":", label="end of warm-up")
    mem.set_xlabel("sends")
    mem.set_ylabel("MiB")
    mem.set_ylim(bottom=0)
    mem.set_title("Memory at pauses (nothing in flight)")
    mem.grid(alpha=0.3)
    mem.legend()
    for key in ("tasks", "connections", "pending", "in_flight"):
        counts.plot(sends, [s[key] for s in samples], "o-", ms=3, label=key)
    counts.set_xlabel("sends")
    counts.set_title("Tasks, connections, pending requests at pauses")
    counts.grid(alpha=0.3)
    counts.legend()
    return [_save(fig, out_dir, "memory.png")]


def soak(results: dict[str, Any], out_dir: Path) -> list[str]:
    samples = results["samples"]
    t = [s["t_s"] for s in samples]
    fig, (mem, load) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    mem.plot(t, [s["rss_mib"] for s in samples], label="RSS")
    mem.plot(t, [s["traced_mib"] for s in samples], label="traced Python memory")
    mem.set_ylabel("MiB")
    mem.legend()
    load.plot(t, [s["in_flight"] for s in samples], label="sends in flight")
    load.plot(t, [s["tasks"] for s in samples], label="tasks")
    load.plot(t, [s["fds"] for s in samples], label="open fds")
    for fault in results["faults"]:
        load.axvspan(fault["at_s"], fault["at_s"] + fault["for_s"], alpha=0.08, color="red")
    load.set_xlabel("seconds (red: a fault applied)")
    load.legend()
    mem.set_title("Soak: memory and resources under random faults")
    return [_save(fig, out_dir, "soak.png")]


def spark_publish(results: dict[str, Any], out_dir: Path) -> list[str]:
    """Rows/s per mode (median, bar; [min, max], whiskers), and the latency PNG the
    benchmark drew from the last Spark run's report."""
    summary = results["summary"]
    modes = list(summary)
    medians = [summary[m]["rows_per_s"] for m in modes]
    low = [summary[m]["rows_per_s"] - summary[m]["min"] for m in modes]
    high = [summary[m]["max"] - summary[m]["rows_per_s"] for m in modes]
    fig, axes = plt.subplots(figsize=(7, 4))
    axes.bar(modes, medians, yerr=[low, high], capsize=6, color=BROKER_COLOURS[: len(modes)])
    axes.set_ylabel("rows/s (median, [min, max])")
    axes.set_title("publishing one DataFrame, one broker browned out")
    names = [_save(fig, out_dir, "rows_per_s.png")]
    if (out_dir / "latency.png").exists():
        names.append("latency.png")
    return names


def consume(results: dict[str, Any], out_dir: Path) -> list[str]:
    modes = results["modes"]
    labels = list(modes)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7))
    _bars(top, labels, {"messages / s": [modes[m]["msgs_per_s"] for m in labels]})
    top.set_title("Push consumer vs raw pulls (medians over rounds)")
    _bars(bottom, labels, {"client CPU us / message": [modes[m]["cpu_us_per_msg"] for m in labels]})
    return [_save(fig, out_dir, "consume.png")]


def consume_memory(results: dict[str, Any], out_dir: Path) -> list[str]:
    samples = results["samples"]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.plot([s["consumed"] for s in samples], [s["rss_bytes"] / 2**20 for s in samples], "o-")
    ax.set_xlabel("messages consumed")
    ax.set_ylabel("RSS (MiB)")
    ax.set_title("Consumer memory over a long drain")
    ax.grid(alpha=0.3)
    return [_save(fig, out_dir, "consume_memory.png")]
