"""Before / after: ``benchmarks.throughput`` of two source trees, interleaved.

Each round runs the throughput benchmark once in tree A and once in tree B, as separate
processes, alternating which goes first; every figure is the median over rounds with its
min-max. Both trees must hold this repository's ``benchmarks/`` (copy it into an older
checkout: only the SDK under test differs)::

    git archive BASE | tar -x -C /tmp/base && cp -r benchmarks /tmp/base/
    python -m benchmarks.ab_throughput /tmp/base . --rounds 3 -- --quick
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

#: (key suffix, label, digits) of each figure compared, per side.
FIGURES = (
    ("msgs_per_s", "msg/s", 0),
    ("ratio", "msg/s / blaster", 3),
    ("cpu_us_per_msg", "client us/msg", 1),
    ("cpu_ratio", "CPU / blaster", 2),
    ("p50_ms", "p50 ms", 3),
)
SIDES = ("sdk", "sdk_unbatched", "blaster")


def run_tree(tree: str, extra: list[str], out: Path) -> dict[str, Any]:
    argv = [sys.executable, "-m", "benchmarks.throughput", "--no-plots", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": tree}
    subprocess.run(argv + extra, cwd=tree, env=env, check=True, capture_output=True)
    document = json.loads((out / "result.json").read_text(encoding="utf-8"))
    return dict(document["results"]["modes"])


def cell(values: list[float], digits: int) -> str:
    if not values:
        return "-"
    median = statistics.median(values)
    if len(values) == 1:
        return f"{median:,.{digits}f}"
    return f"{median:,.{digits}f} ({min(values):,.{digits}f}-{max(values):,.{digits}f})"


def table(runs: dict[str, list[dict[str, Any]]], rounds: int) -> list[str]:
    lines = [
        f"| mode | side | figure | A: median (min-max) of {rounds} | B: median (min-max) |",
        "|---|---|---|--:|--:|",
    ]
    for mode, row in runs["A"][0].items():
        for side in SIDES:
            if f"{side}_msgs_per_s" not in row:
                continue
            for suffix, label, digits in FIGURES:
                key = f"{side}_{suffix}"
                cells = [
                    cell([r[mode][key] for r in runs[t] if r[mode].get(key) is not None], digits)
                    for t in "AB"
                ]
                if cells != ["-", "-"]:
                    lines.append(f"| {mode} | {side} | {label} | {cells[0]} | {cells[1]} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ab_throughput", description=__doc__)
    parser.add_argument("tree_a")
    parser.add_argument("tree_b")
    parser.add_argument("--rounds", type=int, default=3)
    args, extra = parser.parse_known_args(argv)  # the rest: benchmarks.throughput's options
    args.extra = [a for a in extra if a != "--"]
    trees = {"A": str(Path(args.tree_a).resolve()), "B": str(Path(args.tree_b).resolve())}
    runs: dict[str, list[dict[str, Any]]] = {"A": [], "B": []}
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(args.rounds):
            for name in "AB" if n % 2 == 0 else "BA":
                out = Path(tmp) / f"{name}{n}"
                runs[name].append(run_tree(trees[name], args.extra, out))
                print(f"round {n + 1}: {name} done", file=sys.stderr)
    extra = " ".join(args.extra)
    print(f"A = {trees['A']}\nB = {trees['B']}\neach: python -m benchmarks.throughput {extra}\n")
    print("\n".join(table(runs, args.rounds)))
    print(json.dumps({"trees": trees, "runs": runs}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
