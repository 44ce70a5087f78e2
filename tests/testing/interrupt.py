"""Run a Python script in a subprocess, press Ctrl-C once it prints ``ready``, and hand
back what it printed: how the life-cycle tests watch an ``asyncio.run`` program stop."""

from __future__ import annotations

import signal
import subprocess
import sys


def interrupted(script: str) -> tuple[str, str]:
    """``(stdout after the ready line, stderr)`` of ``script`` interrupted by SIGINT."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        proc.send_signal(signal.SIGINT)
        return proc.communicate(timeout=30)
    finally:
        proc.kill()  # a no-op once it has exited; never leave it running on failure


def assert_one_cancellation(err: str) -> None:
    """asyncio's own shape: the interrupted await's CancelledError, then KeyboardInterrupt -
    not a second cancellation chained on from closing the object."""
    assert err.rstrip().endswith("KeyboardInterrupt"), err
    assert err.count("CancelledError") == 1 and "cancel scope" not in err, err
