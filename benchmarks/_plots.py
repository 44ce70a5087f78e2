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


def throughput(results: dict[str, Any], out_dir: Path) -> list[str]:
    modes = results["modes"]
    labels = list(modes)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    _bars(
        ax,
        labels,
        {
            "SDK": [modes[m]["sdk_msgs_per_s"] for m in labels],
            "raw-frame blaster": [modes[m]["blaster_msgs_per_s"] for m in labels],
        },
    )
    for x, m in enumerate(labels):
        top = max(modes[m]["sdk_msgs_per_s"] or 0, modes[m]["blaster_msgs_per_s"] or 0)
        ax.annotate(f"{modes[m]['ratio']:.2f}x", (x, top), ha="center", va="bottom")
    ax.set_ylabel("messages / s")
    ax.set_title("Throughput: SDK vs raw frames on the same broker (label: SDK/blaster)")
    names = [_save(fig, out_dir, "throughput.png")]

    fig, ax = plt.subplots(figsize=(9, 4.5))
    _bars(
        ax,
        labels,
        {
            "SDK p50": [modes[m]["sdk_p50_ms"] for m in labels],
            "SDK p99": [modes[m]["sdk_p99_ms"] for m in labels],
            "blaster p50": [modes[m]["blaster_p50_ms"] for m in labels],
            "blaster p99": [modes[m]["blaster_p99_ms"] for m in labels],
        },
        log=True,
    )
    ax.set_ylabel("latency (ms, log)")
    ax.set_title("Send latency: SDK vs raw frames")
    names.append(_save(fig, out_dir, "latency.png"))
    return names


def faults(results: dict[str, Any], out_dir: Path) -> list[str]:
    """One figure per scenario (latency and broker share over time, a column per
    strategy) and a summary of p99 per scenario."""
    names = [
        _scenario(name, scenario, results, out_dir)
        for name, scenario in results["scenarios"].items()
    ]
    names.append(_faults_summary(results, out_dir))
    return names


def _scenario(name: str, scenario: dict[str, Any], results: dict[str, Any], out_dir: Path) -> str:
    strategies = scenario["strategies"]
    fig, axes = plt.subplots(2, len(strategies), figsize=(4 * len(strategies), 6.5), sharex=True)
    top = max(
        (v for row in strategies.values() for v in row["timeline"]["max_ms"] if v is not None),
        default=1.0,
    )
    for column, (strategy, row) in enumerate(strategies.items()):
        line = row["timeline"]
        ax = axes[0][column]
        for key, style in (("max_ms", ":"), ("p99_ms", "-"), ("p50_ms", "--")):
            ax.plot(line["t"], line[key], style, label=key.replace("_ms", ""))
        ax.set_yscale("log")
        ax.set_ylim(0.1, top * 1.5)
        success = 100 * (row["success_rate"] or 0)
        ax.set_title(f"{strategy}\np99 {row['latency']['p99_ms']:.1f} ms, ok {success:.2f}%")
        ax.grid(alpha=0.3)
        share = axes[1][column]
        brokers = list(line["attempt_share"])
        share.stackplot(
            line["t"],
            [line["attempt_share"][b] for b in brokers],
            labels=brokers,
            colors=BROKER_COLOURS[: len(brokers)],
        )
        share.set_ylim(0, 1)
        share.set_xlabel("seconds since the fault began")
    axes[0][0].set_ylabel("latency per bin (ms, log)")
    axes[1][0].set_ylabel("share of attempts")
    axes[0][-1].legend(loc="upper right", fontsize="small")
    axes[1][-1].legend(loc="upper right", fontsize="small")
    fig.suptitle(f"{name}: {scenario['description']}")
    return _save(fig, out_dir, f"faults_{name}.png")


def _faults_summary(results: dict[str, Any], out_dir: Path) -> str:
    scenarios = list(results["scenarios"])
    strategies = list(next(iter(results["scenarios"].values()))["strategies"])
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(strategies)
    for i, strategy in enumerate(strategies):
        xs = [x + (i - (len(strategies) - 1) / 2) * width for x in range(len(scenarios))]
        values = [
            results["scenarios"][s]["strategies"][strategy]["latency"]["p99_ms"] or 0.0
            for s in scenarios
        ]
        ax.bar(xs, values, width, label=strategy, color=STRATEGY_COLOURS.get(strategy))
    ax.set_xticks(range(len(scenarios)), scenarios)
    ax.set_yscale("log")
    ax.set_ylabel("p99 send latency (ms, log)")
    ax.set_title("p99 send latency per scenario and routing strategy")
    ax.grid(axis="y", alpha=0.3)
    ax.legend()
    return _save(fig, out_dir, "faults_summary.png")


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
