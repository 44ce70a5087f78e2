"""Run a benchmark as ``python -m benchmarks.<name>`` and check what every one writes.

No subprocess here has a timeout of its own: how long a smoke run takes is the machine's
load, not a result. A hang is caught by the suite's one hang guard (pytest-timeout's
``timeout`` in pyproject.toml), whose failure unwinds ``subprocess.run`` and kills the child.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def run_python(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``python <argv>`` from the repository root; it must exit 0 (else the ends of what it
    printed: a benchmark's MISSED target lines are on stdout, a traceback on stderr)."""
    done = subprocess.run(
        [sys.executable, *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def run_benchmark(name: str, options: str, out: Path) -> dict[str, Any]:
    argv = [*shlex.split(options), "--out", str(out)]
    done = run_python(["-m", f"benchmarks.{name}", *argv])
    document: dict[str, Any] = json.loads((out / "result.json").read_text())
    assert document["schema"] == 1
    assert document["benchmark"] == name
    assert document["command"] == f".venv/bin/python -m benchmarks.{name} {shlex.join(argv)}"
    assert document["machine"]["cpus"] >= 1 and document["timestamp"]
    for plot in document["plots"]:
        assert (out / plot).stat().st_size > 1000
    assert "result:" in done.stdout  # the table and the file names are printed
    return document


def run_module(module: str, *argv: str) -> str:
    """``python -m <module> <argv>`` from the repository root; its stdout."""
    done = subprocess.run(
        [sys.executable, "-m", module, *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def help_text(name: str) -> str:
    return run_module(f"benchmarks.{name}", "--help")
