"""Smoke test of ``python -m benchmarks.pop_drain``: a tiny run of the real command (a
5.x dev cluster in its own process, pull and pop drains, the consumer-killed check)."""

from __future__ import annotations

import json

from bench_support import run_python


def test_tiny_drains_and_a_killed_consumer_lose_nothing() -> None:
    options = "--backlog 300 --batches 1,8 --kill --kill-backlog 60 --kill-after 10"
    done = run_python(["-m", "benchmarks.pop_drain", *options.split()])
    results = json.loads(done.stdout)
    for mode in ("pull b1", "pop b1", "pull b8", "pop b8"):
        assert results[mode]["messages"] == 300, mode
        assert results[mode]["cpu_us_per_msg"] > 0, mode
    kill = results["kill"]
    assert kill["lost"] == 0 and kill["victim_seen"] >= 10
    # at least once: every survivor delivery is of a distinct message, and each message
    # the victim saw without acking came back (reconsumeTimes 1) after the invisible time
    assert kill["survivor_unique"] == kill["survivor_deliveries"]
    assert kill["victim_acked"] + kill["duplicates"] == kill["victim_seen"]
    if kill["duplicates"]:
        assert kill["redelivered_reconsume_times"] == [1]
        assert kill["redelivered_after_s"][0] >= 10.0  # the invisible time, 10 s
