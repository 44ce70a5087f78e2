"""``python -m producer``: the dispatcher, help, argument errors, the ``cluster`` command."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from producer.cli import build_parser, main


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse exits for --help and usage errors
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def test_help_lists_the_subcommands_in_a_subprocess() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "producer", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    for command in ("send", "demo", "cluster"):
        assert f"    {command} " in done.stdout


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main([], capsys)
    assert code == 0
    assert "usage: python -m producer" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["send"], "the following arguments are required: --namesrv, --topic"),
        (
            ["send", "--namesrv", "h:1", "--topic", "T", "--count", "0"],
            "--count: must be at least 1",
        ),
        (["send", "--namesrv", "h:1", "--topic", "T", "--count", "x"], "'x' is not an integer"),
        (["send", "--namesrv", "h:1", "--topic", "T", "--routing", "fast"], "invalid choice"),
        (["demo", "--rate", "-5"], "--rate: must be a positive number"),
        (["demo", "--duration-s", "nan"], "--duration-s: must be a positive number"),
        (["cluster", "--brokers", "two"], "invalid int value: 'two'"),
    ],
)
def test_bad_arguments_exit_2_with_a_clear_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_main(argv, capsys)
    assert code == 2
    assert message in err
    assert "Traceback" not in err


def test_cluster_errors_come_from_the_cluster_cli(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(["cluster", "--namesrv-port", "0", "--topic", "Orders"], capsys)
    assert code == 2
    assert "python -m producer cluster: error: topic 'Orders' is not NAME:QUEUES" in err


def test_each_subcommand_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    for command, option in [
        ("send", "--concurrency"),
        ("demo", "--no-live"),
        ("cluster", "--sink"),
    ]:
        code, out, _ = run_main([command, "--help"], capsys)
        assert code == 0
        assert option in out


def test_parser_defaults() -> None:
    demo = build_parser().parse_args(["demo"])
    assert (demo.duration_s, demo.rate, demo.routing, demo.live) == (24.0, 400.0, "adaptive", True)
    send = build_parser().parse_args(["send", "--namesrv", "a:1", "--topic", "T"])
    assert (send.count, send.concurrency, send.group, send.keys) == (1, 1, "cli-producer", None)


def test_cluster_command_runs_the_dev_cluster_until_sigterm() -> None:
    command = [sys.executable, "-m", "producer", "cluster", "--namesrv-port", "0", "--json"]
    proc = subprocess.Popen(
        [*command, "--brokers", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        info = json.loads(proc.stdout.readline())
        assert list(info["brokers"]) == ["broker-a", "broker-b"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()  # a no-op once it has exited; never leave it running on failure
        proc.communicate(timeout=10)
