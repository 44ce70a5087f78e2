"""The consumer's wire core against the recorded Java 4.9.4 session: commit-log records,
tag hashes, and the requests a push consumer sends (docs/consuming.md 1.3-1.6)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

import latency_fault
from latency_fault import java_string_hash
from producer._remoting.consumer_requests import (
    ConsumeFromWhere,
    ConsumerData,
    MessageModel,
    PullParams,
    PullStatus,
    consumer_heartbeat_request,
    lock_batch_request,
    parse_lock_batch,
    parse_pull_response,
    pull_request,
    send_back_request,
    update_offset_request,
)
from producer._remoting.store_record import (
    StoreRecord,
    body_crc,
    decode_records,
    encode_record,
)
from producer._types.message import MessageQueue
from producer.consumer._sql_filters import parse_subscription
from producer.errors import BrokerError, RemoteProtocolError
from tests.consumer.session import session_command, session_frames

FOUND_PULLS = [49, 50, 71, 76, 78, 205, 268, 271, 329, 331, 345, 412, 517]


@pytest.mark.parametrize("seq", FOUND_PULLS)
def test_pulled_records_decode_and_re_encode_byte_for_byte(seq: int) -> None:
    body = session_command(seq).body
    records = decode_records(body)
    assert records
    assert b"".join(map(encode_record, records)) == body
    for record in records:
        assert record.store_size == len(encode_record(record))
        assert record.body_crc == body_crc(record.body)


def test_record_fields_match_the_capture() -> None:
    result = parse_pull_response(session_command(271))
    assert result.status is PullStatus.FOUND
    assert (result.next_begin_offset, result.min_offset, result.max_offset) == (3, 0, 3)
    first = result.records[0]
    assert (first.topic, first.queue_id, first.queue_offset) == ("SpecTopic", 1, 0)
    assert first.body == b"body-ok-1"
    assert first.body_crc == 568412560  # docs/consuming.md 1.6, observed
    assert first.store_host == "127.0.0.3:30911"
    assert first.properties["TAGS"] == "TagA"
    assert [r.queue_offset for r in result.records] == [0, 1, 2]


def test_retry_copy_carries_the_observed_properties() -> None:
    (record,) = decode_records(session_command(71).body)
    assert record.topic == "%RETRY%SpecGroup"
    assert record.reconsume_times == 1
    assert record.properties["RETRY_TOPIC"] == "SpecTopic"
    assert record.properties["DELAY"] == "1"  # the schedule service's quirk (3.3)


def _record(**overrides: object) -> StoreRecord:
    fields: dict[str, object] = {
        "topic": "T",
        "queue_id": 1,
        "queue_offset": 7,
        "commit_log_offset": 4096,
        "body": b"hello",
        "properties": {"UNIQ_KEY": "AB", "TAGS": "x"},
        "born_timestamp": 1,
        "born_host": "10.0.0.1:5000",
        "store_timestamp": 2,
        "store_host": "127.0.0.1:10911",
    }
    fields.update(overrides)
    return StoreRecord(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("mangle", "problem"),
    [
        (lambda b: b[:-1], "TOTALSIZE"),
        (lambda b: b[:40], "TOTALSIZE"),
        (lambda b: b[:4] + b"\x00\x00\x00\x01" + b[8:], "magic"),
        (lambda b: struct.pack(">i", len(b) + 9) + b[4:] + b"\x00" * 9, "fields take"),
    ],
)
def test_a_malformed_record_is_an_error_not_a_silent_skip(mangle, problem) -> None:  # type: ignore[no-untyped-def]
    good = encode_record(_record())
    with pytest.raises(RemoteProtocolError, match=problem):
        decode_records(mangle(good) + encode_record(_record(queue_offset=8)))


@given(
    body=st.binary(max_size=200),
    topic=st.text(alphabet="abcXYZ%_-0", min_size=1, max_size=40),
    reconsume=st.integers(0, 2**31 - 1),
    offset=st.integers(0, 2**62),
)
def test_records_round_trip(body: bytes, topic: str, reconsume: int, offset: int) -> None:
    record = _record(body=body, topic=topic, reconsume_times=reconsume, commit_log_offset=offset)
    assert decode_records(encode_record(record) * 2) == [record, record]


@given(st.binary(max_size=300))
def test_garbage_bodies_raise_only_remote_protocol_errors(data: bytes) -> None:
    with contextlib.suppress(RemoteProtocolError):
        decode_records(data)


def test_java_string_hash() -> None:
    assert java_string_hash("TagA") == 2598919
    assert java_string_hash("TagB") == 2598920
    assert java_string_hash("") == 0
    assert java_string_hash("polygenelubricants") == -(2**31)  # wraps to Integer.MIN_VALUE
    assert java_string_hash("\U0001f600") == 1772899  # a surrogate pair: two code units
    assert java_string_hash("\ud800") == 55296  # a lone surrogate hashes, as in Java
    assert java_string_hash is latency_fault.java_string_hash  # tags and keys: one hash


def test_subscription_parsing() -> None:
    sub = parse_subscription("T", "TagA || TagB ||  || TagA")
    assert sub.tags == ("TagA", "TagB")
    assert sub.codes == (2598919, 2598920)
    assert sub.matches("TagA") and not sub.matches("TagC") and not sub.matches(None)
    assert sub.matches_code(2598919, True) and sub.matches_code(5, False)
    assert not sub.matches_code(5, True)
    for everything in (None, "", "*", " * "):
        assert parse_subscription("T", everything).is_all


def test_heartbeat_body_has_the_java_shape() -> None:
    recorded = json.loads(session_command(29).body)
    topic = parse_subscription("SpecTopic", "TagA || TagB")
    retry = parse_subscription("%RETRY%SpecGroup", "*")
    data = ConsumerData(
        "SpecGroup",
        MessageModel.CLUSTERING,
        ConsumeFromWhere.FIRST_OFFSET,
        (topic, retry),
        {"SpecTopic": 1795375980160, "%RETRY%SpecGroup": 1795375980162},
    )
    ours = json.loads(consumer_heartbeat_request("192.0.2.2@first", [data]).body)
    assert ours == recorded


def test_pull_request_fields_match_the_capture() -> None:
    recorded = session_frames()[42]["header"]["extFields"]
    params = PullParams(
        group="SpecGroup",
        queue=MessageQueue("SpecTopic", "broker-s", 0),
        offset=0,
        max_messages=32,
        commit_offset=0,
        suspend_timeout_ms=15000,
        sub_version=1795375980338,
    )
    assert pull_request(params).ext_fields == recorded
    assert dataclasses.replace(params, commit_offset=3).sys_flag == 3  # 0x1 once > 0


def test_send_back_and_update_offset_fields_match_the_capture() -> None:
    recorded = session_frames()[55]["header"]["extFields"]
    ours = send_back_request(
        group="SpecGroup",
        commit_log_offset=654,
        delay_level=-1,
        origin_msg_id="C000020269DC5FFD2B27705774730003",
        origin_topic="SpecTopic",
        max_reconsume_times=1,
    )
    assert ours.ext_fields == recorded
    update = update_offset_request("SpecGroup", MessageQueue("SpecTopic", "broker-s", 0), 3)
    assert update.ext_fields == session_frames()[73]["header"]["extFields"]


def test_lock_body_matches_the_capture_and_an_empty_grant_is_not_an_error() -> None:
    recorded = session_command(235).body
    ours = lock_batch_request(
        "192.0.2.2@orderly", "SpecOrderlyGroup", [MessageQueue("SpecTopic", "broker-s", 0)]
    )
    assert json.loads(ours.body) == json.loads(recorded)
    empty = session_command(235).make_response(0, body=b'{"lockOKMQSet":[]}')
    assert parse_lock_batch(empty) == set()


def test_pull_error_codes_raise_broker_errors() -> None:
    response = session_command(42).make_response(
        25, remark="the consumer's subscription not latest"
    )
    with pytest.raises(BrokerError) as info:
        parse_pull_response(response)
    assert info.value.code == 25
