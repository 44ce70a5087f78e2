"""Smoke test of ``python -m benchmarks.spark_read``: a small backlog read every way."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_support import help_text, run_benchmark


@pytest.mark.timeout(240)
def test_tiny_run_reads_the_whole_backlog_every_way(tmp_path: Path) -> None:
    document = run_benchmark("spark_read", "--messages 3000", tmp_path, timeout=230)
    modes = document["results"]["modes"]
    assert set(modes) == {"spark read", "push consumer", "pull consumer"}
    for figures in modes.values():
        assert figures["messages"] == 3000  # every message, none twice
        assert figures["rows_per_s"] > 0 and figures["client_cpu_us_per_msg"] > 0


def test_help() -> None:
    assert "--messages" in help_text("spark_read")
