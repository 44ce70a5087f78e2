"""``python -m producer dlq list|show|redrive`` against a dev cluster whose consumer group
dead-lettered messages (issue 15: the DLQ tool)."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

import anyio
import pytest

from producer.cli import build_parser, main
from producer.cli.dlq import run_dlq
from producer.testing import DevCluster, DevClusterThread
from tests.cli.widths import assert_fits
from tests.helpers.dead_letters import dead_letters

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture
async def cluster() -> AsyncIterator[DevCluster]:
    async with DevCluster(brokers=2, topics={"Orders": 2}) as c:
        yield c


async def dlq(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    args = build_parser().parse_args(["dlq", *argv])
    with anyio.fail_after(20):
        code = await run_dlq(args, out)
    assert_fits(out.getvalue())
    return code, out.getvalue()


async def test_list_show_and_redrive(cluster: DevCluster) -> None:
    ids = await dead_letters(cluster, [b"one", b"two", b"three"])
    where = ["--group", "cg", "--namesrv", cluster.namesrv_addr]
    code, out = await dlq("list", *where)
    assert code == 0 and out.startswith("3 message(s) in %DLQ%cg")
    for msg_id in ids:
        assert f"{msg_id}  topic=Orders  tries=1" in out  # the broker counts the last one
    code, out = await dlq("list", *where, "--limit", "1")
    assert out.startswith("1 message(s)")

    code, out = await dlq("show", *where, ids[1])
    assert code == 0 and f"msg_id: {ids[1]}" in out and "original topic: Orders" in out
    assert "  shop = 7" in out and "body (3 bytes): 'two'" in out

    before = len(cluster.messages("Orders"))
    code, out = await dlq("redrive", *where, ids[1])
    assert code == 0 and "re-driven 1 of 1" in out
    assert len(cluster.messages("Orders")) == before + 1
    first, copy = [m for m in cluster.messages("Orders") if m.uniq_key == ids[1]]  # same id
    assert copy.body == first.body == b"two"
    assert copy.reconsume_times == 0 and copy.properties["shop"] == "7"  # a fresh budget
    assert copy.properties["TAGS"] == "paid" and copy.properties["KEYS"] == "k1"
    assert "RETRY_TOPIC" not in copy.properties
    # reading changes nothing there; a re-drive adds one mark, and the letters stay
    assert len(cluster.messages("%DLQ%cg")) == 3 + 1
    code, out = await dlq("list", *where)
    assert out.startswith("3 message(s) in %DLQ%cg (1 re-driven, marked *)")
    assert [line.split()[1] for line in out.splitlines() if line.startswith("* ")] == [ids[1]]

    code, out = await dlq("redrive", *where, ids[1])  # twice: refused, nothing sent
    assert code == 2 and f"already re-driven: {ids[1]}" in out and "--again" in out
    assert len(cluster.messages("Orders")) == before + 1

    code, out = await dlq("redrive", *where, "--all")  # the two not re-driven yet
    assert code == 0 and "skipped 1 re-driven before" in out and "re-driven 2 of 2" in out
    code, out = await dlq("redrive", *where, "--all")
    assert code == 0 and "re-driven 0 of 0" in out
    assert len(cluster.messages("Orders")) == before + 3  # each dead letter once

    code, out = await dlq("redrive", *where, ids[1], "--again")  # asked for: once more
    assert code == 0 and "re-driven 1 of 1" in out
    assert len(cluster.messages("Orders")) == before + 4


async def test_bad_requests_say_what_is_wrong(cluster: DevCluster) -> None:
    ids = await dead_letters(cluster, [b"x"])
    where = ["--group", "cg", "--namesrv", cluster.namesrv_addr]
    assert await dlq("show", *where, "NOPE") == (2, "error: not in %DLQ%cg: NOPE\n")
    code, out = await dlq("redrive", *where)
    assert code == 2 and "MSG_ID" in out and "--all" in out
    code, out = await dlq("redrive", *where, ids[0], "--all")
    assert code == 2 and "not both" in out
    assert len(cluster.messages("Orders")) == 1  # nothing was sent


def test_an_empty_queue_through_main(capsys: pytest.CaptureFixture[str]) -> None:
    with DevClusterThread(brokers=1, topics={"Orders": 1}) as cluster:
        assert main(["dlq", "list", "--group", "nobody", "--namesrv", cluster.namesrv_addr]) == 0
    assert capsys.readouterr().out == "0 message(s) in %DLQ%nobody\n"
