"""Smoke test of ``python -m benchmarks.spark_read``: a small backlog read every way."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench_support import help_text, run_benchmark

from benchmarks import _common as common
from benchmarks.spark_read import tree_cpu_seconds

BURN = """
import sys, time
began = time.process_time()
while time.process_time() - began < 0.2:
    pass
print("burnt", flush=True)
sys.stdin.read()
"""


def test_tiny_run_reads_the_whole_backlog_every_way(tmp_path: Path) -> None:
    document = run_benchmark("spark_read", "--messages 3000", tmp_path)
    modes = document["results"]["modes"]
    assert set(modes) == {"spark read", "push consumer", "pull consumer"}
    for figures in modes.values():
        assert figures["messages"] == 3000  # every message, none twice
        assert figures["rows_per_s"] > 0 and figures["client_cpu_us_per_msg"] > 0


def test_help() -> None:
    assert "--messages" in help_text("spark_read")


def test_the_clusters_cpu_is_not_counted_as_sparks() -> None:
    """The cluster is a child of the benchmark, as Spark's JVM is: its CPU is the broker's."""
    child = subprocess.Popen(
        [sys.executable, "-c", BURN], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "burnt\n"
        burnt = common.cpu_seconds(child.pid) or 0.0  # blocked on stdin from here on
        mine = common.cpu_seconds() or 0.0
        counted = tree_cpu_seconds(os.getpid(), leave_out=-1)
        left_out = tree_cpu_seconds(os.getpid(), leave_out=child.pid)
        my_share = (common.cpu_seconds() or 0.0) - mine  # what this process used meanwhile
    finally:
        child.communicate("")
    assert burnt >= 0.2
    # The child's CPU, less what this process added between the two readings (1e-9: the
    # clock ticks are exact, their float differences not quite).
    assert counted - left_out + 1e-9 >= burnt - my_share
