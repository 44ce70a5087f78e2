"""Smoke test of ``python -m benchmarks.send_cost``: tiny runs of the real command (the
CPU run, ``--count`` and ``--loopback``), each printing one JSON line with ``--json``.

The benchmark runs as a subprocess, exactly as documented (and so that its modules do
not load into the test process).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from bench_support import help_text, run_python

from producer.testing import DevClusterThread

TOPIC = "BenchTopic"  # the topic send_cost sends to
TINY = ("--json", "--sends", "200", "--concurrency", "1,4")
MODES = {"await x1", "await x4"}
SDK_SIDES = {"sdk", "sdk_unbatched"}
COUNTERS = {"iterations", "call_soon", "call_at", "timer_cancels", "futures", "tasks", "writes"}


def send_cost(*argv: str) -> dict[str, Any]:
    """``python -m benchmarks.send_cost <argv>`` from the repository root: its JSON line."""
    done = run_python(["-m", "benchmarks.send_cost", *argv])
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def assert_sdk_rows(result: dict[str, Any], sides: set[str]) -> None:
    assert set(result) == MODES
    for mode, row in result.items():
        assert set(row) == sides, mode
        for side in sides:
            assert row[side]["cpu_us_per_msg"] > 0, (mode, side)
            assert row[side]["msgs_per_s"] > 0, (mode, side)
        for side in SDK_SIDES:
            assert row[side]["failed"] == 0, (mode, side)


def test_cpu_run_measures_both_sdk_sides_and_the_blaster() -> None:
    result = send_cost(*TINY, "--blaster-s", "0.2")
    assert_sdk_rows(result, SDK_SIDES | {"blaster"})
    counted = [
        (mode, side) for mode, row in result.items() for side in row if "per_send" in row[side]
    ]
    assert counted == []  # counting is --count's alone


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_count_run_reports_the_loop_work_per_send(loop: str) -> None:
    result = send_cost(*TINY, "--count", "--loop", loop)
    assert_sdk_rows(result, SDK_SIDES)  # no blaster: counting reports no CPU race
    for mode, row in result.items():
        for side in SDK_SIDES:
            per_send = row[side]["per_send"]
            assert set(per_send) == COUNTERS, (mode, side)
            # each send makes at least a future and a callback, and leaves in some write
            assert per_send["writes"] > 0 and per_send["futures"] > 0, (mode, side)
            assert per_send["call_soon"] > 0, (mode, side)
            if loop == "asyncio":  # uvloop has no hook for its iterations
                assert per_send["iterations"] > 0, (mode, side)
    # A lone send, batching on or off: its answer's future, one write, and one callback
    # (its caller's wake-up) - no flush behind its frame, no batching turn, no task.
    for side in SDK_SIDES:
        lone = result["await x1"][side]["per_send"]
        assert lone["call_soon"] < 1.1 and lone["futures"] < 1.1, (side, lone)
        assert lone["tasks"] < 0.05 and 0.9 < lone["writes"] < 1.1, (side, lone)  # upkeep: rare


def test_loopback_run_measures_the_sdk_sides_with_the_network_out() -> None:
    with DevClusterThread(brokers=1, topics={TOPIC: 4}, sink=True) as cluster:
        result = send_cost(*TINY, "--loopback", "--namesrv", cluster.namesrv_addr)
        reached = cluster.message_count(TOPIC)
    assert_sdk_rows(result, SDK_SIDES)
    # Only each producer's first send (route and connection) reached the broker: every
    # measured send was answered in-process.
    assert reached == 2


def test_help() -> None:
    usage = help_text("send_cost").split("\n\n")[0]  # the usage lines, not the docstring
    for option in ("[--count]", "[--loopback]", "[--json]", "[--ab TREE_A TREE_B]"):
        assert option in usage
