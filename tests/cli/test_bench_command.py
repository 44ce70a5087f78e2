"""``python -m producer bench``: dispatch to the source tree's benchmarks.

(The "not in a source tree" message cannot be reached here: the editable install puts
the repository root on ``sys.path``.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


def test_bench_rejects_unknown_names() -> None:
    done = _run("nonsense", cwd=ROOT)
    assert done.returncode == 2
    assert "invalid choice" in done.stderr
