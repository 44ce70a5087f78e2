"""Part 2 of the lean consume path keeps the rules: messages decoded straight from a pull
carry every field (worked out on first read where rarely read), an async listener's call
run to its first suspension finishes as an ``await`` would (a value, an error, a
cancellation after the suspension), an orderly run settles what it consumed before it
waits on a call - its offset is never held back by a message already consumed - and a
body that does not decode reaches no listener on the run paths."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from types import SimpleNamespace

import anyio
import anyio.lowlevel
import pytest

from producer import Message, Producer
from producer._consume.pop import PopTiming, popped_messages
from producer._consume.received import MAX_BODY_BYTES, decode_pulled
from producer._remoting.message_codec import COMPRESSED_FLAG, make_offset_msg_id
from producer._remoting.pop_requests import PopResult
from producer._remoting.store_record import StoreRecord, decode_records, encode_record
from producer._types.consumer.context import ConsumeContext
from producer.consumer import ConsumeStatus, ReceivedMessage
from producer.consumer import decode_records as decode_pulled_records
from producer.consumer._listener import ListenerCall, Verdict
from producer.consumer._telemetry import ConsumerTelemetry
from producer.testing import DevClusterThread
from tests.helpers.java_bodies import Seen, committed, java_send, without_lz4
from tests.helpers.push import FAST_LEVELS, consumer, orderly_consumer, until
from tests.protocol.java5_vectors import LZ4_BODY, LZ4_CONTENT, SYS_FLAG_LZ4

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def _record(n: int, **overrides: object) -> StoreRecord:
    fields: dict[str, object] = {
        "topic": "Orders",
        "queue_id": 3,
        "queue_offset": 7 + n,
        "commit_log_offset": 1000 * n,
        "body": bytes([n]) * 50,
        "properties": {"TAGS": "a", "KEYS": "k1 k2", "UNIQ_KEY": f"K{n}"},
        "born_timestamp": 1 + n,
        "born_host": "10.0.0.1:5000",
        "store_timestamp": 2 + n,
        "store_host": "10.0.0.2:10911",
        "flag": 4,
        "reconsume_times": 2,
        "prepared_transaction_offset": 9,
        "body_crc": 123,
    }
    return StoreRecord(**{**fields, **overrides})  # type: ignore[arg-type]


def test_pulled_messages_carry_every_field_of_their_records() -> None:
    records = [
        _record(0),
        _record(1, properties={"TAGS": "b"}),  # no UNIQ_KEY: the offset id is the msg id
        _record(2, topic="%RETRY%cg", properties={"RETRY_TOPIC": "Orders", "UNIQ_KEY": "K2"}),
        _record(3, store_host="[::1]:10911", sys_flag=0x30, born_host="[::2]:1"),  # IPv6
    ]
    messages = decode_pulled(b"".join(map(encode_record, records)), "broker-a")
    for record, message in zip(records, messages, strict=True):
        host, _, port = record.store_host.rpartition(":")
        offset_id = make_offset_msg_id(host.strip("[]"), int(port), record.commit_log_offset)
        assert message.offset_msg_id == offset_id
        assert message.msg_id == record.properties.get("UNIQ_KEY", offset_id)
        assert dict(message.properties) == record.properties
        assert message.queue.topic == record.topic  # the queue pulled from
        assert message.queue.broker_name == "broker-a"
        got = [getattr(message, name) for name in SAME]
        assert got == [getattr(record, name) for name in SAME]
    assert [m.topic for m in messages] == ["Orders"] * 4  # the retry's original topic
    assert messages[0].tags == "a" and messages[0].keys == ["k1", "k2"]


SAME = (
    "body",
    "queue_offset",
    "commit_log_offset",
    "reconsume_times",
    "born_timestamp",
    "store_timestamp",
    "born_host",
    "store_host",
    "flag",
    "sys_flag",
    "body_crc",
)


def test_compressed_bodies_are_inflated_and_a_bad_one_keeps_its_bytes() -> None:
    good = _record(0, body=zlib.compress(b"x" * 5000), sys_flag=COMPRESSED_FLAG)
    bad = _record(1, body=b"not zlib", sys_flag=COMPRESSED_FLAG)
    data = b"".join(map(encode_record, [good, bad]))
    first, second = decode_pulled(data, "broker-a")
    assert first.body == b"x" * 5000
    assert second.body == b"not zlib"
    assert [r.body for r in decode_records(data)] == [good.body, bad.body]  # as stored


def test_a_popped_body_is_inflated_to_the_same_cap_as_a_pulled_one() -> None:
    """One bound, MAX_BODY_BYTES: a popped body past it is refused (marked undecodable,
    its stored bytes kept), as a pulled one is, never inflated without limit."""
    bomb = zlib.compress(bytes(MAX_BODY_BYTES + 1), 9)
    small = zlib.compress(b"y" * 5000)
    records = [
        _record(0, body=bomb, sys_flag=COMPRESSED_FLAG),
        _record(1, body=small, sys_flag=COMPRESSED_FLAG),
    ]
    result = PopResult(
        found=True, pop_time=1000, invisible_time=60_000, revive_qid=0, rest_num=0,
        start_offsets={(0, 3): [7]}, msg_offsets={(0, 3): [7, 8]}, order_counts={},
        body=b"".join(map(encode_record, records)),
    )  # fmt: skip
    timing = PopTiming(sent_at_ms=0.0, born_ms=1000, answered_at_ms=1.0)
    big, fine = popped_messages(result, "g", "Orders", "broker-a", timing)
    assert big.undecodable is not None and big.body == bomb
    assert fine.undecodable is None and fine.body == b"y" * 5000
    [pulled, _] = decode_pulled_records(result.body, "broker-a")  # the pull consumer's
    assert pulled.undecodable is not None


def test_decode_records_inflates_with_the_codecs_it_is_given() -> None:
    """``decode_records(codecs=consumer.body_codecs)`` inflates as that consumer's
    ``getmany`` does: without lz4, a Java 5.x LZ4 body is marked, not passed off."""
    data = encode_record(_record(0, body=LZ4_BODY, sys_flag=SYS_FLAG_LZ4))
    [missing] = decode_pulled_records(data, "broker-a", codecs=without_lz4())
    assert missing.undecodable is not None and "lz4" in str(missing.undecodable)
    [found] = decode_pulled_records(data, "broker-a")
    assert found.undecodable is None and found.body == LZ4_CONTENT


def _call(listener: object) -> ListenerCall:
    return ListenerCall(listener, 1, telemetry=ConsumerTelemetry("g"), clock_ms=lambda: 0.0)


async def _verdict_of(call: ListenerCall, batch: list[ReceivedMessage]) -> Verdict:
    started = call.call(batch, ConsumeContext(None), 0.0)  # type: ignore[arg-type]
    return started if isinstance(started, Verdict) else await started


async def test_an_async_call_resumed_after_its_first_suspension_ends_as_awaited() -> None:
    boom = ValueError("boom")
    steps: list[str] = []

    async def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        steps.append("before")
        await anyio.lowlevel.checkpoint()  # suspends: the caller awaits the rest
        steps.append("after")
        if messages:
            raise boom
        return ConsumeStatus.SUCCESS

    call = _call(listener)
    started = call.call([], ConsumeContext(None), 0.0)  # type: ignore[arg-type]
    assert not isinstance(started, Verdict) and steps == ["before"]
    assert await started == Verdict(ConsumeStatus.SUCCESS)
    one = [SimpleNamespace(consume_start_ms=0.0, undecodable=None)]
    assert await _verdict_of(call, one) == Verdict(  # type: ignore[arg-type]
        ConsumeStatus.RECONSUME_LATER, boom
    )

    async def fast(messages: list[ReceivedMessage]) -> ConsumeStatus:
        return ConsumeStatus.SUCCESS

    assert _call(fast).call([], ConsumeContext(None), 0.0) == Verdict(  # type: ignore[arg-type]
        ConsumeStatus.SUCCESS
    )


async def test_a_cancelled_caller_cancels_the_resumed_call() -> None:
    seen: list[str] = []

    async def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            seen.append("cancelled")  # the caller's cancellation, thrown into the call
            raise
        return ConsumeStatus.SUCCESS  # pragma: no cover - never reached

    with anyio.move_on_after(0.05) as scope:
        await _verdict_of(_call(listener), [])
    assert scope.cancelled_caught and seen == ["cancelled"]


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=1, topics={"Orders": 1}) as c:
        yield c


@pytest.fixture
def java5_cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=1, topics={"Orders": 1}, delay_levels=FAST_LEVELS) as c:
        yield c


async def test_an_orderly_run_settles_what_it_consumed_before_a_call_waits(
    cluster: DevClusterThread,
) -> None:
    async with Producer("pg", namesrv=cluster.namesrv_addr) as producer:
        results = [await producer.send(Message("Orders", b"m%d" % i)) for i in range(12)]
    queue, slow = results[0].queue, results[8].queue_offset
    release, done = anyio.Event(), []

    async def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        if messages[0].queue_offset == slow:
            await release.wait()
        done.append(messages[0].queue_offset)
        return ConsumeStatus.SUCCESS

    def committed() -> int | None:
        return cluster.consumer_offsets(queue.broker_name).get("Orders@og", {}).get(0)

    async with orderly_consumer(cluster, listener):
        await until(lambda: len(done) == 8)  # 0-7 in (at most) a few runs; 8 waits
        await until(lambda: committed() == slow)  # persisted while the call waits
        release.set()
        await until(lambda: committed() == results[-1].queue_offset + 1)


@pytest.mark.parametrize("kind", ["async", "orderly plain", "orderly async"])
async def test_a_corrupt_body_never_reaches_a_listener_on_the_run_paths(
    java5_cluster: DevClusterThread, kind: str
) -> None:
    corrupt = LZ4_BODY[:-4]  # no end mark: a truncated frame
    java_send(java5_cluster, "BAD", corrupt, SYS_FLAG_LZ4)
    java_send(java5_cluster, "GOOD", LZ4_BODY, SYS_FLAG_LZ4)
    seen = Seen()

    async def async_seen(messages: list[ReceivedMessage]) -> ConsumeStatus:
        return seen(messages)

    listener = seen if kind == "orderly plain" else async_seen
    options = {"orderly": True, "suspend_current_queue_time_ms": 50} if "orderly" in kind else {}
    async with consumer(java5_cluster, listener, **options):
        await until(lambda: committed(java5_cluster) == 2)
        await until(lambda: bool(java5_cluster.messages("%DLQ%cg")))
    assert seen.bodies == {"GOOD": LZ4_CONTENT}  # the corrupt one never reached it
