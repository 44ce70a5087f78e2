"""The send request header (V1 and V2 names) and the send response."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_decoder import decode_frame
from producer._remoting.request_codes import RequestCode
from producer._remoting.send_header import (
    HeaderFieldError,
    SendMessageRequestHeader,
    SendResponseHeader,
    parse_send_request_header,
    parse_send_response,
    send_status_or_raise,
)
from producer._types.send_status import SendStatus
from producer.errors import (
    BrokerError,
    MessageIllegalError,
    RemoteProtocolError,
    SystemBusyError,
    TopicNotExistError,
)

from .golden import frame
from .support import deterministic

_int32 = st.integers(-(2**31), 2**31 - 1)
_headers = st.builds(
    SendMessageRequestHeader,
    producer_group=st.text(max_size=10),
    topic=st.text(max_size=10),
    default_topic=st.text(max_size=10),
    default_topic_queue_nums=_int32,
    queue_id=_int32,
    sys_flag=_int32,
    born_timestamp=st.integers(-(2**63), 2**63 - 1),
    flag=_int32,
    properties=st.none() | st.text(max_size=20),
    reconsume_times=_int32,
    unit_mode=st.booleans(),
    max_reconsume_times=st.none() | _int32,
    batch=st.booleans(),
)


def _header(**changes: object) -> SendMessageRequestHeader:
    values: dict[str, object] = {
        "producer_group": "g",
        "topic": "T",
        "queue_id": 3,
        "sys_flag": 769,
        "born_timestamp": 1795259977471,
        "flag": 0,
        "properties": "WAIT\x01true",
    }
    values.update(changes)
    return SendMessageRequestHeader(**values)  # type: ignore[arg-type]


def test_v2_fields_are_one_letter_strings_and_l_is_absent_when_null() -> None:
    assert _header().to_v2_fields() == {
        "a": "g",
        "b": "T",
        "c": "TBW102",
        "d": "4",
        "e": "3",
        "f": "769",
        "g": "1795259977471",
        "h": "0",
        "i": "WAIT\x01true",
        "j": "0",
        "k": "false",
        "m": "false",
    }
    fields = _header(max_reconsume_times=16, batch=True).to_v2_fields()
    assert list(fields) == list("abcdefghijklm")
    assert (fields["l"], fields["m"]) == ("16", "true")


def test_v1_fields_use_the_long_names() -> None:
    fields = _header(max_reconsume_times=16).to_v1_fields()
    assert fields == {
        "producerGroup": "g",
        "topic": "T",
        "defaultTopic": "TBW102",
        "defaultTopicQueueNums": "4",
        "queueId": "3",
        "sysFlag": "769",
        "bornTimestamp": "1795259977471",
        "flag": "0",
        "properties": "WAIT\x01true",
        "reconsumeTimes": "0",
        "unitMode": "false",
        "maxReconsumeTimes": "16",
        "batch": "false",
    }


@deterministic
@given(_headers)
def test_both_field_sets_round_trip(header: SendMessageRequestHeader) -> None:
    assert SendMessageRequestHeader.from_v2_fields(header.to_v2_fields()) == header
    assert SendMessageRequestHeader.from_v1_fields(header.to_v1_fields()) == header


def test_request_code_picks_the_field_names() -> None:
    header = _header()
    v1 = RemotingCommand(RequestCode.SEND_MESSAGE, ext_fields=header.to_v1_fields())
    v2 = RemotingCommand(RequestCode.SEND_MESSAGE_V2, ext_fields=header.to_v2_fields())
    batch = RemotingCommand(RequestCode.SEND_BATCH_MESSAGE, ext_fields=header.to_v2_fields())
    assert parse_send_request_header(v1) == parse_send_request_header(v2) == header
    assert parse_send_request_header(batch) == header
    with pytest.raises(RemoteProtocolError):
        parse_send_request_header(RemotingCommand(RequestCode.HEART_BEAT))


@pytest.mark.parametrize("letter", list("abcdefgh"))
def test_each_required_v2_field_is_named_when_missing(letter: str) -> None:
    fields = _header().to_v2_fields()
    del fields[letter]
    with pytest.raises(HeaderFieldError, match=f"'{letter}' is missing") as raised:
        SendMessageRequestHeader.from_v2_fields(fields)
    assert raised.value.field == letter
    assert isinstance(raised.value, RemoteProtocolError)


def test_missing_v1_field_is_named_by_its_long_name() -> None:
    fields = _header().to_v1_fields()
    del fields["bornTimestamp"]
    with pytest.raises(HeaderFieldError, match="'bornTimestamp' is missing"):
        SendMessageRequestHeader.from_v1_fields(fields)


@pytest.mark.parametrize(
    ("letter", "value", "problem"),
    [
        ("e", "x", "not an integer"),
        ("e", " 1", "not an integer"),
        ("e", "1_0", "not an integer"),
        ("e", "\u0661", "not an integer"),  # Arabic-Indic one: int() takes it, Java does not
        ("e", "2147483648", "out of range"),
        ("g", "9223372036854775808", "out of range"),
        ("l", "1.5", "not an integer"),
    ],
)
def test_malformed_integers_are_named(letter: str, value: str, problem: str) -> None:
    fields = {**_header().to_v2_fields(), letter: value}
    with pytest.raises(HeaderFieldError, match=f"'{letter}' is {problem}"):
        SendMessageRequestHeader.from_v2_fields(fields)


def test_optional_fields_default_like_java() -> None:
    fields = {k: v for k, v in _header().to_v2_fields().items() if k in "abcdefgh"}
    header = SendMessageRequestHeader.from_v2_fields(fields)
    assert header.properties is None
    assert (header.reconsume_times, header.unit_mode, header.batch) == (0, False, False)
    fields.update(k="TRUE", m="yes", g="+5")
    header = SendMessageRequestHeader.from_v2_fields(fields)
    assert (header.unit_mode, header.batch, header.born_timestamp) == (True, False, 5)


# -- responses ------------------------------------------------------------------------------


def test_golden_success_response_parses() -> None:
    response = decode_frame(frame("java-json/06_send_sync_keys_tags_property.response").raw)
    status, header = parse_send_response(response)
    assert status is SendStatus.SEND_OK
    assert header == SendResponseHeader(
        msg_id="7F00000200002A9F0000000000000000",
        queue_id=0,
        queue_offset=0,
        transaction_id=None,
        region_id="DefaultRegion",
        trace_on=True,
    )
    assert SendResponseHeader.from_fields(header.to_fields()) == header
    assert header.to_fields() == response.ext_fields


def test_golden_batch_response_has_three_offset_ids() -> None:
    response = decode_frame(frame("java-rocketmq/08_send_batch_3.response").raw)
    _, header = parse_send_response(response)
    assert len(header.msg_id.split(",")) == 3
    assert header.queue_id == int(response.field("queueId") or -1) == 1


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("java-json/12_send_error_message_illegal.response", MessageIllegalError),
        ("java-rocketmq/15_send_error_topic_not_exist_broker.response", TopicNotExistError),
    ],
)
def test_golden_error_responses_raise_their_broker_error(
    name: str, error: type[BrokerError]
) -> None:
    response = decode_frame(frame(name).raw)
    with pytest.raises(error) as raised:
        parse_send_response(response)
    assert raised.value.code == response.code
    assert raised.value.remark == response.remark


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (0, SendStatus.SEND_OK),
        (10, SendStatus.FLUSH_DISK_TIMEOUT),
        (11, SendStatus.SLAVE_NOT_AVAILABLE),
        (12, SendStatus.FLUSH_SLAVE_TIMEOUT),
    ],
)
def test_store_statuses(code: int, status: SendStatus) -> None:
    assert send_status_or_raise(code, None) is status


def test_other_codes_raise_typed_broker_errors() -> None:
    with pytest.raises(SystemBusyError):
        send_status_or_raise(2, "busy")
    with pytest.raises(BrokerError) as raised:
        send_status_or_raise(4242, "odd")
    assert type(raised.value) is BrokerError
    assert raised.value.code == 4242


def test_response_defaults_and_errors() -> None:
    header = SendResponseHeader.from_fields(
        {"msgId": "X", "queueId": "1", "queueOffset": "9", "MSG_REGION": "", "TRACE_ON": "false"}
    )
    assert (header.region_id, header.trace_on, header.transaction_id) == (
        "DefaultRegion",
        False,
        None,
    )
    with pytest.raises(HeaderFieldError, match="'msgId' is missing"):
        SendResponseHeader.from_fields({"queueId": "1", "queueOffset": "9"})
    with pytest.raises(HeaderFieldError, match="'queueOffset'"):
        parse_send_response(
            RemotingCommand(
                0, flag=1, ext_fields={"msgId": "X", "queueId": "1", "queueOffset": "x"}
            )
        )
    with_txn = SendResponseHeader("X", 1, 2, transaction_id="t")
    assert SendResponseHeader.from_fields(with_txn.to_fields()) == with_txn
