"""Smoke test of ``python -m benchmarks.faults``: two short scenarios, every strategy, each
in a worker process of its own; and the targets computed from a made-up result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench_support import help_text, run_benchmark

from benchmarks._faults_targets import targets_of

STRATEGIES = {"off", "classic_4_9", "classic_5", "adaptive"}


def test_tiny_run_writes_result_and_plots(tmp_path: Path) -> None:
    document = run_benchmark(
        "faults",
        "--quick --window 1.0 --warmup 0.3 --rates 100 --scenario healthy --scenario brownout",
        tmp_path,
    )
    results = document["results"]
    assert results["throughput"] is None  # not measured: no 'max' rate asked for
    cell = results["cells"]["100/async"]
    assert cell["rate"] == 100 and cell["load"] == "async"
    assert set(cell["scenarios"]) == {"healthy", "brownout"}
    for scenario in cell["scenarios"].values():
        assert set(scenario["strategies"]) == STRATEGIES
        for row in scenario["strategies"].values():
            assert row["rounds"] == 1
            assert row["success_rate"]["median"] == 1.0
            assert row["p99_ms"]["median"] > 0
            assert row["client_cpu_us_per_msg"]["median"] > 0
            assert abs(sum(row["attempt_share"].values()) - 1.0) < 1e-9
            assert len(row["timeline"]["t"]) == len(row["timeline"]["p99_ms"])
    # under the brown-out, classic 4.9 keeps a third of the load on the slow broker
    brownout = cell["scenarios"]["brownout"]["strategies"]["classic_4_9"]
    assert brownout["p99_ms"]["median"] >= 290
    names = {t["name"] for t in document["targets"]}
    assert "100/async adaptive p99 brown-out / healthy" in names
    assert set(document["plots"]) == {
        "faults_100_async_summary.png",
        "faults_100_async_brownout.png",
    }


def _row(p99: float, share_max: float = 0.0, success: float = 1.0) -> dict[str, Any]:
    def figure(value: float) -> dict[str, Any]:
        return {"median": value, "spread": [value, value], "values": [value]}

    return {
        "p99_ms": figure(p99),
        "success_rate": figure(success),
        "focus_share_max": figure(share_max),
        "msgs_per_s": figure(1000.0),
    }


def test_targets_follow_the_issue() -> None:
    def scenario(goal: str, adaptive: dict[str, Any], classic_5: float) -> dict[str, Any]:
        strategies = {
            "adaptive": adaptive,
            "classic_4_9": _row(900.0),
            "classic_5": _row(classic_5),
        }
        return {"goal": goal, "strategies": strategies}

    results = {
        "throughput": None,
        "cells": {
            "300/async": {
                "scenarios": {
                    "healthy": scenario("no_harm", _row(2.0), 2.0),
                    "brownout": scenario("win", _row(2.9, share_max=0.004), 300.0),
                    "errors": scenario("no_harm", _row(2.1, success=0.999), 2.0),
                }
            }
        },
    }
    met = {t.name: (t.value, t.met) for t in targets_of(results)}
    assert met["adaptive success rate, worst run"] == (0.999, False)
    assert met["300/async adaptive p99 brown-out / healthy"] == (1.45, True)
    assert met["300/async brownout: adaptive p99 / best classic p99 (beats)"][1]
    assert met["300/async healthy: adaptive p99 / best classic p99 (no harm)"] == (1.0, True)
    errors = met["300/async errors: adaptive p99 / best classic p99 (no harm)"]
    assert errors[0] == 1.05 and not errors[1]  # 5% worse than classic_5: harm
    share = "300/async broker-b share, worst 1 s window from 1 s into the brown-out (every round)"
    assert met[share] == (0.004, True)


def test_help() -> None:
    text = help_text("faults")
    assert "--scenario" in text and "--rates" in text and "--loads" in text


def test_failover_run_kills_a_replicated_master_and_reports_it(tmp_path: Path) -> None:
    document = run_benchmark(
        "faults",
        "--failover --quick --window 1.0 --warmup 0.5 --failover-rate 100 --failover-drain 1",
        tmp_path,
    )
    results = document["results"]
    (run,) = results["rounds"]
    assert run["acked"] > 0 and run["failed"] == 0  # broker-b takes the sends
    assert run["p99_before_ms"] > 0 and run["p99_around_ms"] > 0
    assert results["figures"]["acked"]["values"] == [run["acked"]]
    assert results["unread_total"] == run["unread"]
    assert results["slave_never_read"] == (run["slave_read_s"] is None)
    targets = {t["name"]: t for t in document["targets"]}
    unread = targets["failover: acknowledged messages unread after the drain (all rounds)"]
    assert unread["value"] == run["unread"] and unread["met"] == (run["unread"] == 0)
    assert document["plots"] == ["faults_failover.png"]
