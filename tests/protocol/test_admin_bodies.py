"""The admin bodies and headers (producer._remoting.admin / assignment): fastjson's
non-JSON shapes written and read back, and bad input refused naming what is wrong."""

from __future__ import annotations

import pytest

from producer._remoting.admin import (
    TopicOffset,
    fastjson,
    parse_create_topic,
    parse_queue_table,
    topic_stats_body,
)
from producer._remoting.assignment import (
    MessageRequestMode,
    assignment_body,
    parse_query_assignment,
    parse_set_request_mode,
)
from producer._remoting.send_header import HeaderFieldError
from producer._types.message import MessageQueue
from producer.errors import RemoteProtocolError


def test_fastjson_writes_bare_int_keys_queue_keys_and_drops_nulls() -> None:
    queue = MessageQueue('%RETRY%g"1', "broker-a", 3)
    text = fastjson({"a": {0: "x", 1: None}, "q": {queue: 1.5}, "n": None, "b": [True, False]})
    assert text == (
        '{"a":{0:"x"},"q":{{"brokerName":"broker-a","queueId":3,"topic":"%RETRY%g\\"1"}:1.5},'
        '"b":[true,false]}'
    )


def test_fastjson_refuses_what_it_cannot_write() -> None:
    with pytest.raises(TypeError, match="map key"):
        fastjson({(1, 2): 1})
    with pytest.raises(TypeError, match="cannot write set"):
        fastjson({1, 2})


def test_a_queue_table_reads_back_in_written_order() -> None:
    queues = [MessageQueue("T|x", "b\\1", 2), MessageQueue("T|x", "b\\1", 0)]
    body = topic_stats_body((q, TopicOffset(1, 5, 7)) for q in queues)
    table = parse_queue_table(body)
    assert [q for q, _ in table] == queues
    assert table[0][1] == {"lastUpdateTimestamp": 7, "maxOffset": 5, "minOffset": 1}


@pytest.mark.parametrize(
    "body", [b"", b"{}", b'{"offsetTable":[1]}', b'{"offsetTable":{"x":1}}', b"{{"]
)
def test_a_malformed_queue_table_is_a_protocol_error(body: bytes) -> None:
    with pytest.raises(RemoteProtocolError, match="queue table"):
        parse_queue_table(body)


def test_create_topic_header_names_a_missing_or_bad_field() -> None:
    fields = {
        "topic": "T",
        "defaultTopic": "TBW102",
        "readQueueNums": "8",
        "writeQueueNums": "4",
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
        "order": "true",
    }
    header = parse_create_topic(fields)
    assert (header.read_queue_nums, header.write_queue_nums, header.topic_sys_flag) == (8, 4, 0)
    assert header.order
    for name in ("topic", "perm", "defaultTopic"):
        with pytest.raises(HeaderFieldError) as missing:
            parse_create_topic({k: v for k, v in fields.items() if k != name})
        assert missing.value.field == name
    with pytest.raises(HeaderFieldError, match="not an integer"):
        parse_create_topic({**fields, "perm": "rw"})


def test_assignment_bodies() -> None:
    mode = parse_set_request_mode(b'{"consumerGroup":"g","mode":"POP","topic":"t"}')
    assert (mode.mode, mode.pop_share_queue_num) == (MessageRequestMode.POP, 0)
    query = parse_query_assignment(b'{"clientId":"c","consumerGroup":"g","topic":"t"}')
    assert (query.strategy_name, query.message_model) == ("AVG", "CLUSTERING")
    assert assignment_body(None, MessageRequestMode.PULL) == b"{}"
    assert assignment_body([MessageQueue("t", "b", -1)], MessageRequestMode.POP) == (
        b'{"messageQueueAssignments":[{"messageQueue":{"brokerName":"b","queueId":-1,'
        b'"topic":"t"},"mode":"POP"}]}'
    )
    for bad in (b"", b'{"mode":"PUSH","topic":"t","consumerGroup":"g"}'):
        with pytest.raises(RemoteProtocolError, match="SetMessageRequestModeRequestBody"):
            parse_set_request_mode(bad)
