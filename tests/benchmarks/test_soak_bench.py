"""The soak's ``--quick`` run cut to 16 s (the suite's time; the default quick run is 60 s):
the real command, its checks read from its result. 16 s still holds, with seed 1's schedule,
a broker down (at ~9 s), then the name server's outage (half way, once that fault ends), and
16 memory samples for the trend (measured: 73.7 s for the 60 s run, 20.1 s for this one)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_support import help_text, run_benchmark

DURATION_S = 16


@pytest.mark.timeout(150)
def test_quick_soak_loses_nothing_hangs_nothing_and_leaks_nothing(tmp_path: Path) -> None:
    options = f"--quick --duration-s {DURATION_S} --loop asyncio"
    document = run_benchmark("soak", options, tmp_path / "soak", timeout=140)
    results = document["results"]
    assert results["duration_s"] == DURATION_S
    assert set(results["sent"]) == {"sync", "async", "oneway", "batch", "keyed"}
    # Two thirds of the sends offered, at least (each batch send acknowledges several ids).
    assert results["acknowledged"] > 2 / 3 * results["rate"] * DURATION_S
    assert results["lost_count"] == 0
    assert results["hung_count"] == 0
    assert {"down", "blackhole"} & {k for f in results["faults"] for k in f.get("fault", {})}
    assert any(f.get("namesrv") == "down" for f in results["faults"])
    unmet = [t["name"] for t in document["targets"] if not t["met"]]
    assert unmet == []
    assert document["plots"] == ["soak.png"]


def test_help() -> None:
    assert "--duration-s" in help_text("soak")
