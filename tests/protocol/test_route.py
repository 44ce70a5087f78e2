"""Route data: both name-server encodings, byte for byte, and the publish queues."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from producer._remoting.frame_decoder import decode_frame
from producer._remoting.producer_requests import parse_route_response
from producer._remoting.route import (
    BrokerData,
    QueueData,
    TopicRouteData,
    broker_names,
    build_publish_queues,
    encode_route_data,
    master_addresses,
    parse_route_data,
)
from producer._types.message import MessageQueue
from producer.errors import RemoteProtocolError, TopicNotExistError

from .golden import all_frames, frame
from .support import deterministic

ROUTE_BODIES = [
    (f.name, f.info["body_is_standard_json"])
    for f in all_frames()
    if "body_is_standard_json" in f.info
]


@pytest.mark.parametrize(("name", "standard"), ROUTE_BODIES)
def test_golden_route_bodies_reencode_byte_for_byte(name: str, standard: bool) -> None:
    body = decode_frame(frame(name).raw).body
    route = parse_route_data(body)
    assert encode_route_data(route, legacy=not standard) == body


def test_legacy_and_standard_bodies_of_one_route_convert_into_each_other() -> None:
    legacy = decode_frame(frame("probe/01_route_json_version0_legacy_body.response").raw).body
    standard = decode_frame(
        frame("probe/02_route_json_version0_acceptStandardJsonOnly.response").raw
    ).body
    assert b'{0:"127.0.0.2:10911"}' in legacy
    with pytest.raises(json.JSONDecodeError):
        json.loads(legacy)
    assert parse_route_data(legacy) == parse_route_data(standard)
    assert encode_route_data(parse_route_data(legacy), legacy=False) == standard
    assert encode_route_data(parse_route_data(standard), legacy=True) == legacy


def test_two_broker_route_gives_queues_sorted_by_broker_name() -> None:
    body = decode_frame(frame("java-json/04_route_two_broker_topic.response").raw).body
    route = parse_route_data(body)
    assert [b.broker_name for b in route.broker_datas] == ["broker-b", "broker-a"]
    queues = build_publish_queues("GoldenTwoBrokerTopic", route)
    assert [(q.broker_name, q.queue_id) for q in queues] == [
        ("broker-a", 0),
        ("broker-a", 1),
        ("broker-b", 0),
        ("broker-b", 1),
    ]
    assert all(q.topic == "GoldenTwoBrokerTopic" for q in queues)
    assert master_addresses(route) == {"broker-b": "127.0.0.2:10921", "broker-a": "127.0.0.2:10911"}
    assert list(broker_names(route)) == ["broker-b", "broker-a"]


def test_read_only_route_has_no_publish_queue_and_tbw102_is_writable() -> None:
    read_only = decode_frame(frame("java-json/05_route_readonly_topic.response").raw)
    assert build_publish_queues("GoldenReadOnlyTopic", parse_route_response(read_only)) == []
    tbw = decode_frame(frame("java-json/01_route_default_topic_TBW102.response").raw)
    assert len(build_publish_queues("TBW102", parse_route_response(tbw))) == 8  # perm 7


def test_missing_topic_response_raises_topic_not_exist() -> None:
    response = decode_frame(frame("java-json/03_route_missing_topic.response").raw)
    with pytest.raises(TopicNotExistError) as raised:
        parse_route_response(response)
    assert raised.value.code == 17
    assert "GoldenNoSuchTopic" in str(raised.value)


def _route(
    *brokers: BrokerData, queues: list[QueueData], order: str | None = None
) -> TopicRouteData:
    return TopicRouteData(queue_datas=queues, broker_datas=list(brokers), order_topic_conf=order)


def test_brokers_without_a_master_and_unwritable_queues_are_left_out() -> None:
    route = _route(
        BrokerData("c", "slave-only", {1: "h:1"}),
        BrokerData("c", "ok", {0: "h:2", 1: "h:3"}),
        BrokerData("c", "read-only", {0: "h:4"}),
        queues=[
            QueueData("slave-only", 4, 4, 6),
            QueueData("read-only", 4, 4, 4),
            QueueData("ok", 2, 3, 2),
            QueueData("ghost", 4, 4, 6),  # no broker data at all
        ],
    )
    assert build_publish_queues("T", route) == [MessageQueue("T", "ok", i) for i in range(3)]
    assert master_addresses(route) == {"ok": "h:2", "read-only": "h:4"}


def test_first_broker_data_of_a_name_wins_like_java() -> None:
    route = _route(
        BrokerData("c", "b", {1: "slave:1"}),
        BrokerData("c", "b", {0: "master:1"}),
        queues=[QueueData("b", 1, 1, 6)],
    )
    assert master_addresses(route) == {}
    assert build_publish_queues("T", route) == []


def test_order_topic_conf_lists_the_queues() -> None:
    route = _route(queues=[], order="b1:2;b0:1")
    assert build_publish_queues("T", route) == [
        MessageQueue("T", "b1", 0),
        MessageQueue("T", "b1", 1),
        MessageQueue("T", "b0", 0),
    ]
    with pytest.raises(RemoteProtocolError):
        build_publish_queues("T", _route(queues=[], order="b1:x"))


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"[]",
        b'{"brokerDatas": 5}',
        b'{"brokerDatas":[{"brokerAddrs":{x:"a"},"brokerName":"b","cluster":"c"}]}',
        b'{"queueDatas":[{"brokerName":"b"}]}',
        b"\xff\xfe",
        b'{"brokerDatas":[{"brokerAddrs":{0:"a"}',
    ],
)
def test_invalid_route_bodies_raise_remote_protocol_error(body: bytes) -> None:
    with pytest.raises(RemoteProtocolError):
        parse_route_data(body)


@deterministic
@given(st.binary(max_size=200))
def test_garbage_route_bodies_raise_only_remote_protocol_error(body: bytes) -> None:
    with contextlib.suppress(RemoteProtocolError):
        parse_route_data(body)


# -- round trips with adversarial strings ---------------------------------------------------

# Every code point a Java string can carry through UTF-8 (lone surrogates cannot).
_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_tricky = st.sampled_from(['{0:"x"}', ",1:", '\\"', "\\", '"', "0:", "{", "}", ",", ":", "9", "/"])
_strings = st.one_of(_text, _tricky, st.lists(_tricky, max_size=4).map("".join))
_broker = st.builds(
    BrokerData,
    cluster=_strings,
    broker_name=_strings,
    broker_addrs=st.dictionaries(st.integers(0, 2**40), _strings, max_size=3),
)
_queue = st.builds(
    QueueData,
    broker_name=_strings,
    read_queue_nums=st.integers(0, 1024),
    write_queue_nums=st.integers(0, 1024),
    perm=st.integers(0, 15),
    topic_sys_flag=st.integers(0, 7),
)
_routes = st.builds(
    TopicRouteData,
    queue_datas=st.lists(_queue, max_size=3),
    broker_datas=st.lists(_broker, max_size=3),
    filter_server_table=st.dictionaries(_strings, st.lists(_strings, max_size=2), max_size=2),
    order_topic_conf=st.none() | _strings,
)

_ADVERSARIAL = TopicRouteData(
    queue_datas=[QueueData('q{1:"x"},2:', 1, 1, 6)],
    broker_datas=[
        BrokerData('{0:"1",', '"b\\",3:', {0: '",0:{', 17: "\\"}),
        BrokerData("", "", {}),
    ],
    filter_server_table={"k:{0:1}": ['"', ",4:"]},
    order_topic_conf='a:1;"{5:"',
)


@deterministic
@given(_routes, st.booleans())
@example(_ADVERSARIAL, True)
@example(_ADVERSARIAL, False)
def test_route_round_trips_in_both_encodings(route: TopicRouteData, legacy: bool) -> None:
    body = encode_route_data(route, legacy=legacy)
    assert parse_route_data(body) == route


@settings(deterministic, max_examples=40)
@given(_routes)
def test_standard_encoding_is_plain_json(route: TopicRouteData) -> None:
    document = json.loads(encode_route_data(route, legacy=False))
    assert [b["brokerAddrs"] for b in document["brokerDatas"]] == [
        {str(k): v for k, v in sorted(b.broker_addrs.items())} for b in route.broker_datas
    ]
    assert encode_route_data(route, legacy=False).isascii()  # BrowserCompatible escapes


def test_fastjson_escaping_of_each_mode() -> None:
    route = _route(BrokerData("é/\u2028\x01\t", "b", {0: "a"}), queues=[])
    standard = encode_route_data(route, legacy=False)
    legacy = encode_route_data(route, legacy=True)
    assert b'"cluster":"\\u00E9\\/\\u2028\\u0001\\t"' in standard
    assert '"cluster":"é/\\u2028\\u0001\\t"'.encode() in legacy


def test_route_body_fed_whole_with_trailing_bytes_and_cut_short() -> None:
    body = decode_frame(frame("probe/01_route_json_version0_legacy_body.response").raw).body
    assert parse_route_data(body + b" \n") == parse_route_data(body)  # JSON allows whitespace
    for broken in (body + b"x", body + b"}", body[:-1], body[: len(body) // 2]):
        with pytest.raises(RemoteProtocolError):
            parse_route_data(broken)
