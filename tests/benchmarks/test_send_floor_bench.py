"""Smoke test of ``python -m benchmarks.send_floor``: a tiny run of the real command."""

from __future__ import annotations

from bench_support import help_text, run_python

SIDES = ("await floor", "await floor + 1 callback", "lone-send floor", "Producer.send")


def test_tiny_run_prints_every_side_per_window() -> None:
    done = run_python(["-m", "benchmarks.send_floor", "--sends", "200", "--windows", "2"])
    lines = done.stdout.splitlines()
    assert lines[0] == "client CPU us per send, one at a time, 2 window(s) of 200"
    rows = {}
    for line in lines[1:]:
        label, _, figures = line.rpartition("  ")
        rows[label.strip()] = [float(f) for f in figures.split()]
    assert set(rows) == set(SIDES), rows
    for label, values in rows.items():
        assert len(values) == 2 and all(v > 0 for v in values), (label, values)


def test_help() -> None:
    usage = help_text("send_floor").split("\n\n")[0]
    for option in ("[--sends SENDS]", "[--windows WINDOWS]", "[--body BODY]", "[--loop"):
        assert option in usage
