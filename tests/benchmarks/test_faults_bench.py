"""Smoke test of ``python -m benchmarks.faults``: two short scenarios, every strategy."""

from __future__ import annotations

from pathlib import Path

from bench_support import help_text, run_benchmark

STRATEGIES = {"off", "classic_4_9", "classic_5", "adaptive"}


def test_tiny_run_writes_result_and_plots(tmp_path: Path) -> None:
    document = run_benchmark(
        "faults",
        "--quick --window 1.5 --warmup 0.5 --throughput-seconds 0.3 --rate 100"
        " --scenario healthy --scenario brownout",
        tmp_path,
    )
    results = document["results"]
    assert set(results["scenarios"]) == {"healthy", "brownout"}
    assert set(results["healthy_throughput"]) == STRATEGIES
    for scenario in results["scenarios"].values():
        assert set(scenario["strategies"]) == STRATEGIES
        for row in scenario["strategies"].values():
            assert row["sent"] > 50
            assert row["success_rate"] == 1.0
            assert row["latency"]["p99_ms"] > 0
            assert abs(sum(row["attempt_share"].values()) - 1.0) < 1e-9
            assert len(row["timeline"]["t"]) == len(row["timeline"]["p99_ms"])
    # under the brown-out, classic 4.9 keeps a third of the load on the slow broker
    brownout = results["scenarios"]["brownout"]["strategies"]["classic_4_9"]
    assert brownout["latency"]["p99_ms"] >= 290
    names = {t["name"] for t in document["targets"]}
    assert "adaptive p99 brown-out / healthy" in names
    assert set(document["plots"]) == {
        "faults_healthy.png",
        "faults_brownout.png",
        "faults_summary.png",
    }


def test_help() -> None:
    assert "--scenario" in help_text("faults")
