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
        [*command, "--brokers", "2", "--delay-levels", "1s 200ms 2m"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        info = json.loads(proc.stdout.readline())
        assert list(info["brokers"]) == ["broker-a", "broker-b"]
        assert info["delay_levels_ms"] == [1000, 200, 120_000]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()  # a no-op once it has exited; never leave it running on failure
        proc.communicate(timeout=10)


def closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    "argv",
    [
        ["dlq", "list", "--group", "g"],
        ["dlq", "show", "--group", "g", "ID1"],
        ["dlq", "redrive", "--group", "g", "--all"],
        ["send", "--topic", "T"],
    ],
    ids=["dlq-list", "dlq-show", "dlq-redrive", "send"],
)
def test_an_unreachable_name_server_is_one_line_and_exit_2(argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "producer", *argv, "--namesrv", f"127.0.0.1:{closed_port()}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "name server" in lines[0]


@pytest.mark.parametrize("command", ["dlq", "consume-demo"])
def test_help_texts_show_rocketmq_topic_prefixes_as_written(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = run_main([command, "--help"], capsys)
    assert "%%" not in out and ("%DLQ%" in out or "%RETRY%" in out)


def test_dlq_show_usage_requires_a_message_id(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(["dlq", "show", "--group", "g", "--namesrv", "h:1"], capsys)
    assert code == 2
    assert "dlq show [-h] --group G --namesrv ADDR MSG_ID [MSG_ID ...]" in " ".join(err.split())
    assert "the following arguments are required: MSG_ID" in err


def test_version_names_the_package(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(["--version"], capsys)
    assert code == 0 and out.startswith("rocketmq-aio-producer ")


@pytest.mark.parametrize(
    ("argv", "typo", "nearest"),
    [
        (["send", "--namesrv", "127.0.0.1:1", "--topic", "T", "--cout", "3"], "--cout", "--count"),
        (["send", "--namesrv", "127.0.0.1:1", "--topic", "T", "--bdy=x"], "--bdy", "--body"),
        (["cluster", "--topc", "T:2"], "--topc", "--topic"),
        (["--vrsion"], "--vrsion", "--version"),
    ],
)
def test_a_mistyped_flag_names_the_nearest_one(
    argv: list[str], typo: str, nearest: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_main(argv, capsys)
    assert code == 2
    assert f"got an unknown option {typo!r}: did you mean {nearest!r}?" in err, err
