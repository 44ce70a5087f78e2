"""Smoke test of ``python -m benchmarks.memory``: a few thousand sends, both modes."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_support import help_text, run_benchmark


@pytest.mark.parametrize("mode", ["async", "await"])
def test_tiny_run_writes_result_and_plot(tmp_path: Path, mode: str) -> None:
    document = run_benchmark(
        "memory", f"--sends 4000 --samples 4 --window 200 --mode {mode}", tmp_path
    )
    samples = document["results"]["samples"]
    assert [s["sends"] for s in samples] == [0, 1000, 2000, 3000, 4000]
    for s in samples:
        assert s["rss_bytes"] > 0 and s["traced_bytes"] > 0
        assert s["in_flight"] == 0
    growth = document["results"]["growth"]
    assert growth["from_sends"] == 1000 and growth["to_sends"] == 4000
    assert growth["tasks_delta"] <= 0 and growth["connections_delta"] <= 0
    names = {t["name"] for t in document["targets"]}
    assert "traced memory growth after warm-up" in names
    assert document["plots"] == ["memory.png"]


def test_help() -> None:
    assert "--no-tracemalloc" in help_text("memory")
