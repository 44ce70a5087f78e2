"""Request builders: prepared sends, retries that rebuild cheaply, housekeeping requests."""

from __future__ import annotations

import json
from typing import Any

import pytest

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_decoder import decode_frame
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.message_codec import decode_batch, decompress_body
from producer._remoting.producer_requests import (
    SendRequestFactory,
    build_retry_send_request,
    build_send_request,
    encode_message_properties,
    heartbeat_request,
    max_offset_request,
    parse_max_offset_response,
    parse_route_response,
    route_request,
    unregister_client_request,
)
from producer._remoting.properties import decode_properties
from producer._remoting.request_codes import FLAG_ONEWAY, RequestCode, SerializeType
from producer._remoting.send_header import SendMessageRequestHeader, parse_send_request_header
from producer._types.message import Message, MessageQueue
from producer.errors import (
    LocalProtocolError,
    MessageValidationError,
    RemoteProtocolError,
    TopicNotExistError,
)

KEY = "C000020259775FFD2B27696D66FF0000"
QUEUE = MessageQueue("Orders", "broker-a", 2)


def _message(**changes: Any) -> Message:
    values: dict[str, Any] = {"topic": "Orders", "body": b"payload"}
    values.update(changes)
    return Message(**values)


def test_route_request_asks_for_standard_json() -> None:
    request = route_request("Orders")
    assert request.code == RequestCode.GET_ROUTEINFO_BY_TOPIC
    assert request.version == 401
    assert request.ext_fields == {"topic": "Orders", "acceptStandardJsonOnly": "true"}
    assert request.serialize_type is SerializeType.JSON
    assert (request.opaque, request.flag, request.body) == (0, 0, b"")


def test_route_response_without_body_is_a_protocol_error() -> None:
    with pytest.raises(RemoteProtocolError):
        parse_route_response(RemotingCommand(0, flag=1))
    with pytest.raises(TopicNotExistError):
        parse_route_response(RemotingCommand(17, flag=1, remark="No topic route info"))


def test_heartbeat_lists_the_inner_producer_once_then_the_groups() -> None:
    request = heartbeat_request("1.2.3.4@x", ["g1", "g2", "g1", "CLIENT_INNER_PRODUCER"])
    assert request.code == RequestCode.HEART_BEAT
    assert request.ext_fields is None
    assert json.loads(request.body) == {
        "clientID": "1.2.3.4@x",
        "consumerDataSet": [],
        "producerDataSet": [
            {"groupName": "CLIENT_INNER_PRODUCER"},
            {"groupName": "g1"},
            {"groupName": "g2"},
        ],
    }
    bare = heartbeat_request("c", ["g"], inner_producer=False)
    assert json.loads(bare.body)["producerDataSet"] == [{"groupName": "g"}]


def test_unregister_and_max_offset() -> None:
    unregister = unregister_client_request("c@i", "g")
    assert (unregister.code, unregister.ext_fields) == (
        35,
        {"producerGroup": "g", "clientID": "c@i"},
    )
    probe = max_offset_request("Orders", 3)
    assert (probe.code, probe.ext_fields) == (30, {"topic": "Orders", "queueId": "3"})
    assert parse_max_offset_response(RemotingCommand(0, flag=1, ext_fields={"offset": "42"})) == 42
    with pytest.raises(TopicNotExistError):
        parse_max_offset_response(RemotingCommand(17, flag=1))


# -- sends ------------------------------------------------------------------------------------


def test_properties_order_and_content() -> None:
    message = _message(
        keys=["k1", "k2"], tags="t", properties={"p": "v"}, delay_level=3, wait_store_msg_ok=False
    )
    assert encode_message_properties(message, KEY) == (
        f"KEYS\x01k1 k2\x02p\x01v\x02UNIQ_KEY\x01{KEY}\x02WAIT\x01false\x02TAGS\x01t\x02DELAY\x013"
    )
    assert encode_message_properties(_message(keys="a b", tags=""), None) == (
        "KEYS\x01a b\x02WAIT\x01true"
    )
    assert encode_message_properties(_message(keys=[]), None) == "WAIT\x01true"


def test_a_prepared_message_builds_sync_and_oneway_requests() -> None:
    prepared = SendRequestFactory("g").prepare(_message(tags="t"), KEY)
    assert prepared.msg_id == KEY
    request = build_send_request(prepared, QUEUE, 1795259977471)
    assert request.code == RequestCode.SEND_MESSAGE_V2
    assert request.flag == 0
    assert request.body == b"payload"
    header = parse_send_request_header(decode_frame(b"".join(request.frame_parts())))
    assert (header.producer_group, header.topic, header.queue_id) == ("g", "Orders", 2)
    assert (header.born_timestamp, header.sys_flag, header.batch) == (1795259977471, 0, False)
    assert decode_properties(header.properties or "")["UNIQ_KEY"] == KEY
    oneway = build_send_request(prepared, QUEUE, 1, oneway=True)
    assert oneway.flag == FLAG_ONEWAY
    assert oneway.is_oneway


def test_a_retry_rebuilds_for_a_new_queue_keeping_key_and_compressed_body() -> None:
    body = b"compress me " * 1000
    prepared = SendRequestFactory("g").prepare(_message(body=body), KEY)
    assert prepared.sys_flag == 769
    first = build_send_request(prepared, QUEUE, 1000)
    retry = build_send_request(prepared, MessageQueue("Orders", "broker-b", 0), 1500)
    assert first.body is retry.body is prepared.body
    assert decompress_body(retry.body, 769) == body
    assert first.ext_fields is not retry.ext_fields
    assert first.ext_fields is not None and retry.ext_fields is not None
    assert (first.ext_fields["e"], first.ext_fields["g"]) == ("2", "1000")
    assert (retry.ext_fields["e"], retry.ext_fields["g"]) == ("0", "1500")
    assert first.ext_fields["i"] == retry.ext_fields["i"] == prepared.properties
    assert KEY in prepared.properties
    first.ext_fields["e"] = "99"  # a request may be mutated without touching the template
    assert build_send_request(prepared, QUEUE, 1).ext_fields == {
        **first.ext_fields,
        "e": "2",
        "g": "1",
    }


def test_sending_to_a_queue_of_another_topic_is_a_local_error() -> None:
    prepared = SendRequestFactory("g").prepare(_message(), KEY)
    with pytest.raises(LocalProtocolError, match="not of topic"):
        build_send_request(prepared, MessageQueue("Other", "b", 0), 1)


def test_factory_settings_shape_the_request() -> None:
    factory = SendRequestFactory(
        "g",
        default_topic="MyDefault",
        default_topic_queue_nums=8,
        compress_threshold=10,
        compress_level=9,
        max_message_size=100,
    )
    prepared = factory.prepare(_message(body=b"x" * 50), KEY)
    assert prepared.body[:2] == b"\x78\xda"
    fields = build_send_request(prepared, QUEUE, 1).ext_fields
    assert (fields["a"], fields["c"], fields["d"]) == ("g", "MyDefault", "8")
    with pytest.raises(MessageValidationError, match="at most 100 bytes"):
        factory.prepare(_message(body=b"x" * 101), KEY)
    with pytest.raises(MessageValidationError):
        SendRequestFactory("bad group")


def test_validation_can_be_skipped_but_property_size_is_always_checked() -> None:
    factory = SendRequestFactory("g")
    with pytest.raises(MessageValidationError):
        factory.prepare(_message(topic="TBW102"), KEY)
    assert factory.prepare(_message(topic="TBW102"), KEY, validate=False).topic == "TBW102"
    huge = _message(properties={"big": "v" * 40000})
    with pytest.raises(MessageValidationError, match="32767"):
        factory.prepare(huge, KEY, validate=False)


def test_batch_carries_each_message_with_its_own_key() -> None:
    messages = [_message(body=f"m{i}".encode(), keys=[f"k{i}"]) for i in range(3)]
    keys = [KEY[:-1] + str(i) for i in range(3)]
    prepared = SendRequestFactory("g").prepare_batch(messages, keys)
    assert prepared.is_batch
    assert prepared.msg_id == ",".join(keys)
    assert prepared.properties == "WAIT\x01true"
    request = build_send_request(prepared, QUEUE, 7)
    assert request.code == RequestCode.SEND_BATCH_MESSAGE
    assert request.ext_fields is not None
    assert (request.ext_fields["m"], request.ext_fields["f"]) == ("true", "0")
    items = decode_batch(request.body)
    assert [i.body for i in items] == [b"m0", b"m1", b"m2"]
    assert [decode_properties(i.properties)["UNIQ_KEY"] for i in items] == keys
    assert [decode_properties(i.properties)["KEYS"] for i in items] == ["k0", "k1", "k2"]


def test_batch_rules_are_enforced() -> None:
    factory = SendRequestFactory("g", max_message_size=100)
    with pytest.raises(LocalProtocolError, match="2 messages but 1 UNIQ_KEYs"):
        factory.prepare_batch([_message(), _message()], [KEY])
    big = [_message(body=b"x" * 60), _message(body=b"x" * 60)]
    with pytest.raises(MessageValidationError, match="batch body"):
        factory.prepare_batch(big, [KEY, KEY])
    no_wait = [_message(wait_store_msg_ok=False)]
    assert factory.prepare_batch(no_wait, [KEY]).properties == "WAIT\x01false"
    large = [_message(body=b"y" * 5000)]
    uncompressed = SendRequestFactory("g").prepare_batch(large, [KEY])
    assert uncompressed.sys_flag == 0
    assert decode_batch(uncompressed.body)[0].body == b"y" * 5000


@pytest.mark.parametrize("batch", [False, True])
def test_prepared_header_fields_equal_the_header_dataclass(batch: bool) -> None:
    factory = SendRequestFactory("g", default_topic_queue_nums=16)
    message = _message(body=b"z" * 5000, flag=3)
    prepared = factory.prepare_batch([message], [KEY]) if batch else factory.prepare(message, KEY)
    request = build_send_request(prepared, QUEUE, 1795259977471)
    header = SendMessageRequestHeader(
        producer_group="g",
        topic="Orders",
        default_topic_queue_nums=16,
        queue_id=2,
        sys_flag=prepared.sys_flag,
        born_timestamp=1795259977471,
        flag=0 if batch else 3,
        properties=prepared.properties,
        batch=batch,
    )
    assert request.ext_fields == header.to_v2_fields()
    assert list(request.ext_fields) == list(header.to_v2_fields())


@pytest.mark.parametrize(
    ("group", "topic", "props"),
    [("g", "Orders", "a\x01b"), ("%RETRY%g", "Or-d_3rs", 'x\x01"\\\u00e9\n'), ("g", "T" * 127, "")],
)
def test_the_pre_encoded_header_is_the_codec_s_json(group: str, topic: str, props: str) -> None:
    """Names and properties that JSON must escape come out as the generic encoder writes them."""
    prepared = SendRequestFactory(group)._prepared(topic, b"body", 0, 7, props, KEY)
    request = build_send_request(prepared, MessageQueue(topic, "b", 4095), 2**41)
    request.opaque, request.flag = 2**31 - 1, FLAG_ONEWAY
    assert b"".join(request.frame_parts()) == encode_frame(request.to_command())
    fields = request.ext_fields
    assert (fields["a"], fields["b"], fields["i"], fields["h"]) == (group, topic, props, "7")


@pytest.mark.parametrize(("times", "limit"), [(1, 16), (0, 3), (17, 2**31 - 1)])
def test_a_consumer_s_retry_send_is_the_one_encoder_with_its_count(times: int, limit: int) -> None:
    """The send-back fallback's SEND_MESSAGE_V2 (docs/consuming.md 2.7): the inner
    producer's group, the count in ``j`` and the maximum in ``l``, byte for byte what the
    generic encoder writes for Java's header."""
    queue = MessageQueue("%RETRY%g", "b", 0)
    request = build_retry_send_request(
        queue,
        body=b"body",
        flag=5,
        properties="RETRY_TOPIC\x01Orders",
        born_timestamp=1795259977471,
        reconsume_times=times,
        max_reconsume_times=limit,
    )
    header = SendMessageRequestHeader(
        producer_group="CLIENT_INNER_PRODUCER",
        topic="%RETRY%g",
        queue_id=0,
        sys_flag=0,
        born_timestamp=1795259977471,
        flag=5,
        properties="RETRY_TOPIC\x01Orders",
        reconsume_times=times,
        max_reconsume_times=limit,
    )
    assert list(request.ext_fields.items()) == list(header.to_v2_fields().items())
    request.opaque = 7
    generic = RemotingCommand(
        RequestCode.SEND_MESSAGE_V2, ext_fields=header.to_v2_fields(), body=b"body", opaque=7
    )
    assert b"".join(request.frame_parts()) == encode_frame(generic)
