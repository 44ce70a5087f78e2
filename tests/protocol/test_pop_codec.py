"""Pop's requests and answers (``producer._remoting.pop_requests``) against the frames the
official 5.2.0 Java client and a real 5.2.0 broker exchanged (README of
``tests/golden/sessions/pop_5_2_0``): what we build equals what Java sent, field for field
(batch-ack bodies byte for byte); what we read from the broker's answers gives the very
receipt handles Java built and sent back."""

from __future__ import annotations

import pytest

from producer._consume.pop_retry import PopAction, pop_step
from producer._consume.received import decode_pulled
from producer._remoting.pop_batch_ack import (
    batch_ack_request,
    bitset_bytes,
    bitset_offsets,
    decode_batch_ack,
)
from producer._remoting.pop_requests import (
    POP_CK,
    InitMode,
    PopParams,
    ReceiptHandle,
    ack_request,
    change_invisible_request,
    check_ack,
    parse_change_response,
    parse_pop_response,
    pop_request,
)
from producer._remoting.request_codes import RequestCode
from producer._types.consumer.status import ConsumeStatus
from producer.errors import BrokerError, RemoteProtocolError
from tests.protocol.pop_session import PUSH, command

BROKER = "broker5-a"


def handles_of(answer_seq: int, session: str = "b_client_api") -> list[ReceiptHandle]:
    """The handles Java builds for each message of a pop answer (``processPopResponse``)."""
    answer = parse_pop_response(command(answer_seq, session))
    handles = []
    for message in decode_pulled(answer.body, BROKER):
        carried = message.properties.get(POP_CK)
        if carried is not None:
            handles.append(ReceiptHandle.parse(carried))
        else:
            q = message.queue
            handles.append(answer.handle_for(BROKER, q.queue_id, message.queue_offset))
    return handles


def test_pop_request_is_the_java_clients() -> None:
    sent = command(15)  # B1: queue 0, max 5, invisible 8000, poll 3000, initMode MIN
    params = PopParams(
        group="PopApiGroup", topic="PopApiTopic", broker_name=BROKER, max_messages=5,
        invisible_ms=8000, poll_ms=3000, born_ms=1795788628112, queue_id=0,
        init_mode=InitMode.MIN,
    )  # fmt: skip
    ours = pop_request(params)
    assert (ours.code, ours.ext_fields, ours.body) == (sent.code, sent.ext_fields, b"")
    ordered = command(57)
    fields = ordered.ext_fields or {}
    params = PopParams(
        group="PopOrderGroup", topic="PopOrderTopic", broker_name=BROKER, max_messages=2,
        invisible_ms=6000, poll_ms=3000, born_ms=int(fields["bornTime"]),
        init_mode=InitMode.MIN, order=True,
    )  # fmt: skip
    assert pop_request(params).ext_fields == fields


def test_handles_built_from_a_pop_answer_are_the_ones_java_acked() -> None:
    handles = handles_of(16)
    assert [str(h) for h in handles] == [
        f"0 1795788628152 8000 6 0 broker5-a 0 {offset}" for offset in range(5)
    ]
    for seq, handle in ((17, handles[0]), (23, handles[3])):
        fields = command(seq).ext_fields or {}
        assert fields["extraInfo"] == str(handle)


def test_ack_request_is_the_java_clients_on_the_normal_and_the_retry_topic() -> None:
    (first,) = handles_of(16)[:1]
    assert ack_request("PopApiGroup", "PopApiTopic", first).ext_fields == command(17).ext_fields
    (retried,) = handles_of(36)  # b-4 back from the pop retry topic, the broker's POP_CK
    assert retried.retry and str(retried) == "0 1795788643262 8000 4 1 broker5-a 0 0"
    sent = command(37)
    assert ack_request("PopApiGroup", "PopApiTopic", retried).ext_fields == sent.ext_fields
    assert (sent.ext_fields or {})["topic"] == "%RETRY%PopApiGroup_PopApiTopic"


def test_batch_ack_body_is_byte_for_byte_the_java_clients() -> None:
    handles = handles_of(16)
    ours = batch_ack_request("PopApiGroup", "PopApiTopic", handles[1:3])
    sent = command(21)
    assert (ours.code, ours.ext_fields, ours.body) == (sent.code, None, sent.body)
    broker, acks = decode_batch_ack(sent.body)
    assert broker == BROKER and [h.queue_offset for h, _, _ in acks] == [1, 2]
    # O7b: o-2 of an orderly pop whose check point starts at 1.
    orderly = handles_of(76)
    assert batch_ack_request("PopOrderGroup", "PopOrderTopic", orderly[1:]).body == command(81).body


def test_change_request_and_the_new_handle_from_its_answer() -> None:
    b3 = handles_of(16)[3]
    sent = command(23)
    assert change_invisible_request("PopApiGroup", "PopApiTopic", b3, 20000).ext_fields == (
        sent.ext_fields
    )
    renewed = parse_change_response(command(24), b3)
    assert str(renewed) == "3 1795788628328 20000 6 0 broker5-a 0 3"  # README B5
    o1 = handles_of(76)[0]
    assert change_invisible_request("PopOrderGroup", "PopOrderTopic", o1, 10000).ext_fields == (
        command(77).ext_fields
    )
    renewed = parse_change_response(command(78), o1)
    assert (command(79).ext_fields or {})["extraInfo"] == str(renewed)


def test_orderly_answers_carry_each_messages_delivery_count() -> None:
    first = parse_pop_response(command(58))
    assert first.revive_qid == 999 and first.reconsume_times(0, 0) == 0
    again = parse_pop_response(command(76))  # o-1 again (qo0%1 1), o-2 for the first time
    assert again.reconsume_times(0, 1) == 1 and again.reconsume_times(0, 2) == 0


def test_nothing_found_and_refusals() -> None:
    empty = parse_pop_response(command(32))  # 210 POLLING_TIMEOUT
    assert not empty.found and empty.body == b"" and empty.msg_offsets == {}
    with pytest.raises(BrokerError) as caught:
        check_ack(command(28))  # 208 NO_MESSAGE: offset 1000 is outside the queue
    assert caught.value.code == 208 and "commit:1000" in str(caught.value)


@pytest.mark.parametrize(
    "text", ["", "1 2 3", "a 1 2 3 0 b 0 0", "0 1 2 3 2 b 0 0", "0 1 2 3 0 b 0 0 9"]
)
def test_a_malformed_handle_is_a_remote_protocol_error(text: str) -> None:
    with pytest.raises(RemoteProtocolError):
        ReceiptHandle.parse(text)


@pytest.mark.parametrize("bits", [[], [0], [1, 2], [7, 8], [0, 63, 64, 200]])
def test_bitset_round_trip_is_javas_to_byte_array(bits: list[int]) -> None:
    data = bitset_bytes(bits)
    assert bitset_offsets(data) == bits
    assert data == b"" or data[-1] != 0  # toByteArray drops trailing zero bytes


def test_codes_are_the_5x_ones() -> None:
    assert (RequestCode.POP_MESSAGE, RequestCode.ACK_MESSAGE) == (200050, 200051)
    assert (RequestCode.CHANGE_MESSAGE_INVISIBLETIME, RequestCode.BATCH_ACK_MESSAGE) == (
        200053,
        200151,
    )


def test_the_push_consumers_acks_and_its_retry_are_ours() -> None:
    """Session a: a pop over both queues (#48: check points start at 1 on queue 0 and 0 on
    queue 1); the 5.2.0 push consumer acked pa-1 and pa-3 and answered pa-later
    RECONSUME_LATER with a change to 10 s (popDelayLevel[0]); the retried copy (#60) was
    acked on the pop retry topic (#62). PopConsumer's steps build the same requests."""
    group, topic = "PopPushGroup", "PopTopic"
    later, pa1, pa3 = handles_of(48, PUSH)
    step = pop_step(ConsumeStatus.RECONSUME_LATER, 0, None, 0, 16)
    assert step.action is PopAction.RETRY
    change = change_invisible_request(group, topic, later, step.delay_ms)
    assert change.ext_fields == command(51, PUSH).ext_fields
    assert ack_request(group, topic, pa1).ext_fields == command(52, PUSH).ext_fields
    assert ack_request(group, topic, pa3).ext_fields == command(53, PUSH).ext_fields
    (retried,) = handles_of(60, PUSH)
    assert ack_request(group, topic, retried).ext_fields == command(62, PUSH).ext_fields
