"""Broadcasting: every member consumes every message, failures are not retried, and the
offsets live in a local file per member (Java's LocalFileOffsetStore), never on the
broker (issue 15, docs/consuming.md 2.2)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from producer.consumer import ConsumeStatus, PushConsumer, ReceivedMessage
from producer.errors import InvalidOptionError
from producer.testing import DevClusterThread
from tests.helpers.push import FAST, FAST_LEVELS, publish, until

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=2, topics={"Orders": 2}, delay_levels=FAST_LEVELS) as c:
        yield c


def member(
    cluster: DevClusterThread, name: str, directory: Path, seen: list[bytes]
) -> PushConsumer:
    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        seen.extend(m.body for m in messages)
        return (
            ConsumeStatus.RECONSUME_LATER if b"bad" in messages[0].body else ConsumeStatus.SUCCESS
        )

    c = PushConsumer(
        "bg",
        cluster.namesrv_addr,
        listener=listener,
        model="broadcasting",
        consume_from="first",
        instance_name=name,
        offset_store_dir=directory,
        **FAST,
    )
    c.subscribe("Orders")
    return c


async def test_every_member_gets_everything_and_resumes_from_its_own_file(
    cluster: DevClusterThread, tmp_path: Path
) -> None:
    await publish(cluster, [b"m1", b"bad", b"m3"])
    a_seen: list[bytes] = []
    b_seen: list[bytes] = []
    async with member(cluster, "a", tmp_path, a_seen) as a, member(cluster, "b", tmp_path, b_seen):
        await until(lambda: len(a_seen) == 3 and len(b_seen) == 3)
        client_a = a.client_id
    assert sorted(a_seen) == sorted(b_seen) == [b"bad", b"m1", b"m3"]  # "bad" not retried
    assert cluster.messages("%RETRY%bg") == []
    for broker in cluster.broker_names:
        assert not any("bg" in key for key in cluster.consumer_offsets(broker))  # none stored
    stored = json.loads((tmp_path / client_a / "bg" / "offsets.json").read_text())
    assert sum(e["offset"] for e in stored["offsets"] if e["topic"] == "Orders") == 3

    await publish(cluster, [b"m4"])
    again: list[bytes] = []
    async with member(cluster, "a", tmp_path, again):
        await until(lambda: again == [b"m4"])  # only what came after its saved offsets


async def test_a_damaged_offsets_file_names_itself(
    cluster: DevClusterThread, tmp_path: Path
) -> None:
    consumer = member(cluster, "a", tmp_path, [])
    path = tmp_path / consumer.client_id / "bg" / "offsets.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    await publish(cluster, [b"x"])
    with pytest.raises(InvalidOptionError, match=r"offsets\.json is not an offsets file"):
        async with consumer:
            pass
