"""The ``rocketmq`` source and sink from a virtual environment that is not activated.

A user runs ``.venv/bin/python job.py``: no ``PYSPARK_*`` is set and the first ``python3``
on ``PATH`` is not the driver's interpreter (here a stand-in that cannot run anything), so
every Python process Spark starts for the source (planning, reading, writing) must run the
driver's interpreter (``register`` points local mode at it before registering).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_source_and_sink_run_from_an_unactivated_venv(tmp_path: Path) -> None:
    wrong = tmp_path / "python3"
    wrong.write_text("#!/bin/sh\necho 'not the driver interpreter' >&2\nexit 3\n")
    wrong.chmod(0o755)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_") and k != "VIRTUAL_ENV"
    }
    env["PATH"] = f"{tmp_path}{os.pathsep}{env.get('PATH', '')}"
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    script = ROOT / "tests" / "spark" / "unactivated_job.py"
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == "OK a,b", done.stdout[-2000:]
