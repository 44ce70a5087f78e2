"""The dev cluster in its own process: ``python -m producer cluster --json ...``.

Benchmarks run the cluster as a separate process so that its CPU is not the client's:
on a 2-core machine each gets a core, and its CPU use can be read from ``/proc``. The
command prints one JSON line (``{"namesrv": ..., "brokers": {...}, "http": ...}``) once
it listens; SIGTERM stops it cleanly.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from benchmarks._common import cpu_seconds

_REPO = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 120.0  # a hang guard: a loaded machine can take 20 s and more to start it


class ClusterProcess:
    """``with ClusterProcess(brokers=1, topics={"Bench": 4}) as c: c.namesrv, c.brokers``."""

    def __init__(
        self,
        *,
        brokers: int = 1,
        topics: dict[str, int] | None = None,
        sink: bool = True,
        pull_sink: bool = False,
        http: bool = False,
        seed: int = 0,
        broker_version: str = "4.9.4",
        slaves: int = 0,
    ) -> None:
        self.command = [sys.executable, "-m", "producer", "cluster", "--json"]
        self.command += ["--brokers", str(brokers), "--namesrv-port", "0", "--seed", str(seed)]
        for topic, queues in (topics or {}).items():
            self.command += ["--topic", f"{topic}:{queues}"]
        if sink:
            self.command.append("--sink")
        if pull_sink:
            self.command.append("--pull-sink")
        if http:
            self.command += ["--http-port", "0"]
        if broker_version != "4.9.4":
            self.command += ["--broker-version", broker_version]
        if slaves:
            self.command += ["--slaves", str(slaves)]
        self.process: subprocess.Popen[str] | None = None
        self.info: dict[str, Any] = {}

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def namesrv(self) -> str:
        return str(self.info["namesrv"])

    @property
    def brokers(self) -> dict[str, str]:
        return dict(self.info["brokers"])

    @property
    def http_url(self) -> str | None:
        url = self.info.get("http")
        return None if url is None else str(url)

    def cpu_seconds(self) -> float | None:
        return cpu_seconds(self.pid)

    def __enter__(self) -> ClusterProcess:
        env = {**os.environ, "PYTHONPATH": str(_REPO)}
        self.process = subprocess.Popen(
            self.command, stdout=subprocess.PIPE, text=True, cwd=_REPO, env=env
        )
        try:
            self.info = json.loads(self._first_line())
        except BaseException:
            self.stop()
            raise
        return self

    def _first_line(self) -> str:
        assert self.process is not None and self.process.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], 0.2)
            if ready:
                line = self.process.stdout.readline()
                if line:
                    return line
            if self.process.poll() is not None:
                break
        raise RuntimeError(f"the dev cluster did not start: {' '.join(self.command)}")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """SIGTERM (the cluster shuts down cleanly), then SIGKILL after 10 s."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        finally:
            if process.stdout is not None:
                process.stdout.close()
