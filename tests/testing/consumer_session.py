"""Replaying the recorded Java 4.9.4 consumer session against the dev cluster: its frames
written byte for byte on one connection per captured connection, each answer compared with
the real broker's (:mod:`tests.testing.test_consumer_replay`)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Collection, Sequence
from typing import Any

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_decoder import decode_frame
from producer._remoting.request_codes import RequestCode
from producer._remoting.store_record import StoreRecord, decode_records
from producer._response_codes import ResponseCode
from producer.testing import DevCluster
from tests.protocol.golden import golden_dir
from tests.testing.rawclient import RawClient

SESSION = golden_dir() / "sessions" / "consumer_4_9_4"

GOLDEN_BROKER = "broker-s"
ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
# Route lookups the real name server answered "no route" because the broker registered the
# %RETRY% topic a heartbeat had just created a few ms later (asynchronously); the dev broker
# registers it at once. Frame 228: %RETRY%SpecOrderlyGroup, 4 ms after heartbeat 226.
REGISTERED_LATE = frozenset({228})
# The real broker times held pulls out at checks 5 s apart: the capture's expired pulls were
# answered 17.017, 27.020 and 37.019 s after frame 1, so its checks fell ~2.015 s past each
# 5 s from there (the replay's clock starts where that puts a check 2.015 s in).
HOLD_CHECK_MS = 5000
HOLD_CHECK_PHASE_MS = 2015
BARRIER_CODE = 9999  # no broker knows it: answered REQUEST_CODE_NOT_SUPPORTED, in order
BARRIER_OPAQUE = 1 << 30  # above every opaque the capture's clients used
GET_CONSUMER_LIST_BY_GROUP = RequestCode.GET_CONSUMER_LIST_BY_GROUP


def frames() -> dict[int, dict[str, Any]]:
    lines = (SESSION / "frames.jsonl").read_text().splitlines()
    return {f["seq"]: f for f in map(json.loads, lines)}


def raw(frame: dict[str, Any]) -> bytes:
    return (SESSION / frame["file"]).read_bytes()


def same_records(ours: bytes, golden: bytes) -> None:
    def comparable(record: StoreRecord) -> StoreRecord:
        # The replay's own: when it stored, where it listens, the sender's client port.
        return dataclasses.replace(record, store_timestamp=0, store_host="", born_host="")

    assert [comparable(r) for r in decode_records(ours)] == [
        comparable(r) for r in decode_records(golden)
    ]


def host_hex(addr: str) -> str:
    """An ``ip:port`` as an offset message id's first 16 hex digits."""
    ip, _, port = addr.rpartition(":")
    return "".join(f"{int(part):02X}" for part in ip.split(".")) + f"{int(port):08X}"


def commit_log_offset(offset_msg_id: str) -> int:
    return int(offset_msg_id[-16:], 16)


class SessionReplay:
    """Frames written on one connection per captured connection, answers matched to the
    capture's: responses by opaque, requests the broker starts by code."""

    def __init__(
        self,
        cluster: DevCluster,
        captured: dict[int, dict[str, Any]],
        order: Sequence[int],
        first_store: tuple[int, int],
    ) -> None:
        self.cluster = cluster
        self.captured = captured
        self.connections: dict[int, RawClient] = {}
        self.unmatched: dict[int, list[RemotingCommand]] = {}
        self.last_frame = {captured[seq]["conn"]: seq for seq in order}
        # (the answer to the run's first store, its commit-log offset in the capture)
        self.first_store = first_store
        self.shift = 0  # our commit-log offsets minus the capture's
        self.requests: dict[tuple[int, int], int] = {}  # (conn, opaque) -> request code
        self.compared = 0
        self.barriers = 0

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

    async def processed(self, frame: dict[str, Any]) -> None:
        """Return once the broker has handled every frame written so far on ``frame``'s
        connection: a request it does not know, answered in order, is the barrier (the
        clock must not move past a request the broker has not read yet)."""
        client = await self.connection(frame)
        self.barriers += 1
        opaque = BARRIER_OPAQUE + self.barriers
        await client.send(RemotingCommand(BARRIER_CODE, opaque=opaque))
        while True:
            ours = await asyncio.wait_for(client.read(), 5)
            if ours.flag & 1 and ours.opaque == opaque:
                assert ours.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
                return
            self.unmatched[frame["conn"]].append(ours)

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
    seq: int,
    ours: RemotingCommand,
    golden: RemotingCommand,
    shift: int,
    request: int | None = None,
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
            properties = dict(record.properties)
            origin = properties.get(ORIGIN_MESSAGE_ID, "")
            if origin[:16] == host_hex(record.store_host):  # an offset id of this broker's
                properties[ORIGIN_MESSAGE_ID] = f"@{int(origin[16:], 16) + offset_shift}"
            return dataclasses.asdict(
                dataclasses.replace(
                    record,
                    commit_log_offset=record.commit_log_offset + offset_shift,
                    properties=properties,
                    store_timestamp=0,
                    store_host="",
                    born_host="",
                )
            )

        mine = [comparable(r, 0) for r in decode_records(ours.body or b"")]
        real = [comparable(r, shift) for r in decode_records(golden.body or b"")]
        differing = [
            {k: (a[k], b[k]) for k in a if a[k] != b[k]} for a, b in zip(mine, real, strict=False)
        ]
        assert mine == real, (where, len(mine), len(real), differing)
    elif request == GET_CONSUMER_LIST_BY_GROUP:  # members in the broker's hash order
        assert sorted(json.loads(ours.body or b"{}")["consumerIdList"]) == sorted(
            json.loads(golden.body or b"{}")["consumerIdList"]
        ), where
    else:
        assert (ours.body or b"") == (golden.body or b""), where


async def replay_run(
    order: Sequence[int],
    topics: dict[str, int],
    *,
    first_store: tuple[int, int],
    skip: Collection[int] = (),
) -> SessionReplay:
    """Write every frame of ``order`` (client frames byte for byte, on one connection per
    captured one) on a clock that follows the capture's, comparing every answer."""
    captured = frames()
    start = int(captured[order[0]]["t"] * 1000)
    # The broker's hold checks fall where the capture's did (see HOLD_CHECK_PHASE_MS).
    now = {"ms": start + HOLD_CHECK_PHASE_MS - HOLD_CHECK_MS}
    async with DevCluster(
        brokers=1,
        cluster_name="SpecCluster",
        clock_ms=lambda: now["ms"],
        pull_hold_check_ms=HOLD_CHECK_MS,
    ) as cluster:
        for topic, queues in topics.items():
            cluster.add_topic(topic, queues)
        replay = SessionReplay(cluster, captured, order, first_store)
        try:
            for seq in order:
                frame = captured[seq]
                now["ms"] = max(now["ms"], int(frame["t"] * 1000))
                cluster.tick()
                if seq not in skip:
                    await replay_frame(replay, seq, frame)
                await replay.close_finished(seq, frame["conn"])
        finally:
            await replay.aclose()
    return replay


async def replay_frame(replay: SessionReplay, seq: int, frame: dict[str, Any]) -> None:
    if frame["dir"] == "c2s":
        replay.requests[(frame["conn"], frame["opaque"])] = frame["code"]
        await (await replay.connection(frame)).write(raw(frame))
        if frame["route"] != "namesrv":
            await replay.processed(frame)
        return
    golden = decode_frame(raw(frame))
    ours = await replay.answer(frame, golden)
    if seq in REGISTERED_LATE:  # ours knows the route already: see REGISTERED_LATE
        assert (ours.code, golden.code) == (ResponseCode.SUCCESS, ResponseCode.TOPIC_NOT_EXIST)
    elif frame["route"] == "namesrv":
        assert (ours.code, ours.remark) == (golden.code, golden.remark), f"frame {seq}"
        if golden.code == 0:
            same_route(ours, golden, "broker-a")
    else:
        first_answer, first_offset = replay.first_store
        if seq == first_answer:  # where our commit log starts against the capture's
            replay.shift = commit_log_offset((ours.ext_fields or {})["msgId"]) - first_offset
        request = replay.requests.get((frame["conn"], golden.opaque)) if golden.flag & 1 else None
        same_broker_answer(seq, ours, golden, replay.shift, request)
    replay.compared += 1
