"""Smoke test of ``python -m benchmarks.consume``: tiny runs of the real command (pull
sink windows, a dev-cluster drain, the memory mode), as subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

from bench_support import help_text, run_benchmark


def test_tiny_sink_run_measures_every_mode_against_the_raw_puller(tmp_path: Path) -> None:
    document = run_benchmark(
        "consume",
        "--quick --duration 0.3 --warmup 0.3 --batches 1,4 --listeners plain,async",
        tmp_path / "consume",
    )
    modes = document["results"]["modes"]
    kinds = ("concurrent", "orderly")
    expected = {f"{k} {li} b{b}" for k in kinds for li in ("plain", "async") for b in (1, 4)}
    assert set(modes) == {"raw pull", *expected}
    for name, row in modes.items():
        (reading,) = row["rounds"]
        assert reading["messages"] > 0, name
        assert row["cpu_us_per_msg"] > 0 and row["ratio"] > 0
        assert row["server_cpu"] is not None  # the sink's /proc/<pid>/stat was read
    assert modes["raw pull"]["ratio"] == 1.0
    names = {t["name"] for t in document["targets"]}
    assert "concurrent async b1 cpu_us_per_msg" in names
    assert "orderly async b1: concurrent / orderly msgs/s" in names
    assert document["plots"] == ["consume.png"]
    json.dumps(document)


def test_tiny_dev_cluster_drain_consumes_the_backlog_exactly(tmp_path: Path) -> None:
    document = run_benchmark(
        "consume",
        "--quick --broker dev --backlog 640 --batches 32 --listeners async --no-plots",
        tmp_path / "drain",
    )
    modes = document["results"]["modes"]
    assert document["results"]["drain"] is True
    assert modes["raw pull"]["rounds"][0]["messages"] == 640  # what was filled in
    for name in ("concurrent async b32", "orderly async b32"):
        assert modes[name]["rounds"][0]["messages"] == 640, name


def test_tiny_memory_run_samples_rss(tmp_path: Path) -> None:
    document = run_benchmark(
        "consume", "--quick --memory 3000 --samples 3 --no-plots", tmp_path / "memory"
    )
    samples = document["results"]["samples"]
    assert len(samples) == 4
    assert all(s["consumed"] >= n for s, n in zip(samples, (0, 1000, 2000, 3000), strict=True))
    assert all(s["rss_bytes"] > 0 and s["blocks"] > 0 for s in samples)
    assert all(s["traced_bytes"] is None for s in samples)  # without --tracemalloc
    assert {t["name"] for t in document["targets"]} == {
        "RSS growth after warm-up",
        "allocated blocks growth after warm-up",
        "asyncio tasks growth",
    }


def test_help() -> None:
    assert "--pull-sink" not in help_text("consume") and "--quick" in help_text("consume")
