"""The soak's ``--quick`` run (60 s): the real command, its checks read from its result."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_support import help_text, run_benchmark


@pytest.mark.timeout(150)
def test_quick_soak_loses_nothing_hangs_nothing_and_leaks_nothing(tmp_path: Path) -> None:
    document = run_benchmark("soak", "--quick --loop asyncio", tmp_path / "soak", timeout=140)
    results = document["results"]
    assert results["duration_s"] == 60
    assert set(results["sent"]) == {"sync", "async", "oneway", "batch", "keyed"}
    assert results["acknowledged"] > 10_000 and results["lost_count"] == 0
    assert results["hung_count"] == 0
    assert {"down", "blackhole"} & {k for f in results["faults"] for k in f.get("fault", {})}
    assert any(f.get("namesrv") == "down" for f in results["faults"])
    unmet = [t["name"] for t in document["targets"] if not t["met"]]
    assert unmet == []
    assert document["plots"] == ["soak.png"]


def test_help() -> None:
    assert "--duration-s" in help_text("soak")
