"""Every script in ``examples/`` runs as the README shows it and ends well, so none rots.

A script ends with a line starting ``OK``; a pytest example (``examples/test_*.py``) must
pass under pytest. New examples are picked up by the glob: none can be forgotten.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Examples with a test of their own that checks more than an OK line (and shares the
#: test run's Spark session instead of starting a JVM of its own).
TESTED_ELSEWHERE = {"spark_pipeline": "tests/spark/test_pipeline_example.py"}
EXAMPLES = sorted(
    p
    for p in (ROOT / "examples").glob("*.py")
    if p.name != "__init__.py" and p.stem not in TESTED_ELSEWHERE
)
# Arguments that make a script quicker here than its default run (README shows that one).
ARGUMENTS = {"timed_delivery": ["300"]}  # the timed message 300 ms after the others


def command(example: Path) -> list[str]:
    if example.name.startswith("test_"):
        return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(example)]
    return [sys.executable, "-m", f"examples.{example.stem}", *ARGUMENTS.get(example.stem, [])]


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_the_example_runs(example: Path, tmp_path: Path) -> None:
    # As a user runs them: no PYSPARK_PYTHON, and a python3 on PATH that is not this
    # interpreter (a virtual environment used without activating it): Spark's workers
    # must run the driver's interpreter (producer/spark/_workers.py), not PATH's.
    wrong = tmp_path / "python3"
    wrong.write_text("#!/bin/sh\necho 'not the driver interpreter' >&2\nexit 3\n")
    wrong.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env["PATH"] = f"{tmp_path}{os.pathsep}{env.get('PATH', '')}"
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    done = subprocess.run(command(example), cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "[Stage" not in done.stdout + done.stderr  # Spark's progress bars amid the output
    if not example.name.startswith("test_"):
        assert done.stdout.splitlines()[-1].startswith("OK"), done.stdout[-2000:]


def test_there_are_examples_and_each_is_run_somewhere() -> None:
    assert len(EXAMPLES) >= 6
    for name, test in TESTED_ELSEWHERE.items():
        assert f"examples.{name}" in (ROOT / test).read_text(), (name, test)
