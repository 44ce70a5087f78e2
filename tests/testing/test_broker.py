"""Brokers over the wire: every request code, the real broker's checks, storage."""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator

import pytest

from producer._remoting.command import RemotingCommand
from producer._remoting.message_codec import BatchItem, encode_batch, parse_offset_msg_id
from producer._remoting.producer_requests import (
    SendRequestFactory,
    build_send_request,
    heartbeat_request,
    max_offset_request,
    parse_max_offset_response,
    unregister_client_request,
)
from producer._remoting.request_codes import RequestCode, SerializeType
from producer._remoting.send_header import parse_send_response
from producer._response_codes import ResponseCode
from producer._types.message import Message, MessageQueue
from producer._types.send_status import SendStatus
from producer.testing import DevCluster
from tests.testing.rawclient import RawClient, make_request, send_fields

pytestmark = pytest.mark.anyio

FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
ILLEGAL = (
    "the message is illegal, maybe msg body or properties length not matched. "
    "msg body length limit 4194304B, msg properties length limit 32KB."
)
ILLEGAL_CHARS = "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
TRACE = {"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
SEND_KEYS = {"msgId", "queueId", "queueOffset", "MSG_REGION", "TRACE_ON"}


@pytest.fixture
async def cluster() -> AsyncIterator[DevCluster]:
    cluster = DevCluster(brokers=2, topics={"Orders": 4}, auto_create_topic={"broker-a"})
    cluster.add_topic("ReadOnly", 2, perm=4, brokers=["broker-a"])
    async with cluster:
        yield cluster


@pytest.fixture
async def broker_a(cluster: DevCluster) -> AsyncIterator[RawClient]:
    async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
        yield client


def v2(topic: str, queue_id: int = 0, **kw: object) -> RemotingCommand:
    serialize_type = kw.pop("serialize_type", SerializeType.JSON)
    body = kw.pop("body", b"hello")
    oneway = bool(kw.pop("oneway", False))
    return make_request(
        RequestCode.SEND_MESSAGE_V2,
        send_fields(topic, queue_id, **kw),  # type: ignore[arg-type]
        body=body,  # type: ignore[arg-type]
        serialize_type=serialize_type,  # type: ignore[arg-type]
        oneway=oneway,
    )


# -- sends ------------------------------------------------------------------------------


@pytest.mark.parametrize("serialize_type", list(SerializeType))
async def test_send_v2_is_stored_and_answered_like_a_real_broker(
    cluster: DevCluster, broker_a: RawClient, serialize_type: SerializeType
) -> None:
    first = await broker_a.request(v2("Orders", 2, serialize_type=serialize_type))
    second = await broker_a.request(v2("Orders", 2, serialize_type=serialize_type))
    assert (first.code, first.flag, first.serialize_type) == (0, 1, serialize_type)
    assert first.remark is None and first.body == b""
    assert set(first.ext_fields or {}) == SEND_KEYS
    assert (first.ext_fields or {}).items() >= {"queueId": "2", "queueOffset": "0", **TRACE}.items()
    assert (second.ext_fields or {})["queueOffset"] == "1"
    host, port = cluster.broker_addr("broker-a").split(":")
    ids = [parse_offset_msg_id((r.ext_fields or {})["msgId"]) for r in (first, second)]
    assert ids[0] == (host, int(port), 0)
    # 91 fixed bytes + body 5 + topic 6 + "UNIQ_KEY\x01ABC\x02CLUSTER\x01DefaultCluster" (35)
    assert ids[1].commit_offset == 91 + 5 + 6 + 35
    stored = cluster.messages("Orders")
    assert [(m.queue_id, m.queue_offset, m.uniq_key, m.body) for m in stored] == [
        (2, 0, "ABC", b"hello"),
        (2, 1, "ABC", b"hello"),
    ]
    assert cluster.message_count("Orders") == 2 and cluster.unique_msg_ids("Orders") == {"ABC"}


async def test_sdk_built_sends_round_trip(cluster: DevCluster, broker_a: RawClient) -> None:
    factory = SendRequestFactory("SdkGroup")
    big = Message("Orders", b"x" * 10_000, tags="t", keys=["k1", "k2"], properties={"p": "v"})
    prepared = factory.prepare(big, "0A0B0C0D0E0F00000000000000000001")
    queue = MessageQueue("Orders", "broker-a", 3)
    status, header = parse_send_response(
        await broker_a.request(build_send_request(prepared, queue, 1700000000000).to_command())
    )
    assert status is SendStatus.SEND_OK and (header.queue_id, header.queue_offset) == (3, 0)
    (stored,) = cluster.messages("Orders")
    assert stored.body == b"x" * 10_000  # decompressed
    assert stored.sys_flag & 1 and stored.born_timestamp == 1700000000000
    assert (stored.tags, stored.keys, stored.properties["p"]) == ("t", ["k1", "k2"], "v")
    assert stored.offset_msg_id == header.msg_id


async def test_batch_stores_one_message_per_entry(cluster: DevCluster, broker_a: RawClient) -> None:
    factory = SendRequestFactory("SdkGroup")
    messages = [Message("Orders", b"m%d" % i) for i in range(3)]
    keys = [f"{i:032X}" for i in range(3)]
    prepared = factory.prepare_batch(messages, keys)
    response = await broker_a.request(
        build_send_request(prepared, MessageQueue("Orders", "broker-a", 1), 1).to_command()
    )
    fields = response.ext_fields or {}
    assert response.code == 0 and fields["queueId"] == "1" and fields["queueOffset"] == "0"
    ids = fields["msgId"].split(",")
    assert len(ids) == 3 and len(set(ids)) == 3
    stored = cluster.messages("Orders")
    assert [(m.body, m.queue_offset, m.uniq_key) for m in stored] == [
        (b"m0", 0, keys[0]),
        (b"m1", 1, keys[1]),
        (b"m2", 2, keys[2]),
    ]
    assert [m.offset_msg_id for m in stored] == ids
    again = await broker_a.request(
        build_send_request(prepared, MessageQueue("Orders", "b", 1), 1).to_command()
    )
    assert (again.ext_fields or {})["queueOffset"] == "3"
    assert cluster.message_count("Orders") == 6 and len(cluster.unique_msg_ids("Orders")) == 3


async def test_send_message_v1_uses_long_field_names(
    cluster: DevCluster, broker_a: RawClient
) -> None:
    letters = "abcdefghijkm"
    names = [
        "producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
        "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "batch",
    ]  # fmt: skip
    short = send_fields("Orders", 1)
    fields = {name: short[letter] for name, letter in zip(names, letters, strict=True)}
    response = await broker_a.request(make_request(RequestCode.SEND_MESSAGE, fields, body=b"v1"))
    assert response.code == 0 and (response.ext_fields or {})["queueId"] == "1"
    assert [m.body for m in cluster.messages("Orders")] == [b"v1"]


async def test_oneway_send_is_stored_without_an_answer(
    cluster: DevCluster, broker_a: RawClient
) -> None:
    await broker_a.send(v2("Orders", 0, oneway=True))
    probe = max_offset_request("Orders", 0)
    probe.opaque = 4242
    answer = await broker_a.request(probe)  # the next frame is the probe's answer
    assert parse_max_offset_response(answer) == 1
    assert cluster.message_count("Orders") == 1


async def test_read_only_topic_is_accepted_as_by_a_4_9_4_broker(
    cluster: DevCluster, broker_a: RawClient
) -> None:
    response = await broker_a.request(v2("ReadOnly", 1))
    assert response.code == ResponseCode.SUCCESS


async def test_negative_queue_id_picks_a_seeded_random_queue() -> None:
    async def picks(seed: int) -> list[int]:
        async with DevCluster(brokers=1, topics={"Orders": 4}, seed=seed) as cluster:
            async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
                for _ in range(8):
                    await client.request(v2("Orders", -1))
            return [m.queue_id for m in cluster.messages("Orders")]

    first = await picks(3)
    assert first == await picks(3)
    assert all(0 <= q < 4 for q in first)


# -- refusals ---------------------------------------------------------------------------


async def refused(client: RawClient, request: RemotingCommand) -> RemotingCommand:
    response = await client.request(request)
    assert response.body == b""
    return response


async def test_properties_over_32767_chars_are_illegal(broker_a: RawClient) -> None:
    response = await refused(broker_a, v2("Orders", properties="big\x01" + "x" * 32767))
    assert (response.code, response.remark, response.ext_fields) == (13, ILLEGAL, TRACE)


async def test_message_over_4_mib_is_illegal(cluster: DevCluster, broker_a: RawClient) -> None:
    response = await refused(broker_a, v2("Orders", body=b"x" * (4 * 1024 * 1024)))
    assert (response.code, response.remark) == (ResponseCode.MESSAGE_ILLEGAL, ILLEGAL)
    assert cluster.message_count() == 0


@pytest.mark.parametrize("serialize_type", list(SerializeType))
async def test_unknown_topic_without_auto_create_does_not_exist(
    cluster: DevCluster, serialize_type: SerializeType
) -> None:
    async with await RawClient.connect(cluster.broker_addr("broker-b")) as broker_b:
        response = await refused(broker_b, v2("Nope", serialize_type=serialize_type))
    assert response.code == ResponseCode.TOPIC_NOT_EXIST
    assert response.remark == f"topic[Nope] not exist, apply first please!{FAQ}"
    assert response.ext_fields == TRACE and response.serialize_type == serialize_type


async def test_auto_create_takes_min_of_requested_and_tbw102_queues(
    cluster: DevCluster, broker_a: RawClient
) -> None:
    created = await broker_a.request(v2("Fresh", 2, default_topic_queue_nums=3))
    assert created.code == ResponseCode.SUCCESS
    huge = await broker_a.request(v2("Fresh2", 0, default_topic_queue_nums=64))
    assert huge.code == ResponseCode.SUCCESS
    out_of_range = await refused(broker_a, v2("Fresh", 3))
    assert out_of_range.code == ResponseCode.SYSTEM_ERROR
    assert (out_of_range.remark or "").startswith(
        "request queueId[3] is illegal, TopicConfig [topicName=Fresh, readQueueNums=3, "
        "writeQueueNums=3, perm=RW-, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false] "
        "Producer: 127.0.0.1:"
    )
    assert out_of_range.ext_fields == TRACE


async def test_queue_id_out_of_range_is_a_system_error(broker_a: RawClient) -> None:
    response = await refused(broker_a, v2("Orders", 4))
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert "request queueId[4] is illegal" in (response.remark or "")


@pytest.mark.parametrize(
    ("topic", "code", "remark"),
    [
        ("bad topic!", 1, ILLEGAL_CHARS),
        ("t" * 128, 1, "The specified topic is longer than topic max length."),
        ("SCHEDULE_TOPIC_XXXX", 16, "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden."),
    ],
)  # fmt: skip
async def test_topic_names_are_validated(
    broker_a: RawClient, topic: str, code: int, remark: str
) -> None:
    response = await refused(broker_a, v2(topic))
    assert (response.code, response.remark) == (code, remark)


async def test_missing_header_field_is_a_system_error(broker_a: RawClient) -> None:
    fields = send_fields("Orders")
    del fields["b"]
    response = await refused(broker_a, make_request(RequestCode.SEND_MESSAGE_V2, fields))
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert "RemotingCommandException" in (response.remark or "")


async def test_malformed_batch_body_is_refused(cluster: DevCluster, broker_a: RawClient) -> None:
    body = encode_batch([BatchItem(0, b"one", "UNIQ_KEY\x01A")])[:-3]
    fields = send_fields("Orders", batch=True, properties="WAIT\x01true")
    request = make_request(RequestCode.SEND_BATCH_MESSAGE, fields, body=body)
    response = await refused(broker_a, request)
    assert response.code == ResponseCode.SYSTEM_ERROR and cluster.message_count() == 0


# -- housekeeping -----------------------------------------------------------------------


@pytest.mark.parametrize("serialize_type", list(SerializeType))
async def test_heartbeat_and_unregister_track_clients(
    cluster: DevCluster, broker_a: RawClient, serialize_type: SerializeType
) -> None:
    heartbeat = heartbeat_request("10.0.0.1@pid", ["G1"])
    heartbeat.serialize_type = serialize_type
    response = await broker_a.request(heartbeat)
    assert (response.code, response.ext_fields, response.body) == (0, None, b"")
    assert cluster.clients("broker-a") == {
        "10.0.0.1@pid": frozenset({"G1", "CLIENT_INNER_PRODUCER"})
    }
    for group in ("G1", "CLIENT_INNER_PRODUCER"):
        unregister = unregister_client_request("10.0.0.1@pid", group)
        unregister.serialize_type = serialize_type
        answer = await broker_a.request(unregister)
        assert answer.code == 0
        assert answer.ext_fields == ({} if serialize_type is SerializeType.JSON else None)
    assert cluster.clients("broker-a") == {}


async def test_malformed_heartbeat_is_a_system_error(broker_a: RawClient) -> None:
    response = await broker_a.request(make_request(RequestCode.HEART_BEAT, body=b"{not json"))
    assert response.code == ResponseCode.SYSTEM_ERROR


async def test_get_max_offset_counts_a_queue(broker_a: RawClient) -> None:
    for _ in range(3):
        await broker_a.request(v2("Orders", 1))
    offsets = []
    for queue_id in (0, 1):
        offsets.append(
            parse_max_offset_response(
                await broker_a.request(max_offset_request("Orders", queue_id))
            )
        )
    assert offsets == [0, 3]
    unknown = await broker_a.request(max_offset_request("Unknown", 0))
    assert (unknown.code, unknown.ext_fields) == (0, {"offset": "0"})


@pytest.mark.parametrize("serialize_type", list(SerializeType))
async def test_unsupported_code_gets_the_real_remark(
    broker_a: RawClient, serialize_type: SerializeType
) -> None:
    response = await broker_a.request(make_request(9999, serialize_type=serialize_type))
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert response.remark == " request type 9999 not supported"
    assert response.serialize_type == serialize_type and response.ext_fields is None


async def test_undecodable_bytes_close_the_connection(broker_a: RawClient) -> None:
    await broker_a.write(struct.pack(">ii", 8, 0x05000004) + b"abcd")  # serialize type 5
    assert await broker_a.at_eof()


async def test_oversized_length_prefix_closes_the_connection(broker_a: RawClient) -> None:
    await broker_a.write(struct.pack(">i", 64 * 1024 * 1024))
    assert await broker_a.at_eof()
