"""Every example runs, with a small argument, and prints a good verdict as its last line
(``OK: ...``; ``FAILED: ...`` and exit status 1 when what it shows did not happen)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The argument each example runs with here: small, so the run is quick.
ARGUMENTS = {
    "timed_delivery": ["300"],  # the timed message 300 ms later
}
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.py") if p.stem != "__init__")


def test_every_example_is_run_here() -> None:
    assert sorted(ARGUMENTS) == EXAMPLES


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_example_prints_its_verdict(name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", f"examples.{name}", *ARGUMENTS.get(name, [])],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and lines and lines[-1].startswith("OK: "), (
        done.stdout + done.stderr
    )
