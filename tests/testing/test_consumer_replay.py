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

import asyncio
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


# -- the orderly consumer past its max reconsume times (frames 360-517) ----------------------

ORDERLY_DLQ = range(360, 518)
# GET_MAX_OFFSET of SCHEDULE_TOPIC_XXXX's 18 queues: they count the first run's delayed
# messages too, which this replay does not store.
SCHEDULE_MAX_OFFSETS = range(476, 512)
FIRST_OFFSET = 0x11AF  # the capture's commit-log offset of SpecProducer2's "poison"
GOLDEN_BROKER = "broker-s"


def commit_log_offset(offset_msg_id: str) -> int:
    return int(offset_msg_id[-16:], 16)


class SessionReplay:
    """Frames written on one connection per captured connection, answers matched to the
    capture's: responses by opaque, requests the broker starts by code."""

    def __init__(self, cluster: DevCluster, captured: dict[int, dict[str, Any]]) -> None:
        self.cluster = cluster
        self.captured = captured
        self.connections: dict[int, RawClient] = {}
        self.unmatched: dict[int, list[RemotingCommand]] = {}
        self.last_frame = {f["conn"]: seq for seq, f in captured.items() if seq in ORDERLY_DLQ}
        self.shift = 0  # our commit-log offsets minus the capture's
        self.compared = 0

    async def connection(self, frame: dict[str, Any]) -> RawClient:
        conn = frame["conn"]
        if conn not in self.connections:
            addr = (
                self.cluster.namesrv_addr
                if frame["route"] == "namesrv"
                else self.cluster.broker_addr("broker-a")
            )
            self.connections[conn] = await RawClient.connect(addr)
            self.unmatched[conn] = []
        return self.connections[conn]

    async def answer(self, frame: dict[str, Any], golden: RemotingCommand) -> RemotingCommand:
        def matches(ours: RemotingCommand) -> bool:
            if golden.flag & 1:
                return bool(ours.flag & 1) and ours.opaque == golden.opaque
            return not ours.flag & 1 and ours.code == golden.code

        client = await self.connection(frame)
        waiting = self.unmatched[frame["conn"]]
        for ours in waiting:
            if matches(ours):
                waiting.remove(ours)
                return ours
        while True:
            ours = await asyncio.wait_for(client.read(), 5)
            if matches(ours):
                return ours
            waiting.append(ours)

    async def close_finished(self, seq: int, conn: int) -> None:
        if self.last_frame[conn] == seq:
            await self.connections.pop(conn).close()
            assert self.unmatched.pop(conn) == [], f"answers the capture lacks on c{conn}"

    async def aclose(self) -> None:
        for client in self.connections.values():
            await client.close()


def same_route(ours: RemotingCommand, golden: RemotingCommand, broker: str) -> None:
    def comparable(body: bytes, name: str) -> dict[str, Any]:
        route = json.loads(body)
        for queue in route["queueDatas"]:
            queue["brokerName"] = queue["brokerName"].replace(name, GOLDEN_BROKER)
        return {
            "queues": route["queueDatas"],
            "brokers": [
                (
                    b["cluster"],
                    b["brokerName"].replace(name, GOLDEN_BROKER),
                    sorted(b["brokerAddrs"]),
                )
                for b in route["brokerDatas"]
            ],
        }

    assert comparable(ours.body or b"", broker) == comparable(golden.body or b"", GOLDEN_BROKER)


def same_broker_answer(
    seq: int, ours: RemotingCommand, golden: RemotingCommand, shift: int
) -> None:
    where = f"frame {seq}"
    assert (ours.code, ours.flag, ours.remark) == (golden.code, golden.flag, golden.remark), where
    ours_fields, golden_fields = dict(ours.ext_fields or {}), dict(golden.ext_fields or {})
    if "msgId" in golden_fields:  # the store host differs; the offset moves by the shift
        assert commit_log_offset(ours_fields.pop("msgId")) == (
            commit_log_offset(golden_fields.pop("msgId")) + shift
        ), where
    assert ours_fields == golden_fields, where
    if golden.remark == "FOUND":

        def comparable(record: StoreRecord, offset_shift: int) -> dict[str, Any]:
            return dataclasses.asdict(
                dataclasses.replace(
                    record,
                    commit_log_offset=record.commit_log_offset + offset_shift,
                    store_timestamp=0,
                    store_host="",
                    born_host="",
                )
            )

        assert [comparable(r, 0) for r in decode_records(ours.body or b"")] == [
            comparable(r, shift) for r in decode_records(golden.body or b"")
        ], where
    else:
        assert (ours.body or b"") == (golden.body or b""), where


async def test_the_orderly_consumer_past_its_max_gets_the_real_brokers_answers() -> None:
    """The capture's third run, every frame of every connection in capture order, on a
    clock that follows the capture's: a producer sends "poison" to SpecOrderTopic; an
    orderly consumer (maxReconsumeTimes=1) locks its queues, pulls it, fails it twice and
    sends it to %RETRY% with DELAY=4, which the broker diverts to %DLQ% through the level-4
    schedule; a DLQ reader's pull is refused as not latest (25); a pull 20 s later finds
    no message (19) and one 27 s later finds it in %DLQ%, laid out as the real broker
    wrote it. Every answer is compared: code, flag, remark, ext fields, bodies (pulled
    records field by field, commit-log offsets moved by the replay's first offset)."""
    captured = frames()
    now = {"ms": int(captured[ORDERLY_DLQ[0]]["t"] * 1000)}
    async with DevCluster(
        brokers=1,
        cluster_name="SpecCluster",
        clock_ms=lambda: now["ms"],
    ) as cluster:
        cluster.add_topic("SpecOrderTopic", 1)
        replay = SessionReplay(cluster, captured)
        try:
            for seq in ORDERLY_DLQ:
                frame = captured[seq]
                now["ms"] = int(frame["t"] * 1000)
                cluster.tick()
                if seq not in SCHEDULE_MAX_OFFSETS:
                    await replay_frame(replay, seq, frame)
                await replay.close_finished(seq, frame["conn"])
        finally:
            await replay.aclose()
    answers = [s for s in ORDERLY_DLQ if captured[s]["dir"] == "s2c"]
    assert replay.compared == len([s for s in answers if s not in SCHEDULE_MAX_OFFSETS]) == 58
    assert replay.shift == -FIRST_OFFSET


async def replay_frame(replay: SessionReplay, seq: int, frame: dict[str, Any]) -> None:
    if frame["dir"] == "c2s":
        await (await replay.connection(frame)).write(raw(frame))
        return
    golden = decode_frame(raw(frame))
    ours = await replay.answer(frame, golden)
    if frame["route"] == "namesrv":
        assert (ours.code, ours.remark) == (golden.code, golden.remark), f"frame {seq}"
        if golden.code == 0:
            same_route(ours, golden, "broker-a")
    else:
        if seq == 367:  # the first store: where our commit log starts against the capture's
            replay.shift = commit_log_offset((ours.ext_fields or {})["msgId"]) - FIRST_OFFSET
        same_broker_answer(seq, ours, golden, replay.shift)
    replay.compared += 1


# -- send-back: the commit log the first run left (frames 5-80, steps.txt) --------------------

HEARTBEAT = 29  # SpecGroup's first heartbeat: creates %RETRY%SpecGroup
# The four send-backs of the first consume round, in the order the real broker stored them:
# the DLQ-direct one (frame 55) came last, after %DLQ%SpecGroup was created and registered.
SEND_BACKS = (56, 58, 59, 55)
SECOND_SEND_BACK = 80  # fail-always again, by the offset of its %RETRY% copy: to the DLQ
# (topic, UNIQ_KEY suffix) -> commit-log offset, as the consumer saw them (steps.txt)
FIRST_RUN_OFFSETS = {
    ("%DLQ%SpecGroup", "0003"): 2454,
    ("%RETRY%SpecGroup", "0005"): 2784,
    ("%RETRY%SpecGroup", "0001"): 3155,
    ("%RETRY%SpecGroup", "0002"): 3514,
    ("%DLQ%SpecGroup", "0002"): 3879,
}


async def answer_to(client: RawClient, opaque: int) -> RemotingCommand:
    """The response to ``opaque``, past requests the broker starts (NOTIFY_...)."""
    while True:
        command = await client.read()
        if command.flag & 1 and command.opaque == opaque:
            return command


async def test_send_back_lays_out_the_commit_log_as_the_real_broker() -> None:
    """Six sends, a heartbeat, four send-backs (levels 3, 1, 3 and -1), the delays falling
    due on the broker's clock, then a send-back by the offset of a %RETRY% copy: every
    record the consumer saw lands at the commit-log offset the real broker gave it, so
    sizes of the schedule records, the retry copies and the DLQ writes all agree."""
    captured = frames()
    now = {"ms": int(captured[SENDS[0]]["t"] * 1000)}
    async with DevCluster(
        brokers=1, cluster_name="SpecCluster", clock_ms=lambda: now["ms"]
    ) as cluster:
        cluster.add_topic("SpecTopic", 2)
        async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
            for seq in (*SENDS, HEARTBEAT, *SEND_BACKS):
                await client.write(raw(captured[seq]))
                answer = await answer_to(client, captured[seq]["opaque"])
                assert answer.code == 0, (seq, answer.remark)
            for delay_ms in (1_000, 9_000):  # level 1, then level 3 (10 s)
                now["ms"] += delay_ms
                cluster.tick()
            await client.write(raw(captured[SECOND_SEND_BACK]))
            answer = await answer_to(client, captured[SECOND_SEND_BACK]["opaque"])
            assert answer.code == 0, answer.remark
        placed = {
            (m.topic, (m.uniq_key or "")[-4:]): m.commit_log_offset
            for m in cluster.messages()
            if m.topic.startswith(("%RETRY%", "%DLQ%"))
        }
    assert placed == FIRST_RUN_OFFSETS
