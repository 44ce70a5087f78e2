"""The dev broker's SQL92 filtering against the recorded 4.9.4 session (golden d_sql92):
the Java client's frames written byte for byte, each answer compared with the real
broker's - CHECK_CLIENT_CONFIG (good and bad expression), the pulls of the seven messages
(a pull held while only messages its filter refuses arrive), and a group whose expression
does not compile (25, then 27) - plus ``enablePropertyFilter`` off (docs/consuming.md 7)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_decoder import decode_frame
from producer._remoting.store_record import decode_records
from producer.testing import DevCluster
from tests.protocol.golden import golden_dir
from tests.testing.rawclient import RawClient

pytestmark = pytest.mark.anyio

SESSION = golden_dir() / "sessions" / "features_4_9_4" / "d_sql92"
BARRIER_CODE = 9999  # no broker knows it: answered at once, after what came before it


def golden(seq: int) -> bytes:
    lines = (SESSION / "frames.jsonl").read_text().splitlines()
    frame: dict[str, Any] = next(f for f in map(json.loads, lines) if f["seq"] == seq)
    return (SESSION / frame["file"]).read_bytes()


def same_answer(ours: RemotingCommand, seq: int) -> None:
    real = decode_frame(golden(seq))
    where = f"frame {seq}"
    assert (ours.opaque, ours.code, ours.flag, ours.remark) == (
        real.opaque,
        real.code,
        real.flag,
        real.remark,
    ), where
    assert (ours.ext_fields is None) == (real.ext_fields is None), where
    assert (ours.ext_fields or {}) == (real.ext_fields or {}), where
    mine, theirs = decode_records(ours.body or b""), decode_records(real.body or b"")
    assert [(r.queue_offset, r.properties, r.body) for r in mine] == [
        (r.queue_offset, r.properties, r.body) for r in theirs
    ], where


class Clock:
    def __init__(self) -> None:
        self.now = 1795788494000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def cluster(clock: Clock) -> AsyncIterator[DevCluster]:
    async with DevCluster(brokers=1, property_filter=True, clock_ms=clock) as c:
        c.add_topic("SqlTopic", 1)
        yield c


async def answer(client: RawClient) -> RemotingCommand:
    """The next response (requests the broker starts, NOTIFY_CONSUMER_IDS_CHANGED, skipped)."""
    while not (frame := await client.read()).is_response:
        pass
    return frame


async def exchange(client: RawClient, seq: int) -> RemotingCommand:
    await client.write(golden(seq))
    return await answer(client)


async def test_check_client_config_answers_as_the_recorded_broker(cluster: DevCluster) -> None:
    async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
        same_answer(await exchange(client, 11), 12)  # "a > 5 AND b = 'x'": accepted
        same_answer(await exchange(client, 84), 88)  # "a > AND b = 'x'": 23 and the reason


async def test_without_enable_property_filter_sql92_is_refused() -> None:
    async with DevCluster(brokers=1) as cluster:
        cluster.add_topic("SqlTopic", 1)
        async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
            check = await exchange(client, 11)
            assert (await exchange(client, 38)).code == 0  # registered all the same
            pull = await exchange(client, 72)
    remark = "The broker does not support consumer to filter message by SQL92"
    assert (check.code, check.remark, check.ext_fields) == (1, remark, None)
    assert (pull.code, pull.remark) == (1, remark)


async def test_the_seven_messages_are_pulled_as_the_recorded_broker_answered(
    cluster: DevCluster, clock: Clock
) -> None:
    addr = cluster.broker_addr("broker-a")
    async with await RawClient.connect(addr) as consumer, await RawClient.connect(addr) as sender:
        assert (await exchange(consumer, 38)).code == 0  # the heartbeat: SQL92, its version
        await consumer.write(golden(51))  # offset 0 of an empty queue: held
        assert (await exchange(sender, 58)).code == 0  # a=10, b=x
        same_answer(await answer(consumer), 60)  # woken: FOUND, offset 0
        await consumer.write(golden(61))  # offset 1: held while 3, 10/y and no-a arrive
        for send in (62, 64, 66, 68):
            assert (await exchange(sender, send)).code == 0
        same_answer(await answer(consumer), 70)  # woken by a=6 only: FOUND offset 4, next 5
        assert (await exchange(sender, 71)).code == 0  # a=abc: an evaluation error
        same_answer(await exchange(consumer, 72), 74)  # 20 NO_MATCHED_MESSAGE, next 6
        await consumer.write(golden(76))  # offset 6, held
        assert (await exchange(sender, 75)).code == 0  # a=5.5: Integer.valueOf fails
        await consumer.send(RemotingCommand(BARRIER_CODE, opaque=1 << 30))
        assert (await answer(consumer)).opaque == 1 << 30  # the pull is still held
        clock.now += 15_000
        cluster.tick()
        same_answer(await answer(consumer), 125)  # timed out: 20 NO_MATCHED, next 7


async def test_a_group_whose_expression_does_not_compile_gets_no_filter(
    cluster: DevCluster,
) -> None:
    async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
        assert (await exchange(client, 95)).code == 0  # "a > AND b = 'x'", version ...376
        same_answer(await exchange(client, 102), 105)  # pulls with ...448: 25 not latest
        assert (await exchange(client, 123)).code == 0  # re-stamped ...448
        same_answer(await exchange(client, 127), 128)  # 27 FILTER_DATA_NOT_EXIST
