"""Issue 10's targets for the faults benchmark, checked on the medians of each cell.

Adaptive: 100% success in every run; in each cell (rate/load) its brown-out p99 at most
1.5x its healthy p99, broker-b's share at most 0.5% in every 1 s window from 1 s into
the brown-out (every round), its p99 at least 5% under the best classic strategy's where
there is something to win and within 3% of it where there is not (the scenario's
``goal``); its healthy closed-loop throughput at least 0.97x the best classic one's.
"""

from __future__ import annotations

from typing import Any

from benchmarks import _common as common
from benchmarks._faults_scenarios import FAULTY
from benchmarks._faults_stats import median_of

CLASSIC = ("classic_4_9", "classic_5")
WIN, NO_HARM, BROWNOUT_VS_HEALTHY, FOCUS_SHARE, THROUGHPUT = 0.95, 1.03, 1.5, 0.005, 0.97


def _p99(cell: dict[str, Any], scenario: str, strategy: str) -> float | None:
    return median_of(cell["scenarios"][scenario]["strategies"][strategy], "p99_ms")


def _best_classic(cell: dict[str, Any], scenario: str) -> tuple[str, float | None]:
    p99s = {
        c: _p99(cell, scenario, c)
        for c in CLASSIC
        if c in cell["scenarios"][scenario]["strategies"]
    }
    known = {c: v for c, v in p99s.items() if v is not None}
    if not known:
        return "-", None
    best = min(known, key=lambda c: known[c])
    return best, known[best]


def targets_of(results: dict[str, Any]) -> list[common.Target]:
    targets: list[common.Target] = []
    worst, where = 1.0, "every run"
    for label, cell in results["cells"].items():
        for name, scenario in cell["scenarios"].items():
            adaptive = scenario["strategies"].get("adaptive")
            if adaptive is None:
                continue
            low = min(adaptive["success_rate"]["values"], default=None)
            if low is not None and low < worst:
                worst, where = low, f"{label} {name}"
    if any(
        "adaptive" in s["strategies"]
        for c in results["cells"].values()
        for s in c["scenarios"].values()
    ):
        targets.append(common.Target("adaptive success rate, worst run", worst, ">=", 1.0, where))
    for label, cell in results["cells"].items():
        targets += _cell_targets(label, cell)
    throughput = results.get("throughput")
    if throughput and "adaptive" in throughput:
        classic = {c: median_of(throughput[c], "msgs_per_s") for c in CLASSIC if c in throughput}
        best = max(classic, key=lambda c: classic[c] or 0.0, default=None)
        if best is not None:
            value = common.ratio(median_of(throughput["adaptive"], "msgs_per_s"), classic[best])
            targets.append(
                common.Target(
                    "adaptive healthy throughput / best classic",
                    value,
                    ">=",
                    THROUGHPUT,
                    f"vs {best}",
                )
            )
    return targets


def _cell_targets(label: str, cell: dict[str, Any]) -> list[common.Target]:
    ran, out = cell["scenarios"], []
    if not all("adaptive" in s["strategies"] for s in ran.values()):
        return []
    if "healthy" in ran and "brownout" in ran:
        value = common.ratio(_p99(cell, "brownout", "adaptive"), _p99(cell, "healthy", "adaptive"))
        out.append(
            common.Target(
                f"{label} adaptive p99 brown-out / healthy", value, "<=", BROWNOUT_VS_HEALTHY
            )
        )
    if "brownout" in ran:
        shares = ran["brownout"]["strategies"]["adaptive"]["focus_share_max"]["values"]
        out.append(
            common.Target(
                f"{label} {FAULTY} share, worst 1 s window from 1 s into the "
                "brown-out (every round)",
                max(shares, default=None),
                "<=",
                FOCUS_SHARE,
            )
        )
    for name, scenario in ran.items():
        if scenario["goal"] == "report":
            continue
        best, classic = _best_classic(cell, name)
        value = common.ratio(_p99(cell, name, "adaptive"), classic)
        bound = WIN if scenario["goal"] == "win" else NO_HARM
        what = "beats" if scenario["goal"] == "win" else "no harm"
        out.append(
            common.Target(
                f"{label} {name}: adaptive p99 / best classic p99 ({what})",
                value,
                "<=",
                bound,
                f"vs {best}",
            )
        )
    return out
