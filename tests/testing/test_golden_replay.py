"""Replay the official Java client's recorded sessions against the dev cluster.

Every client->server frame of ``golden/sessions/java-json`` and then ``java-rocketmq`` (the
capture ran them in that order against the same brokers) is written, byte for byte, to
the matching server; each answer is compared with the real 4.9.4 server's: code, flag,
serialize type, ext field names, remark, and the values too, with the capture's broker
addresses (127.0.0.2:10911 / :10921) swapped for the dev cluster's. Route bodies must
match byte for byte, and offset message ids exactly, commit-log offsets included.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_decoder import decode_frame
from producer._remoting.message_codec import make_offset_msg_id
from producer.testing import DevCluster
from tests.helpers.loops import anyio_backend  # noqa: F401 - asyncio and uvloop
from tests.protocol.golden import golden_dir
from tests.testing.rawclient import RawClient

pytestmark = pytest.mark.anyio


SESSIONS = golden_dir() / "sessions"
CAPTURE_ADDRS = {"broker-a": "127.0.0.2:10911", "broker-b": "127.0.0.2:10921"}


def golden_cluster() -> DevCluster:
    """Configured like the capture's name server and two brokers."""
    cluster = DevCluster(brokers=2, auto_create_topic={"broker-a"})
    cluster.add_topic("GoldenTopic", 4, brokers=["broker-a"])
    cluster.add_topic("GoldenReadOnlyTopic", 4, perm=4, brokers=["broker-a"])
    cluster.add_topic("GoldenTopicB", 2, brokers=["broker-b"])
    cluster.add_topic("GoldenTwoBrokerTopic", 2)
    return cluster


def load_session(run: str) -> list[dict[str, Any]]:
    lines = (SESSIONS / run / "frames.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


class Translator:
    """Maps the capture's broker addresses and message-id prefixes to the cluster's."""

    def __init__(self, cluster: DevCluster) -> None:
        self.text: dict[str, str] = {}
        for name, captured in CAPTURE_ADDRS.items():
            ours = cluster.broker_addr(name)
            self.text[captured] = ours
            host, port = captured.split(":")
            our_host, our_port = ours.split(":")
            prefix = make_offset_msg_id(host, int(port), 0)[:16]
            self.text[prefix] = make_offset_msg_id(our_host, int(our_port), 0)[:16]

    def __call__(self, value: str) -> str:
        for old, new in self.text.items():
            value = value.replace(old, new)
        return value


def assert_same_answer(ours: RemotingCommand, golden: RemotingCommand, fix: Translator) -> None:
    where = f"opaque {golden.opaque}"
    assert ours.opaque == golden.opaque, where
    assert ours.code == golden.code, (where, ours.remark)
    assert ours.flag == golden.flag, where
    assert ours.serialize_type == golden.serialize_type, where
    assert ours.language == golden.language, where
    assert ours.remark == golden.remark, where
    assert (ours.ext_fields is None) == (golden.ext_fields is None), where
    expected_fields = {k: fix(v) for k, v in (golden.ext_fields or {}).items()}
    assert (ours.ext_fields or {}) == expected_fields, where
    assert ours.body == fix(golden.body.decode()).encode(), where


@pytest.fixture
async def cluster() -> AsyncIterator[DevCluster]:
    async with golden_cluster() as running:
        yield running


async def replay(cluster: DevCluster, run: str) -> int:
    """Replay one session; returns the number of answers compared."""
    fix = Translator(cluster)
    addresses = {
        "namesrv": cluster.namesrv_addr,
        **{n: cluster.broker_addr(n) for n in CAPTURE_ADDRS},
    }
    connections: dict[int, RawClient] = {}
    compared = 0
    try:
        for frame in load_session(run):
            raw = (SESSIONS / run / frame["file"]).read_bytes()
            conn = frame["conn"]
            if frame["dir"] == "c2s":
                if conn not in connections:
                    connections[conn] = await RawClient.connect(addresses[frame["route"]])
                await connections[conn].write(raw)
            else:
                ours = await connections[conn].read()
                assert_same_answer(ours, decode_frame(raw), fix)
                compared += 1
    finally:
        for client in connections.values():
            await client.close()
    return compared


async def test_java_json_then_java_rocketmq_sessions_get_the_real_answers(
    cluster: DevCluster,
) -> None:
    assert await replay(cluster, "java-json") == 24
    assert await replay(cluster, "java-rocketmq") == 24
    # Sync, compressed, batch of 3, oneway, async, read-only, broker-b (x2), auto-created.
    assert cluster.message_count() == 2 * 11
    assert cluster.message_count("GoldenAutoCreate-json") == 1
    created = cluster.messages("GoldenAutoCreate-rmq")
    assert [(m.queue_id, m.queue_offset, m.body) for m in created] == [(2, 0, b"auto create rmq")]


async def test_replay_stores_what_the_java_client_sent(cluster: DevCluster) -> None:
    await replay(cluster, "java-json")
    stored = {m.properties.get("KEYS"): m for m in cluster.messages("GoldenTopic")}
    big = stored["golden-big-key"]
    assert len(big.body) == 6023  # decompressed
    assert big.sys_flag == 769
    sync = stored["golden-key-1 golden-key-2"]
    assert sync.body == b"Hello RocketMQ golden sync json"
    assert sync.uniq_key == "C000020259775FFD2B27696D66FF0000"
    assert sync.properties["goldenProp"] == "golden-value-1"
    assert sync.properties["CLUSTER"] == "DefaultCluster"
    assert "WAIT" not in sync.properties  # dropped by a 4.9.4 broker
    assert sync.keys == ["golden-key-1", "golden-key-2"] and sync.tags == "TagA"
    batch = [m for m in cluster.messages("GoldenTopic") if m.tags == "TagBatch"]
    assert [m.body for m in batch] == [b"batch message %d json" % i for i in (1, 2, 3)]
    assert [m.queue_offset for m in batch] == [0, 1, 2]
    assert len(cluster.unique_msg_ids("GoldenTopic")) == cluster.message_count("GoldenTopic") == 7
    assert cluster.clients("broker-a") == {}  # unregistered at shutdown


async def test_probe_session_gets_the_real_answers() -> None:
    async with golden_cluster() as cluster:
        assert await replay(cluster, "probe") == 7
