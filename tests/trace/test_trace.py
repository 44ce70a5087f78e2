"""Message trace (issue 37): records as the recorded 4.9.4 Java client wrote them
(``tests/golden/sessions/features_4_9_4/b_trace``), and a producer and a consumer with
``trace=True`` writing them to the dev cluster's trace topic, never failing a send."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from producer import Message, Producer, SendStatus
from producer._remoting.frame_decoder import decode_frame
from producer._remoting.properties import decode_properties
from producer._remoting.send_header import parse_send_request_header
from producer._remoting.trace import TRACE_TOPIC, decode_trace_body, encode_trace_body, trace_keys
from producer._trace.dispatcher import TraceDispatcher, batches
from producer._types.trace_records import PubRecord, SubAfterRecord, SubBeforeRecord
from producer.consumer import ConsumeStatus, PushConsumer, ReceivedMessage
from producer.errors import InvalidOptionError, RemoteProtocolError
from producer.testing import DevClusterThread
from tests.helpers.push import FAST_LEVELS
from tests.protocol.golden import golden_dir

pytestmark = pytest.mark.anyio

SESSION = golden_dir() / "sessions" / "features_4_9_4" / "b_trace"
TRACE_SENDS = (70, 72, 78, 80, 93, 95, 105)  # the trace dispatchers' SEND_MESSAGE_V2s


def frame(seq: int) -> dict[str, Any]:
    for line in (SESSION / "frames.jsonl").read_text().splitlines():
        info = json.loads(line)
        if info["seq"] == seq:
            return dict(info)
    raise KeyError(seq)


def trace_send(seq: int) -> tuple[bytes, dict[str, str]]:
    command = decode_frame((SESSION / frame(seq)["file"]).read_bytes())
    header = parse_send_request_header(command)
    assert header.topic == TRACE_TOPIC
    return bytes(command.body or b""), decode_properties(header.properties or "")


@pytest.mark.parametrize("seq", TRACE_SENDS)
def test_recorded_trace_bodies_decode_and_encode_back_byte_for_byte(seq: int) -> None:
    body, properties = trace_send(seq)
    records = decode_trace_body(body)
    assert records
    assert encode_trace_body(records) == body
    assert "TAGS" not in properties  # trace messages carry no tags
    assert set(properties["KEYS"].split(" ")) == set(trace_keys(records))


def test_the_recorded_records_read_as_the_java_client_wrote_them() -> None:
    (pub,) = decode_trace_body(trace_send(72)[0])
    assert pub == PubRecord(
        timestamp=1795788459554,
        region_id="DefaultRegion",
        group="TraceProducerGroup",
        topic="TraceTopic",
        msg_id="C00002023A5D5FFD2B2788ED66210000",
        tags="TagTrace",
        keys="trace-sync",
        store_host="127.0.0.2:10921",
        body_length=15,
        cost_ms=18,
        msg_type=0,
        offset_msg_id="7F00000200002AA9000000000000025D",
        success=True,
    )
    before, after = decode_trace_body(trace_send(95)[0])
    assert isinstance(before, SubBeforeRecord) and before.region_id is None  # "null"
    assert isinstance(after, SubAfterRecord)
    assert (after.success, after.context_code, after.request_id) == (False, 4, before.request_id)


@pytest.mark.parametrize(
    "body",
    [
        b"Pub\x01x\x02",
        b"Nope\x01a\x01b\x02",
        b"SubBefore\x01notanumber\x01a\x01b\x01c\x01d\x010\x01k\x02",
    ],
)
def test_a_malformed_trace_record_is_a_remote_protocol_error(body: bytes) -> None:
    with pytest.raises(RemoteProtocolError, match="trace record"):
        decode_trace_body(body)


def test_records_are_cut_into_messages_at_the_size_limit() -> None:
    record = SubAfterRecord("r", "m" * 40, 1, True, None, 0, 1, "g")
    size = len(encode_trace_body([record]))
    cut = batches([record] * 10, max_body=size * 3)
    assert [len(b) for b in cut] == [3, 3, 3, 1]


async def test_records_over_the_pending_limit_are_dropped_and_counted() -> None:
    async def never_called(message: Message) -> None:
        raise AssertionError("not started: nothing is sent")

    dispatcher = TraceDispatcher(never_called, TRACE_TOPIC, max_pending=2)
    record = SubAfterRecord("r", "m", 1, True, None, 0, 1, "g")
    dispatcher.append([record, record, record])
    dispatcher.append([record])
    assert dispatcher.dropped == 2


def test_trace_option_is_checked() -> None:
    with pytest.raises(InvalidOptionError, match="trace="):
        Producer("g", "127.0.0.1:9876", trace=3)  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="not a usable topic"):
        PushConsumer("g", "127.0.0.1:9876", trace="bad topic")


def stored_records(cluster: DevClusterThread, topic: str = TRACE_TOPIC) -> list[Any]:
    return [r for m in cluster.messages(topic) for r in decode_trace_body(m.body)]


async def test_a_traced_producer_writes_a_pub_record_per_answered_send() -> None:
    with DevClusterThread(brokers=2, topics={"Orders": 2}) as cluster:
        async with Producer("TracedGroup", cluster.namesrv_addr, trace=True) as producer:
            sync = await producer.send(Message("Orders", b"one", tags="T", keys=["k1", "k2"]))
            later = await producer.send_async(Message("Orders", b"two!"))
            await producer.send_oneway(Message("Orders", b"three"))  # no record, as Java
        pubs = [r for r in stored_records(cluster) if isinstance(r, PubRecord)]
        traces = cluster.messages(TRACE_TOPIC)
    by_id = {p.msg_id: p for p in pubs}
    assert set(by_id) == {sync.msg_id, later.msg_id}
    first = by_id[sync.msg_id]
    assert (first.group, first.topic, first.tags, first.keys) == (
        "TracedGroup",
        "Orders",
        "T",
        "k1 k2",
    )
    assert first.offset_msg_id == sync.offset_msg_id and first.success
    assert first.store_host == cluster.broker_addr(sync.queue.broker_name)
    assert (first.body_length, by_id[later.msg_id].body_length) == (3, 4)
    assert first.region_id == "DefaultRegion"
    keys = {k for m in traces for k in m.keys}
    assert {sync.msg_id, later.msg_id, "k1", "k2"} <= keys  # found by QUERY_MESSAGE


async def test_a_traced_consumer_writes_before_and_after_records_per_call() -> None:
    topics = {"Orders": 1}  # delay levels of 100 ms: the retry comes back at once, not in 10 s
    with DevClusterThread(brokers=1, topics=topics, seed=3, delay_levels=FAST_LEVELS) as cluster:
        async with Producer("P", cluster.namesrv_addr) as producer:
            sent = await producer.send(Message("Orders", b"x", keys="order-1"))
        calls: list[int] = []
        done = anyio.Event()

        def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
            calls.append(messages[0].reconsume_times)
            if len(calls) == 1:
                return ConsumeStatus.RECONSUME_LATER
            done.set()
            return ConsumeStatus.SUCCESS

        consumer = PushConsumer(
            "TracedConsumers", cluster.namesrv_addr, listener=listener, consume_from="first",
            trace=True, local_retry_delay_ms=10,
        )  # fmt: skip
        consumer.subscribe("Orders")
        async with consumer:
            with anyio.fail_after(60):
                await done.wait()
        records = stored_records(cluster)
    befores = [r for r in records if isinstance(r, SubBeforeRecord)]
    afters = [r for r in records if isinstance(r, SubAfterRecord)]
    assert [b.retry_times for b in befores][:2] == [0, 1]
    assert all(b.msg_id == sent.msg_id and b.keys == "order-1" for b in befores)
    assert [(a.success, a.context_code) for a in afters][:2] == [(False, 4), (True, 0)]
    assert [a.request_id for a in afters] == [b.request_id for b in befores]
    assert all(a.group == "TracedConsumers" for a in afters)


async def test_a_trace_topic_that_cannot_be_written_never_fails_a_send() -> None:
    with DevClusterThread(brokers=1, topics={"Orders": 1}, auto_create_topic=False) as cluster:
        async with Producer("P", cluster.namesrv_addr, trace="NoSuchTraceTopic") as producer:
            result = await producer.send(Message("Orders", b"x"))
            assert producer._trace is not None
            trace = producer._trace.dispatcher
        assert result.status is SendStatus.SEND_OK
        assert trace is not None and trace.failed >= 1 and trace.sent == 0
        assert cluster.messages("NoSuchTraceTopic") == []


async def test_the_trace_command_reads_a_journey_and_says_when_there_is_none() -> None:
    import argparse
    import io

    from producer.cli.trace import run_trace

    with DevClusterThread(brokers=1, topics={"Orders": 1}) as cluster:
        async with Producer("P", cluster.namesrv_addr, trace=True) as producer:
            sent = await producer.send(Message("Orders", b"x"))
        out = io.StringIO()
        found = argparse.Namespace(
            msg_id=sent.msg_id, namesrv=cluster.namesrv_addr, topic=TRACE_TOPIC
        )
        assert await run_trace(found, out) == 0
        assert (
            f"sent      group=P topic=Orders broker={cluster.broker_addr('broker-a')}"
            in out.getvalue()
        )
        missing = argparse.Namespace(msg_id="NOPE", namesrv=cluster.namesrv_addr, topic=TRACE_TOPIC)
        assert await run_trace(missing, io.StringIO()) == 1
        unknown = argparse.Namespace(msg_id="x", namesrv=cluster.namesrv_addr, topic="NoTraces")
        assert await run_trace(unknown, out) == 2


async def test_a_namespaced_client_traces_its_own_names() -> None:
    """Java's trace hooks write ``withoutNamespace`` names: the user's topic and group."""
    with DevClusterThread(brokers=1, topics={"nsA%Orders": 1}) as cluster:
        namesrv = cluster.namesrv_addr
        async with Producer("P", namesrv, namespace="nsA", trace=True) as producer:
            sent = await producer.send(Message("Orders", b"x"))
        done = anyio.Event()

        def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
            done.set()
            return ConsumeStatus.SUCCESS

        consumer = PushConsumer(
            "C", namesrv, listener=listener, consume_from="first", trace=True, namespace="nsA"
        )
        consumer.subscribe("Orders")
        async with consumer:
            with anyio.fail_after(60):
                await done.wait()
        records = stored_records(cluster)
    (pub,) = [r for r in records if isinstance(r, PubRecord)]
    assert (pub.group, pub.topic, pub.msg_id) == ("P", "Orders", sent.msg_id)
    assert {r.group for r in records if isinstance(r, SubAfterRecord)} == {"C"}
