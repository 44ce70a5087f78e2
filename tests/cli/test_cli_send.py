"""``python -m producer send`` against a dev cluster started in the test (asyncio)."""

from __future__ import annotations

import io
import socket
from collections.abc import AsyncIterator

import anyio
import pytest

from producer.cli import build_parser, main
from producer.cli.send import run_send
from producer.testing import DevCluster, FaultSpec

pytestmark = pytest.mark.anyio


@pytest.fixture
async def cluster() -> AsyncIterator[DevCluster]:
    async with DevCluster(brokers=3, topics={"Orders": 4}) as c:
        yield c


async def send(*argv: str, stop: anyio.Event | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    args = build_parser().parse_args(["send", *argv])
    with anyio.fail_after(20):
        code = await run_send(args, out=out, err=err, stop=stop)
    return code, out.getvalue(), err.getvalue()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_few_messages_print_one_line_each_and_a_summary(cluster: DevCluster) -> None:
    code, out, err = await send(
        "--namesrv", cluster.namesrv_addr, "--topic", "Orders", "--count", "5",
        "--body", "hi", "--tags", "paid", "--keys", "o-1", "--keys", "o-2",
    )  # fmt: skip
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert [line.split()[:2] for line in lines[:5]] == [[f"#{i}", "SEND_OK"] for i in range(1, 6)]
    assert "Orders@broker-" in lines[0] and "msg_id=" in lines[0]
    assert "5 ok, 0 failed" in lines[5]
    assert lines[6].startswith("latency ms: p50 ")
    assert lines[7].startswith("per broker: broker-")
    assert lines[8] == "retries: 0 (0.000 per message)"
    stored = cluster.messages("Orders")
    assert len(stored) == 5
    assert {(m.body, m.tags, tuple(m.keys)) for m in stored} == {(b"hi", "paid", ("o-1", "o-2"))}
    printed_ids = {
        word.split("=")[1] for line in lines[:5] for word in line.split() if "msg_id=" in word
    }
    assert printed_ids == cluster.unique_msg_ids("Orders")


async def test_many_messages_print_progress_and_spread_over_brokers(cluster: DevCluster) -> None:
    code, out, _ = await send(
        "--namesrv", cluster.namesrv_addr, "--topic", "Orders", "--count", "1500",
        "--concurrency", "32", "--routing", "classic_4_9",
    )  # fmt: skip
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("1000/1500 done: 1000 ok, 0 failed")
    assert "1500 ok, 0 failed" in lines[1]
    assert all(f"broker-{b} " in lines[3] for b in "abc")
    assert cluster.message_count("Orders") == 1500


async def test_failed_sends_exit_1_and_are_listed_by_error(cluster: DevCluster) -> None:
    for broker in cluster.broker_names:
        await cluster.set_fault(broker, FaultSpec(error_code=13))  # MESSAGE_ILLEGAL: no retry
    code, out, _ = await send(
        "--namesrv", cluster.namesrv_addr, "--topic", "Orders", "--count", "3"
    )
    assert code == 1
    assert out.count("FAILED MessageIllegalError (fate not_stored)") == 3
    assert "0 ok, 3 failed" in out
    assert "failed: 3 x MessageIllegalError" in out


async def test_timeouts_are_reported_with_unknown_fate(cluster: DevCluster) -> None:
    # Slow answers rather than none: the broker stores at once and answers late, so the
    # producer's unregister at close costs 400 ms instead of its 3 s housekeeping timeout.
    for broker in cluster.broker_names:
        await cluster.set_fault(broker, FaultSpec(latency_ms=400))
    code, out, _ = await send(
        "--namesrv", cluster.namesrv_addr, "--topic", "Orders", "--send-timeout-ms", "300"
    )
    assert code == 1
    assert "FAILED SendTimeout (fate unknown)" in out or "FAILED RequestTimeout" in out
    assert "failed with unknown fate (may be stored): 1" in out
    assert cluster.message_count("Orders") >= 1  # it was stored: why the fate is "unknown"


async def test_unreachable_name_server_exits_2() -> None:
    code, out, err = await send("--namesrv", f"127.0.0.1:{free_port()}", "--topic", "Orders")
    assert code == 2
    assert out == ""
    assert err.startswith("error: cannot reach the name server: no name server answered")
    assert "127.0.0.1:" in err


@pytest.mark.parametrize(
    ("namesrv", "topic", "message"),
    [
        ("nohost", "Orders", "error: namesrv address 'nohost' is not 'host:port'"),
        (";", "Orders", "error: no name server address in namesrv=';'"),
        (None, "bad topic!", "error: topic must contain only ^[%|a-zA-Z0-9_-]+$"),
    ],
)
async def test_bad_values_exit_2(
    cluster: DevCluster, namesrv: str | None, topic: str, message: str
) -> None:
    code, _, err = await send("--namesrv", namesrv or cluster.namesrv_addr, "--topic", topic)
    assert code == 2
    assert err.startswith(message), err


async def test_stop_ends_early_with_the_summary_so_far(cluster: DevCluster) -> None:
    stop = anyio.Event()
    stop.set()
    code, out, err = await send(
        "--namesrv", cluster.namesrv_addr, "--topic", "Orders", "--count", "100", stop=stop
    )
    assert code == 130
    assert "sent 1 to 'Orders'" in out
    assert err == "interrupted after 1 of 100\n"


def test_main_runs_its_own_loop_and_exits_2_without_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["send", "--namesrv", f"127.0.0.1:{free_port()}", "--topic", "Orders"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach the name server" in err
    assert "Traceback" not in err
