"""The whole suite beside two CPU-bound processes (issue 34: the tests hold on a busy
machine): ``python tests/loaded_run.py [pytest arguments]``.

Starts two processes that spin on the CPU (a 2-core machine is then fully taken), runs
``python -m pytest -q`` with the arguments given, stops the spinners, and exits with
pytest's status. Not part of ``.ci/run``: under that load the suite takes about twice as
long, beyond what CI should spend; run it before changing a test's timing.
"""

from __future__ import annotations

import subprocess
import sys

SPIN = "while True: pass"


def main(argv: list[str]) -> int:
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(2)]
    try:
        return subprocess.call([sys.executable, "-m", "pytest", "-q", *argv])
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
