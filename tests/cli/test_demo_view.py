"""Rendering of the demo: live table, plain lines, phase table, verdict (no I/O but a
recording console)."""

from __future__ import annotations

import io

from rich.console import Console

from producer.cli.demo_ledger import LedgerVerdict
from producer.cli.demo_view import (
    LiveDisplay,
    PhaseSpan,
    PlainDisplay,
    ViewContext,
    live_view,
    phase_table,
    plain_line,
    verdict_lines,
)
from producer.cli.stats import LiveStats, SendOutcome
from producer.errors import AttemptOutcome, AttemptRecord

BROKERS = ("broker-a", "broker-b", "broker-c")
CTX = ViewContext("adaptive", 400, 24, BROKERS)


def outcome(broker: str, latency_ms: float, *failed_on: str) -> SendOutcome:
    failures = tuple(
        AttemptRecord(b, 0, AttemptOutcome.CONNECT_ERROR, None, 0.5) for b in failed_on
    )
    ok = AttemptRecord(broker, 1, AttemptOutcome.OK, None, latency_ms)
    return SendOutcome(latency_ms, (*failures, ok), broker=broker)


def sample_stats() -> LiveStats:
    stats = LiveStats()
    for i in range(30):
        stats.record(outcome(BROKERS[i % 3], 1.0 + i / 10), now_ms=100 + i, phase="healthy")
    for i in range(10):
        stats.record(outcome("broker-a", 2.0, "broker-c"), now_ms=1100 + i, phase="c down")
    return stats


def render(renderable: object) -> str:
    console = Console(file=io.StringIO(), width=160, color_system=None)
    console.print(renderable)
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue()


def test_live_view_shows_every_broker_and_the_phase() -> None:
    text = render(live_view(sample_stats(), CTX, "healthy", now_ms=1500))
    for broker in BROKERS:
        assert broker in text
    assert "phase: healthy" in text
    assert "routing adaptive" in text
    assert "last 1s: 30 msg/s" in text
    assert "overall: 40 sends, 0 failed" in text
    assert "33.3%" in text


def test_plain_line_describes_the_last_complete_second() -> None:
    line = plain_line(sample_stats(), CTX, "c down", now_ms=2100)
    assert line.startswith("t=  1-2s [c down] 10 msg/s")
    assert "share a 100.0% b 0.0% c 0.0%" in line
    assert "retries/msg 1.000" in line


def test_phase_table_has_a_totals_row_and_a_row_per_broker() -> None:
    spans = [PhaseSpan("healthy", 0, 1000), PhaseSpan("c down", 1000, 2000)]
    text = render(phase_table(sample_stats(), CTX, spans))
    lines = [line for line in text.splitlines() if "broker-c" in line]
    assert len(lines) == 2
    c_down = lines[1].split()  # broker-c, sends, share, p50, p99, p999, failed tries, retried
    assert c_down[2] == "0.0%"  # no sends landed on c ...
    assert c_down[6:] == ["10", "10"]  # ... 10 attempts failed there, all retried elsewhere
    header = next(line for line in text.splitlines() if "phase / broker" in line)
    assert header.index("tries") < len(lines[1].rstrip())  # under "failed tries", not "sends"
    assert any(line.startswith(" c down") and "1.000" in line for line in text.splitlines())


def test_verdict_lines_pass_and_fail() -> None:
    base = dict(
        acknowledged=5,
        stored_unique=5,
        stored_total=6,
        missing=frozenset(),
        stored_after_failure=0,
        unexplained=frozenset(),
        unknown_fate_attempts=1,
    )
    passing = verdict_lines(LedgerVerdict(**base))  # type: ignore[arg-type]
    assert passing[0].startswith("VERDICT: PASS")
    assert any("duplicates: 1" in line for line in passing)
    failing = LedgerVerdict(**{**base, "missing": frozenset({"ID1"})})  # type: ignore[arg-type]
    lines = verdict_lines(failing)
    assert lines[0].startswith("VERDICT: FAIL")
    assert any("LOST: 1" in line and "ID1" in line for line in lines)
    failed_sends = LedgerVerdict(**{**base, "failed": {"SendTimeout": 2}})  # type: ignore[arg-type]
    lines = verdict_lines(failed_sends)
    assert lines[0].startswith("VERDICT: FAIL - 2 sends failed")
    assert "  failed sends: 2 x SendTimeout" in lines


def test_plain_display_prints_once_per_second_with_that_seconds_phase() -> None:
    out = io.StringIO()
    stats = sample_stats()
    display = PlainDisplay(stats, CTX, Console(file=out, width=200, color_system=None))
    display.start()
    updates = [(250, "healthy"), (900, "healthy"), (1000, "c down"), (1250, "c down")]
    updates += [(1500, "back"), (2000, "back"), (3000, "back")]
    for now, phase in updates:
        display.update(phase, now)
    display.stop()
    lines = [line for line in out.getvalue().splitlines() if line.startswith("t=")]
    assert [line.split("]")[0] for line in lines] == [
        "t=  0-1s [healthy",
        "t=  1-2s [c down > back",  # a second that spans two phases names both
        "t=  2-3s [back",
    ]


def test_live_display_draws_into_its_console() -> None:
    out = io.StringIO()
    console = Console(file=out, width=120, force_terminal=True, color_system=None)
    display = LiveDisplay(sample_stats(), CTX, console)
    display.start()
    display.update("healthy", 1500)
    display.stop()
    assert "broker-b" in out.getvalue()


def test_phase_table_keeps_broker_names_whole_at_80_columns() -> None:
    spans = [PhaseSpan("healthy", 0, 1000), PhaseSpan("c down", 1000, 2000)]
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(phase_table(sample_stats(), CTX, spans))
    text = console.export_text()
    for broker in CTX.brokers:
        assert broker in text  # not cut to "br…"
    assert max(len(line) for line in text.splitlines()) <= 80
