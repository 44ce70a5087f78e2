"""The latency and trace-cost benchmarks run end to end and report what they measure
(the figures themselves are the benchmarks' business, not a test's)."""

from __future__ import annotations

import re

from tests.benchmarks.bench_support import run_python


def test_tiny_latency_run_measures_the_sdk_and_the_raw_puller() -> None:
    done = run_python(
        ["-m", "benchmarks.consume_latency", "--rates", "100", "--seconds", "2", "--rounds", "1"],
    )
    for mode in ("sdk", "raw"):
        line = next(ln for ln in done.stdout.splitlines() if ln.strip().startswith(mode))
        count = int(re.search(r"\(n (\d+)\)", line).group(1))  # type: ignore[union-attr]
        assert count >= 100, line  # every message after the warm-up second was seen


def test_tiny_trace_cost_run_compares_off_and_on() -> None:
    done = run_python(
        ["-m", "benchmarks.trace_cost", "--rounds", "1", "--sends", "300", "--concurrency", "1"],
    )
    assert re.search(r"cpu_us_per_msg\s+off [\d.]+ .* on [\d.]+ .* on/off [\d.]+x", done.stdout)
