"""What one faults run measured, and the median and spread of a cell's rounds.

A run's summary (``summarize``), for the sends offered inside the window:
``sent``, ``ok``, ``success_rate``, ``latency`` (p50/p99/p999/max ms, failures at their
failure time), ``retries_per_msg``, ``msgs_per_s`` (successes per window second),
``client_cpu_us_per_msg`` (the worker's CPU over the window per send offered),
``attempt_share`` per broker, ``focus_share_max`` (the focus broker's largest share of
attempts in any 1 s bin starting 1 s or more into the window) and a ``timeline`` per
bin. A cell (rate, load, scenario, strategy) has one summary per round; ``aggregate``
gives each figure's median with its ``[min, max]`` spread and keeps the timeline of the
round whose p99 is the median.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks import _common as common
from benchmarks._faults_scenarios import BROKERS, SCENARIOS

BIN_S = 1.0


@dataclass(slots=True)
class Sample:
    offered_s: float
    latency_s: float
    ok: bool
    attempt_brokers: tuple[str, ...]
    broker: str | None


def summarize(
    samples: Sequence[Sample], window_s: float, config: dict[str, Any], cpu_s: float | None
) -> dict[str, Any]:
    inside = [s for s in samples if 0.0 <= s.offered_s < window_s]
    sent = len(inside)
    ok = sum(s.ok for s in inside)
    attempts = Counter(b for s in inside for b in s.attempt_brokers)
    total = sum(attempts.values())
    line = timeline(inside, window_s)
    focus = SCENARIOS[config["scenario"]].focus
    after_1s = [
        share for t, share in zip(line["t"], line["attempt_share"][focus], strict=True) if t >= 1.0
    ]
    return {
        "strategy": config["strategy"],
        "scenario": config["scenario"],
        "rate": config["rate"],
        "load": config["load"],
        "loops": config["loops"],
        "window_s": window_s,
        "sent": sent,
        "ok": ok,
        "success_rate": ok / sent if sent else None,
        "latency": common.latency_summary(s.latency_s for s in inside),
        "retries_per_msg": (total - sent) / sent if sent else None,
        "msgs_per_s": ok / window_s,
        "client_cpu_us_per_msg": 1e6 * cpu_s / sent if cpu_s is not None and sent else None,
        "attempt_share": {b: attempts[b] / total if total else 0.0 for b in BROKERS},
        "focus": focus,
        "focus_share_max": max(after_1s, default=None),
        "timeline": line,
    }


def timeline(samples: Sequence[Sample], window_s: float) -> dict[str, Any]:
    bins = max(1, round(window_s / BIN_S))
    by_bin: list[list[Sample]] = [[] for _ in range(bins)]
    for sample in samples:
        by_bin[min(int(sample.offered_s / BIN_S), bins - 1)].append(sample)
    out: dict[str, Any] = {"t": [round(i * BIN_S, 3) for i in range(bins)]}
    for key, q in (("p50_ms", 50), ("p99_ms", 99), ("max_ms", 100)):
        out[key] = [
            common.percentile(sorted(s.latency_s * 1000 for s in chunk), q) for chunk in by_bin
        ]
    out["failed"] = [sum(not s.ok for s in chunk) for chunk in by_bin]
    shares: dict[str, list[float]] = {b: [] for b in BROKERS}
    for chunk in by_bin:
        counts = Counter(b for s in chunk for b in s.attempt_brokers)
        total = sum(counts.values()) or 1
        for b in BROKERS:
            shares[b].append(counts[b] / total)
    out["attempt_share"] = shares
    return out


#: (name, how to read it from a run summary) for every figure a cell aggregates
FIGURES: dict[str, Callable[[dict[str, Any]], float | None]] = {
    "success_rate": lambda r: r["success_rate"],
    "p50_ms": lambda r: r["latency"]["p50_ms"],
    "p99_ms": lambda r: r["latency"]["p99_ms"],
    "p999_ms": lambda r: r["latency"]["p999_ms"],
    "max_ms": lambda r: r["latency"]["max_ms"],
    "retries_per_msg": lambda r: r["retries_per_msg"],
    "msgs_per_s": lambda r: r["msgs_per_s"],
    "client_cpu_us_per_msg": lambda r: r["client_cpu_us_per_msg"],
    "focus_share": lambda r: r["attempt_share"][r["focus"]],
    "focus_share_max": lambda r: r["focus_share_max"],
}


def aggregate(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The median of each figure over the rounds, its [min, max], and the values."""
    cell: dict[str, Any] = {"rounds": len(runs)}
    for name, read in FIGURES.items():
        values = [v for v in (read(r) for r in runs) if v is not None]
        cell[name] = {
            "median": common.median(values) if values else None,
            "spread": [min(values), max(values)] if values else None,
            "values": values,
        }
    by_p99 = sorted(runs, key=lambda r: r["latency"]["p99_ms"] or 0.0)
    typical = by_p99[(len(by_p99) - 1) // 2]
    cell["timeline"] = typical["timeline"]
    cell["attempt_share"] = typical["attempt_share"]
    cell["focus"] = typical["focus"]
    return cell


def median_of(cell: dict[str, Any], figure: str) -> float | None:
    value = cell[figure]["median"]
    return None if value is None else float(value)
