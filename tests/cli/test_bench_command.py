"""``python -m producer bench``: dispatch to the source tree's benchmarks.

(The "not in a source tree" message cannot be reached here: the editable install puts
the repository root on ``sys.path``.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from producer.cli import benchmark_names

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "producer", "bench", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_bench_passes_arguments_to_the_benchmark() -> None:
    done = _run("throughput", "--help", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "--quick" in done.stdout


def test_bench_rejects_unknown_names_naming_the_nearest() -> None:
    done = _run("throughpt", cwd=ROOT)
    assert done.returncode == 2
    assert "no benchmark 'throughpt': did you mean 'throughput'?" in done.stderr


def test_bench_runs_every_benchmark_of_the_tree() -> None:
    """Every public module of benchmarks/ is a NAME (the README's claim), none listed twice."""
    modules = sorted(p.stem for p in (ROOT / "benchmarks").glob("[!_]*.py"))
    assert benchmark_names() == modules and "pop_drain" in modules
    done = _run("pop_drain", "--help", cwd=ROOT)  # refused before issue 46
    assert done.returncode == 0, done.stderr
    assert "usage: python -m benchmarks.pop_drain" in done.stdout
