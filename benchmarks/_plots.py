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
