"""Replay the recorded Java 4.9.4 consumer session's probe of the broker against the dev
cluster (issue 15): the producer's six sends and the group's committed offset set up the
broker as the capture had it, then every request of the probe connection (frames
302-359: offsets, timestamps, pull statuses and their checks in the broker's order,
send-back of an unknown offset, consumer list, locks) is written byte for byte and each
answer compared with the real broker's: code, flag, remark, ext fields and values, and
pulled bodies record by record - sizes, commit-log offsets, CRCs, properties - with the
store time, store host and born host aside (the replay's own; property order is Java's
HashMap order there and insertion order here, the same bytes in another order).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from producer._remoting.command import RemotingCommand
from producer._remoting.frame import decode_frame
from producer._remoting.store_record import StoreRecord, decode_records
from producer.testing import DevCluster
from tests.protocol.golden import golden_dir
from tests.testing.rawclient import RawClient

pytestmark = pytest.mark.anyio

SESSION = golden_dir() / "sessions" / "consumer_4_9_4"
SENDS = (5, 9, 11, 13, 15, 17)  # SpecProducer's six messages to SpecTopic
COMMIT = 73  # SpecGroup commits offset 3 of SpecTopic queue 0 (oneway)
PROBE = range(302, 360)
FIRST_STORE_TS = 1795375979608  # the capture's store time of SpecTopic queue 0 offset 0
BY_TIME = 312  # SEARCH_OFFSET_BY_TIMESTAMP with a time of the capture's clock
EARLIEST = 317  # the answer to GET_EARLIEST_MSG_STORETIME: the replay's store time
CLIENT_ADDR = re.compile(r"consumer:\[/127\.0\.0\.1:\d+\]")  # the client port differs


def frames() -> dict[int, dict[str, Any]]:
    lines = (SESSION / "frames.jsonl").read_text().splitlines()
    return {f["seq"]: f for f in map(json.loads, lines)}


def raw(frame: dict[str, Any]) -> bytes:
    return (SESSION / frame["file"]).read_bytes()


@pytest.fixture
async def cluster() -> AsyncIterator[DevCluster]:
    async with DevCluster(brokers=1, cluster_name="SpecCluster", auto_create_topic=False) as c:
        c.add_topic("SpecTopic", 2)
        yield c


def same_records(ours: bytes, golden: bytes) -> None:
    def comparable(record: StoreRecord) -> StoreRecord:
        # The replay's own: when it stored, where it listens, the sender's client port.
        return dataclasses.replace(record, store_timestamp=0, store_host="", born_host="")

    assert [comparable(r) for r in decode_records(ours)] == [
        comparable(r) for r in decode_records(golden)
    ]


def assert_same_answer(seq: int, ours: RemotingCommand, golden: RemotingCommand) -> None:
    where = f"frame {seq}"
    assert (ours.opaque, ours.code, ours.flag) == (golden.opaque, golden.code, golden.flag), (
        where,
        ours.remark,
    )
    assert CLIENT_ADDR.sub("consumer:[]", ours.remark or "") == CLIENT_ADDR.sub(
        "consumer:[]", golden.remark or ""
    ), where
    assert (ours.ext_fields is None) == (golden.ext_fields is None), where
    if seq != EARLIEST:
        assert (ours.ext_fields or {}) == (golden.ext_fields or {}), where
    if ours.code == 0 and golden.remark == "FOUND":
        same_records(ours.body or b"", golden.body or b"")
    else:
        assert (ours.body or b"") == (golden.body or b""), where


async def test_the_probe_gets_the_real_brokers_answers(cluster: DevCluster) -> None:
    captured = frames()
    addr = cluster.broker_addr("broker-a")
    async with await RawClient.connect(addr) as producer:
        for seq in SENDS:
            await producer.write(raw(captured[seq]))
            assert (await producer.read()).code == 0
        await producer.write(raw(captured[COMMIT]))
    stored = cluster.messages("SpecTopic")
    assert [(m.queue_id, m.queue_offset) for m in stored if m.queue_id == 0] == [
        (0, 0),
        (0, 1),
        (0, 2),
    ]
    shift = min(m.store_timestamp for m in stored if m.queue_id == 0) - FIRST_STORE_TS
    compared = 0
    async with await RawClient.connect(addr) as probe:
        for seq in PROBE:
            frame = captured[seq]
            if frame["dir"] == "c2s":
                request = decode_frame(raw(frame))
                if seq == BY_TIME:  # the capture's clock, moved to the replay's
                    fields = dict(request.ext_fields or {})
                    fields["timestamp"] = str(int(fields["timestamp"]) + shift)
                    request.ext_fields = fields
                    await probe.send(request)
                else:
                    await probe.write(raw(frame))
                continue
            ours = await probe.read()
            assert_same_answer(seq, ours, decode_frame(raw(frame)))
            if seq == EARLIEST:
                assert ours.ext_fields == {"timestamp": str(FIRST_STORE_TS + shift)}
            compared += 1
    assert compared == 29
