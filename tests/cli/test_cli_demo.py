"""``python -m producer demo``: a short real run, in process and as a subprocess."""

from __future__ import annotations

import asyncio
import io
import signal
import subprocess
import sys

import anyio
import pytest

from producer.cli import build_parser
from producer.cli.demo import build_timeline, run_demo
from producer.cli.demo_failover import verdict
from producer.cli.failover import FailoverReport
from producer.testing import FaultSpec
from tests.cli.widths import assert_fits

pytestmark = pytest.mark.anyio


def test_timeline_scales_with_the_duration() -> None:
    timeline = build_timeline(24)
    assert [p.seconds for p in timeline] == [6, 6, 6, 6]
    assert timeline[0].faults == ()
    assert timeline[1].faults == (("broker-b", FaultSpec(latency_ms=300)),)
    assert timeline[2].faults == (("broker-b", FaultSpec()), ("broker-c", FaultSpec(down=True)))
    assert timeline[3].faults == (("broker-c", FaultSpec()),)
    assert sum(p.seconds for p in build_timeline(4)) == 4


async def test_short_demo_passes_and_leaves_no_task_behind() -> None:
    out = io.StringIO()
    args = build_parser().parse_args(["demo", "--duration-s", "4", "--rate", "200", "--no-live"])
    before = asyncio.all_tasks()
    with anyio.fail_after(20):
        code = await run_demo(args, out=out)
    assert asyncio.all_tasks() == before
    text = out.getvalue()
    assert code == 0, text
    assert "VERDICT: PASS - nothing lost" in text
    routing = " ".join(text[text.index("ROUTING:") :].split())  # the line may be wrapped
    assert routing.startswith("ROUTING: broker-b was slowed by 300 ms; it stored ")
    assert "adaptive routing may send it" in routing
    per_second = [line for line in text.splitlines() if line.startswith("t=")]
    assert len(per_second) >= 3
    for phase in ("healthy", "broker-b brown-out", "broker-c down", "broker-c back"):
        assert phase in text


async def test_stop_ends_the_demo_early_with_a_summary() -> None:
    out, stop = io.StringIO(), anyio.Event()
    stop.set()
    args = build_parser().parse_args(["demo", "--no-live"])
    with anyio.fail_after(10):
        code = await run_demo(args, out=out, stop=stop)
    assert code == 130
    text = out.getvalue()
    assert "interrupted after" in text
    assert "VERDICT: PASS" in text
    assert "broker-b brown-out" not in text  # the timeline stopped in its first phase


def test_demo_subprocess_prints_plain_lines_when_piped() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "producer", "demo", "--duration-s", "2", "--rate", "100"],
        capture_output=True,
        text=True,
    )  # no timeout: the suite's hang guard (pyproject's pytest-timeout) stops a hang
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("t=  0-1s [healthy")  # + "> broker-b ..." when seen
    assert "VERDICT: PASS" in done.stdout
    assert done.stderr == ""
    assert_fits(done.stdout)


def test_ctrl_c_stops_the_demo_with_the_summary_so_far() -> None:
    command = [sys.executable, "-m", "producer", "demo", "--duration-s", "60", "--no-live"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("t=  0-1s [healthy]")
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=15)
    finally:
        proc.kill()
    assert proc.returncode == 130, rest + err
    assert "interrupted after" in rest
    assert "VERDICT: PASS" in rest
    assert "Traceback" not in err


async def test_failover_demo_kills_a_master_and_reports_each_figure() -> None:
    out = io.StringIO()
    args = build_parser().parse_args(["demo", "--failover", "--duration-s", "2", "--rate", "100"])
    with anyio.fail_after(30):
        code = await run_demo(args, out=out)
    text = " ".join(out.getvalue().split())  # lines may be wrapped
    phases = [
        line.split("s ", 1)[1] for line in out.getvalue().splitlines() if line.startswith("t=")
    ]
    assert phases[1:] == ["broker-a's master killed", "broker-a's master restarted; draining"]
    sent = int(text.split("sends: ")[1].split(" acknowledged")[0])
    assert sent > 0 and f"sends: {sent} acknowledged, 0 failed" in text  # broker-b takes them
    assert "send p99: before the kill " in text and " ms, in the 5 s after it " in text
    assert "slave first served a pull with messages: " in text
    assert "broker-a after the kill: replication orphaned, master alive False, slave " in text
    unread = int(text.split("of draining: ")[1].split(" acknowledged")[0])
    # the exit status is the verdict's: 0 only when every acknowledged message was read
    assert (code, "nothing lost" in text) == ((0, True) if unread == 0 else (1, False))


def test_failover_verdict_fails_on_an_unread_acknowledged_message() -> None:
    assert verdict(FailoverReport(acked=10, unread=0)) == (
        "VERDICT: every acknowledged message was read: nothing lost",
        0,
    )
    text, code = verdict(FailoverReport(acked=10, unread=3, drain_s=4.0))
    assert (text, code) == (
        "VERDICT: 3 acknowledged message(s) not read within 4.0 s of the master's return",
        1,
    )
