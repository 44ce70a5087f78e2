"""Smoke test of ``python -m benchmarks.ab_throughput``: a tiny A/B of two source trees.

Tree A is a copy of this checkout's ``producer``, ``latency_fault`` and ``benchmarks``
(what the benchmark needs of a tree; a copy works in any checkout, git or not), tree B
the checkout itself. One round of the shortest throughput run both trees can make, then
the printed table must hold both trees' figures for every mode and side run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from bench_support import REPO, run_python

TREE_DIRS = ("producer", "latency_fault", "benchmarks")
THROUGHPUT = "--quick --duration 0.2 --warmup 0.05 --concurrency 1 --window 8 --batch 2"
THROUGHPUT += " --batch-concurrency 2"  # benchmarks.throughput's options: its shortest run
MODES = ("await x1", "async w8", "batch 2x2")
SDK_FIGURES = ("msg/s", "msg/s / blaster", "client us/msg", "CPU / blaster", "p50 ms")
BLASTER_FIGURES = ("msg/s", "client us/msg", "p50 ms")  # no ratio of the blaster to itself


def expected_rows() -> set[tuple[str, str, str]]:
    rows = set()
    for mode in MODES:
        rows |= {(mode, side, f) for side in ("sdk", "sdk_unbatched") for f in SDK_FIGURES}
        rows |= {(mode, "blaster", f) for f in BLASTER_FIGURES}
    return rows


def test_tiny_ab_prints_both_trees_figures(tmp_path: Path) -> None:
    tree_a = tmp_path / "a"
    for name in TREE_DIRS:
        shutil.copytree(
            REPO / name, tree_a / name, ignore=shutil.ignore_patterns("__pycache__", "results")
        )
    argv = ["-m", "benchmarks.ab_throughput", str(tree_a), str(REPO), "--rounds", "1", "--"]
    done = run_python([*argv, *THROUGHPUT.split()])
    lines = done.stdout.splitlines()
    assert f"A = {tree_a.resolve()}" in lines
    assert f"B = {REPO.resolve()}" in lines
    assert f"each: python -m benchmarks.throughput {THROUGHPUT}" in lines
    assert "| mode | side | figure | A: median (min-max) of 1 | B: median (min-max) |" in lines
    rows = {}
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 5 and cells[0] in MODES:
            rows[(cells[0], cells[1], cells[2])] = cells[3:]
    assert set(rows) == expected_rows()
    for row, figures in rows.items():
        for tree, figure in zip("AB", figures, strict=True):
            # one round: one plain figure per tree (no min-max, never "-")
            assert float(figure.replace(",", "")) > 0, (row, tree, figure)
    raw = json.loads(done.stderr.strip().splitlines()[-1])  # every run's modes, for scripts
    assert raw["trees"] == {"A": str(tree_a.resolve()), "B": str(REPO.resolve())}
    assert [len(raw["runs"][t]) for t in "AB"] == [1, 1]
    assert all(set(run[0]) == set(MODES) for run in raw["runs"].values())
