"""Replay the recorded Java 4.9.4 consumer session against the dev cluster (issue 15):
client frames written byte for byte, each answer compared with the real broker's - code,
flag, remark, ext fields and values, and pulled bodies record by record (sizes,
commit-log offsets, CRCs, properties), with the store time, store host and born host
aside (the replay's own).

* the first run (frames 1-301) and the orderly consumer past its maximum (360-517): every
  connection, on a clock that follows the capture's (:mod:`tests.testing.consumer_session`);
* the probe of the broker (302-359): offsets, timestamps, pull statuses and their checks
  in the broker's order, send-back of an unknown offset, consumer list, locks;
* the first run's send-backs: where their records land in the commit log.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_decoder import decode_frame
from producer.testing import DevCluster
from tests.testing.consumer_session import frames, raw, replay_run, same_records
from tests.testing.rawclient import RawClient

pytestmark = pytest.mark.anyio

SENDS = (5, 9, 11, 13, 15, 17)  # SpecProducer's six messages to SpecTopic
COMMIT = 73  # SpecGroup commits offset 3 of SpecTopic queue 0 (oneway)
PROBE = range(302, 360)
FIRST_STORE_TS = 1795375979608  # the capture's store time of SpecTopic queue 0 offset 0
BY_TIME = 312  # SEARCH_OFFSET_BY_TIMESTAMP with a time of the capture's clock
EARLIEST = 317  # the answer to GET_EARLIEST_MSG_STORETIME: the replay's store time
CLIENT_ADDR = re.compile(r"consumer:\[/127\.0\.0\.1:\d+\]")  # the client port differs


@pytest.fixture
async def cluster() -> AsyncIterator[DevCluster]:
    async with DevCluster(brokers=1, cluster_name="SpecCluster", auto_create_topic=False) as c:
        c.add_topic("SpecTopic", 2)
        yield c


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


async def test_the_orderly_consumer_past_its_max_gets_the_real_brokers_answers() -> None:
    """The capture's third run, every frame of every connection in capture order, on a
    clock that follows the capture's: a producer sends "poison" to SpecOrderTopic; an
    orderly consumer (maxReconsumeTimes=1) locks its queues, pulls it, fails it twice and
    sends it to %RETRY% with DELAY=4, which the broker diverts to %DLQ% through the level-4
    schedule; a DLQ reader's pull is refused as not latest (25); a pull 20 s later finds
    no message (19) and one 27 s later finds it in %DLQ%, laid out as the real broker
    wrote it. Every answer is compared: code, flag, remark, ext fields, bodies (pulled
    records field by field, commit-log offsets moved by the replay's first offset)."""
    replay = await replay_run(
        ORDERLY_DLQ,
        {"SpecOrderTopic": 1},
        skip=SCHEDULE_MAX_OFFSETS,
        first_store=(367, FIRST_OFFSET),
    )
    answers = [s for s in ORDERLY_DLQ if replay.captured[s]["dir"] == "s2c"]
    assert replay.compared == len([s for s in answers if s not in SCHEDULE_MAX_OFFSETS]) == 58
    assert replay.shift == -FIRST_OFFSET


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


# -- the first run (frames 1-301) ---------------------------------------------------------------


def first_run_order() -> list[int]:
    """Capture order, but the DLQ-direct send-back (55) written after the three written
    within the same 3 ms that the real broker stored before it (see SEND_BACKS)."""
    order = [seq for seq in range(1, 302) if seq != 55]
    order.insert(order.index(59) + 1, 55)
    return order


async def test_the_first_run_gets_the_real_brokers_answers() -> None:
    """The capture's first run, every frame of every connection, on the capture's clock:
    six sends; a push consumer's heartbeats, rebalance, long-polling pulls, offsets and
    send-backs at delay levels 0, 1 and -1; the retries coming back through %RETRY% after
    1 s and 10 s; maxReconsumeTimes=1 sending fail-always to the DLQ; a second member
    joining and leaving (NOTIFY_CONSUMER_IDS_CHANGED); a DLQ reader; an orderly consumer
    with its locks; everyone unregistering."""
    replay = await replay_run(first_run_order(), {"SpecTopic": 2}, first_store=(8, 0))
    answers = [s for s in range(1, 302) if replay.captured[s]["dir"] == "s2c"]
    assert replay.compared == len(answers)
    assert replay.shift == 0
