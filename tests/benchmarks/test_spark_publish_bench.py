"""Smoke test of ``python -m benchmarks.spark_publish``: a small run of every mode."""

from __future__ import annotations

from pathlib import Path

from bench_support import help_text, run_benchmark

# Enough for every mode to send to each broker (the brown-out shows on broker-b's p50);
# measured: the test 27.7 s with 1,500 rows, 24.3 s with 300 (load 2); Spark's start is the rest.
ROWS = 300


def test_tiny_run_compares_the_modes_and_reports_the_brownout(tmp_path: Path) -> None:
    options = f"--rows {ROWS} --rounds 1 --brownout-ms 100"
    document = run_benchmark("spark_publish", options, tmp_path)
    summary = document["results"]["summary"]
    assert set(summary) == {"spark arrow", "spark rows", "single"}
    for figures in summary.values():
        assert figures["rows_per_s"] > 0 and figures["failed"] == 0
    assert summary["single"]["vs_single"] == 1.0
    brokers = {b["broker"]: b for b in document["results"]["report"]["per_broker"]}
    assert sum(b["rows"] for b in brokers.values()) == ROWS
    assert brokers["broker-b"]["p50_ms"] >= 100  # the brown-out shows where it was
    assert brokers["broker-a"]["p50_ms"] < 100
    assert document["plots"] == ["rows_per_s.png", "latency.png"]


def test_help() -> None:
    assert "--brownout-ms" in help_text("spark_publish")
