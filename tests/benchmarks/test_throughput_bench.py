"""Smoke test of ``python -m benchmarks.throughput``: a tiny run of the real command.

The benchmarks run as subprocesses, exactly as documented (and so that their modules do
not load into the test process).
"""

from __future__ import annotations

import json
from pathlib import Path

from bench_support import help_text, run_benchmark, run_module


def test_tiny_run_writes_result_and_plots(tmp_path: Path) -> None:
    document = run_benchmark(
        "throughput",
        "--quick --duration 0.3 --warmup 0.1 --concurrency 1,4 --window 32"
        " --batch 4 --batch-concurrency 2",
        tmp_path / "throughput",
    )
    modes = document["results"]["modes"]
    assert set(modes) == {"await x1", "await x4", "async w32", "batch 4x2"}
    for row in modes.values():
        for side in ("sdk", "sdk_unbatched", "blaster"):
            assert row[f"{side}_msgs_per_s"] > 0
            assert row[f"{side}_cpu_us_per_msg"] > 0
        assert row["sdk_ratio"] > 0 and row["sdk_unbatched_ratio"] > 0
        assert row["sdk_cpu_ratio"] > 0 and row["sdk_unbatched_cpu_ratio"] > 0
        assert row["sdk_server_cpu"] is not None  # the sink's /proc/<pid>/stat was read
    single = document["results"]["single_inflight"]
    assert single["raw_p50_ms"] > 0 and single["sdk_p50_ms"] > 0
    names = {t["name"] for t in document["targets"]}
    assert "single-in-flight p50 vs raw round trip" in names
    assert "await x1 client CPU/msg vs blaster, batching on" in names
    assert set(document["plots"]) == {"throughput.png", "latency.png"}
    json.dumps(document)  # plain JSON all the way down
    # python -m benchmarks.report turns it into the README's Markdown
    report = run_module("benchmarks.report", "--results", str(tmp_path))
    assert "### throughput" in report and "| await x4 | SDK, batching off |" in report
    assert document["command"] in report


def test_help() -> None:
    assert "--quick" in help_text("throughput")
