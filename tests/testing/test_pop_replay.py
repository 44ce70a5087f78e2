"""The dev cluster in 5.x mode answers pops as the real 5.2.0 broker did (issue 38): the
official 5.2.0 Java client's recorded frames (``tests/golden/sessions/pop_5_2_0``) are
written byte for byte on a clock set to the capture's, and each answer is compared with
the real broker's - code, remark, header fields and values (``reviveQid`` aside for
non-orderly pops: the broker picks it at random) and the popped records (commit-log
offsets, store time and hosts aside: the replay's own).

Where the real broker's timing is its own (its revive service ran 2-4 s after a check
point fell due and did not wake a long-polling pop), the replay asks with requests of its
own at the due time and checks what came back: the message, from the pop retry topic,
under its topic, with the broker's handle and ``1ST_POP_TIME``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import anyio
import pytest

from producer._consume.received import decode_pulled
from producer._remoting.command import RemotingCommand
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.pop_requests import (
    POP_CK,
    InitMode,
    PopParams,
    ReceiptHandle,
    ack_request,
    parse_pop_response,
    pop_request,
)
from producer._remoting.store_record import StoreRecord, decode_records
from producer.testing import DevCluster
from tests.protocol.pop_session import command, frames, raw
from tests.testing.rawclient import RawClient

pytestmark = pytest.mark.anyio
RANDOM_REVIVE = frozenset({16, 24, 32})  # non-orderly answers: reviveQid is the broker's pick
GROUP, TOPIC = "PopApiGroup", "PopApiTopic"


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now

    def at(self, seq: int) -> None:
        """The capture's time of frame ``seq`` (the popTime it answered, if any)."""
        fields = command(seq).ext_fields or {}
        self.now = int(fields.get("popTime") or frames()[seq]["t"] * 1000)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def cluster(clock: Clock) -> AsyncIterator[DevCluster]:
    clock.now = int(frames()[1]["t"] * 1000)
    async with DevCluster(
        brokers=1,
        broker_version="5.x",
        cluster_name="Cluster5",
        auto_create_topic=False,
        clock_ms=clock,
    ) as c:
        c.add_topic(TOPIC, 1)
        c.add_topic("PopOrderTopic", 1)
        yield c


# What the 5.2.0 broker's send path stores and the dev broker's (4.9.4's) does not: the
# send side's business, not pop's (a known difference, left to the send path).
SEND_PATH_5X = ("MSG_REGION", "TRACE_ON", "WAIT")


def comparable(record: StoreRecord) -> StoreRecord:
    props = {k: v for k, v in record.properties.items() if k not in SEND_PATH_5X}
    return dataclasses.replace(
        record, store_timestamp=0, store_host="", born_host="", commit_log_offset=0,
        properties=props,
    )  # fmt: skip


def assert_same(seq: int, ours: RemotingCommand) -> None:
    golden = command(seq)
    where = f"frame {seq}"
    assert (ours.code, ours.flag, ours.remark) == (golden.code, golden.flag, golden.remark), where
    ours_fields, golden_fields = dict(ours.ext_fields or {}), dict(golden.ext_fields or {})
    if seq in RANDOM_REVIVE:
        assert 0 <= int(ours_fields.pop("reviveQid")) < 8, where
        golden_fields.pop("reviveQid")
    assert ours_fields == golden_fields, where
    assert (ours.ext_fields is None) == (golden.ext_fields is None), where
    assert [comparable(r) for r in decode_records(ours.body)] == [
        comparable(r) for r in decode_records(golden.body)
    ], where


async def exchange(client: RawClient, clock: Clock, seq: int) -> RemotingCommand:
    """Write request ``seq`` at the time of its answer (``seq + 1``) and read the answer."""
    clock.at(seq + 1)
    await client.write(raw(seq))
    return await client.read()


async def held(
    client: RawClient, cluster: DevCluster, clock: Clock, seq: int, answer: int
) -> RemotingCommand:
    """Write a pop at its own time, move the clock to the capture's answer, tick, read."""
    clock.now = int(frames()[seq]["t"] * 1000)
    await client.write(raw(seq))
    clock.at(answer)
    cluster.tick()
    with anyio.fail_after(30):  # only so that a pop never answered fails rather than hangs
        return await client.read()


async def test_pop_ack_change_and_refusals_are_the_real_brokers(
    cluster: DevCluster, clock: Clock
) -> None:
    async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
        for seq in (3, 7, 9, 11, 13):  # b-0..b-4: PopApiTopic queue 0, offsets 0-4
            assert (await exchange(client, clock, seq)).code == 0
        for seq in (15, 17, 19, 21, 23, 25, 27):  # B1-B7
            assert_same(seq + 1, await exchange(client, clock, seq))
        # B9's first pop: nothing is due yet; held until 50 ms before bornTime + pollTime.
        assert_same(32, await held(client, cluster, clock, 29, 32))

        # B5's change with B7's offset outside the queue: ChangeInvisibleTimeProcessor
        # (5.2.0) answers 208 with no remark, where the ack (B7, #28) names the offsets.
        change = command(23)
        change.ext_fields = {**(change.ext_fields or {}), "offset": "1000"}
        change.opaque = 999
        await client.write(encode_frame(change))
        answer = await client.read()
        assert (answer.code, answer.remark, command(28).code) == (208, None, 208)
        assert command(28).remark  # the ack's answer did say


def pop_now(clock: Clock, max_messages: int = 8) -> RemotingCommand:
    params = PopParams(
        group=GROUP, topic=TOPIC, broker_name="broker-a", max_messages=max_messages,
        invisible_ms=8000, poll_ms=0, born_ms=clock.now, init_mode=InitMode.MIN,
    )  # fmt: skip
    return pop_request(params)


async def test_what_was_not_acked_comes_back_through_the_pop_retry_topic(
    cluster: DevCluster, clock: Clock
) -> None:
    async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
        for seq in (3, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25):  # up to B6: b-4 left, b-3 changed
            assert (await exchange(client, clock, seq)).code == 0
        first_pop = 1795788628152
        clock.now = first_pop + 8000 - 1
        cluster.tick()
        assert not parse_pop_response(await client.request(pop_now(clock))).found
        clock.now = first_pop + 8000  # b-4's invisible time runs out
        cluster.tick()
        answer = parse_pop_response(await client.request(pop_now(clock)))
        (b4,) = decode_pulled(answer.body, "broker-a")
        assert (b4.topic, b4.queue.topic, b4.queue_offset, b4.reconsume_times, b4.keys) == (
            TOPIC, TOPIC, 0, 1, ["b-4"],
        )  # fmt: skip
        handle = ReceiptHandle.parse(b4.properties[POP_CK])
        assert (handle.retry, handle.pop_time, handle.ck_queue_offset) == (True, clock.now, 0)
        assert b4.properties["1ST_POP_TIME"] == str(first_pop)
        assert answer.start_offsets == {(1, 0): [0]} and answer.msg_offsets == {(1, 0): [0]}
        assert b4.born_host == cluster.broker_addr("broker-a")  # README: the broker's own
        ack = await client.request(ack_request(GROUP, TOPIC, handle))
        assert ack.code == 0 and (ack.ext_fields, ack.remark) == (None, None)
        assert (ack_request(GROUP, TOPIC, handle).ext_fields or {})["topic"] == (
            "%RETRY%PopApiGroup_PopApiTopic"
        )
        # b-3: the stale ack at B6 did not touch the check point its change made.
        changed_at = 1795788628328
        clock.now = changed_at + 20000
        cluster.tick()
        (b3,) = decode_pulled(parse_pop_response(await client.request(pop_now(clock))).body, "x")
        assert (b3.keys, b3.queue_offset, b3.properties["1ST_POP_TIME"]) == (
            ["b-3"], 1, str(changed_at),
        )  # fmt: skip
        await client.request(ack_request(GROUP, TOPIC, ReceiptHandle.parse(b3.properties[POP_CK])))
        clock.now += 600_000  # B10: nothing else comes back (b-0..b-2 were acked)
        cluster.tick()
        assert not parse_pop_response(await client.request(pop_now(clock))).found
    assert cluster.message_count("%RETRY%PopApiGroup_PopApiTopic") == 2


async def test_orderly_pop_holds_the_queue_as_the_real_broker(
    cluster: DevCluster, clock: Clock
) -> None:
    async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
        for seq in (49, 51, 53, 55):  # o-0..o-3
            assert (await exchange(client, clock, seq)).code == 0
        assert_same(58, await exchange(client, clock, 57))  # O1: o-0, o-1; reviveQid 999
        assert_same(60, await held(client, cluster, clock, 59, 60))  # O2: held, 210
        assert_same(62, await exchange(client, clock, 61))  # O3: ack o-0
        for seq in (63, 65, 73):  # O4, O5: still held while o-1 is un-acked
            assert_same(
                seq + {63: 1, 65: 7, 73: 1}[seq],
                await held(client, cluster, clock, seq, seq + {63: 1, 65: 7, 73: 1}[seq]),
            )
        # O5: the lock runs out at 661.257 and the held pop gets o-1 again, then o-2.
        assert_same(76, await held(client, cluster, clock, 75, 76))
        # O6: the broker changed o-1 at 661.274 (its answer: 10000 + 10 ms since popTime).
        clock.now = 1795788661274
        await client.write(raw(77))
        assert_same(78, await client.read())
        for seq in (79, 81, 83, 85):  # O7 ack + batch ack, O8 pop, O9 ack
            assert_same(seq + 1, await exchange(client, clock, seq))
        assert_same(88, await held(client, cluster, clock, 87, 88))  # O10: nothing left
