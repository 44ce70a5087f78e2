"""Request-reply against the recorded 4.9.4 session (golden a_request_reply): our request's
properties, our reply send (325), the dev broker's push (326) made from the recorded Java
reply send, the broker's answer, and our answer to the push."""

from __future__ import annotations

import itertools
import json
import random

import msgspec
import pytest

from latency_fault import java_string_hash
from producer import Message
from producer._remoting.command import RemotingCommand
from producer._remoting.frame_decoder import decode_frame, decode_payload
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.producer_requests import (
    SendRequestFactory,
    build_send_request,
    heartbeat_request,
)
from producer._remoting.reply import create_reply, reply_send_command, request_properties
from producer._remoting.request_codes import FLAG_RESPONSE, LanguageCode, RequestCode
from producer._reply.requester import Requester, _ReplyWaiter
from producer._types.message import MessageQueue
from producer.consumer import ReceivedMessage
from producer.testing._broker import Broker
from producer.testing._faults import NO_FAULT, FaultDecision
from producer.testing._store import TopicConfig
from tests.protocol.golden import golden_dir

SESSION = golden_dir() / "sessions" / "features_4_9_4" / "a_request_reply"
REQUESTER = "192.0.2.2@requester"


def raw(seq: int) -> bytes:
    lines = (SESSION / "frames.jsonl").read_text().splitlines()
    frame = next(f for f in map(json.loads, lines) if f["seq"] == seq)
    return (SESSION / frame["file"]).read_bytes()


def golden(seq: int) -> RemotingCommand:
    return decode_frame(raw(seq))


def as_java(command: RemotingCommand, java: RemotingCommand) -> bytes:
    """Our command with the recording's opaque and Java's language, encoded."""
    command.opaque = java.opaque
    command.language = LanguageCode.JAVA
    command.serialize_type = java.serialize_type
    return encode_frame(command)


def test_our_request_is_the_recorded_one_byte_for_byte() -> None:
    java = golden(58)  # R1: request(m, 5000) to ReqTopic on broker-b
    fields = java.ext_fields
    assert fields is not None
    sent = Message(
        "ReqTopic",
        b"request-sync",
        tags="TagReq",
        keys="req-sync",
        properties={"reqProp": "v-sync"},
    )
    uniq = "C000020239BB5FFD2B2788ED323B0000"
    prepared = SendRequestFactory("RequesterGroup").prepare(sent, uniq)
    correlation_id = "0bd7cb5d-d699-4bb1-ad8f-3e1ff48cbefd"
    properties = request_properties(
        prepared.properties, correlation_id, REQUESTER, 5000, java_string_hash
    )
    assert properties == fields["i"]  # HashMap order: REPLY_TO_CLIENT first, no MSG_TYPE
    request = build_send_request(
        msgspec.structs.replace(prepared, properties=properties),
        MessageQueue("ReqTopic", "broker-b", int(fields["e"])),
        int(fields["g"]),
    )
    assert request.ext_fields == fields
    assert as_java(request.to_command(), java) == raw(58)


def delivered_request() -> ReceivedMessage:
    """The request as the replier got it (#60: the broker added CLUSTER)."""
    properties = {
        "REPLY_TO_CLIENT": REQUESTER,
        "KEYS": "req-sync",
        "UNIQ_KEY": "C000020239BB5FFD2B2788ED323B0000",
        "CLUSTER": "DefaultCluster",
        "TTL": "5000",
        "TAGS": "TagReq",
        "reqProp": "v-sync",
        "CORRELATION_ID": "0bd7cb5d-d699-4bb1-ad8f-3e1ff48cbefd",
    }
    queue = MessageQueue("ReqTopic", "broker-b", 0)
    return ReceivedMessage(
        "ReqTopic", b"request-sync", properties, "", "", queue, 0, 0, 0, 0, 0, "", ""
    )


def test_our_reply_send_is_the_recorded_325_byte_for_byte() -> None:
    java = golden(64)
    fields = java.ext_fields
    assert fields is not None and java.code == RequestCode.SEND_REPLY_MESSAGE_V2
    reply = create_reply(delivered_request(), b"reply-to-request-sync")
    assert reply.topic == "DefaultCluster_REPLY_TOPIC"
    uniq = "C000020239BB5FFD2B2788ED32C40001"
    ours = reply_send_command(
        "ReplierProducerGroup", reply, uniq, 0, int(fields["g"]), java_string_hash
    )
    assert ours.ext_fields == fields  # MSG_TYPE=reply ... no WAIT, KEYS or TAGS
    assert as_java(ours, java) == raw(64)


class FakeChannel:
    def __init__(self, peer: str) -> None:
        self.peer = peer
        self.is_open = True
        self.written: list[bytes] = []

    def write(self, frame: bytes) -> None:
        self.written.append(frame)


def no_fault(is_send: bool) -> FaultDecision:
    return NO_FAULT


def test_the_dev_brokers_push_and_answer_are_the_recorded_ones() -> None:
    """The recorded Java reply send (#64) fed to a dev broker-a whose clock reads what the
    real one read: the push equals #65 field for field, the answer #67."""
    clock = [itertools.count(0)]
    broker = Broker("broker-a", clock_ms=lambda: next(clock[0]), rng=random.Random(0))
    broker.set_store_host("127.0.0.2", 10911)
    broker.store.put_topic(TopicConfig("DefaultCluster_REPLY_TOPIC", 1, 1, 6))
    requester = FakeChannel("127.0.0.1:50000")
    heartbeat = heartbeat_request(REQUESTER, ["RequesterGroup"])
    heartbeat.opaque = 1
    broker.handle(encode_frame(heartbeat)[4:], no_fault, requester)
    requester.written.clear()
    clock[0] = itertools.count(1795788446412)  # storeTimestamp, then PUSH_REPLY_TIME
    replier = FakeChannel("127.0.0.1:60798")
    answer = broker.handle(raw(64)[4:], no_fault, replier)
    [pushed_frame] = requester.written
    pushed, real = decode_frame(pushed_frame), golden(65)
    assert (pushed.code, pushed.flag, pushed.body) == (real.code, real.flag, real.body)
    assert (pushed.language, pushed.version) == (real.language, real.version)  # JAVA, 401
    assert pushed.ext_fields == real.ext_fields  # PUSH_REPLY_TIME first, every field equal
    assert answer is not None
    response, real_answer = decode_frame(answer.frame), golden(67)
    assert (response.code, response.opaque) == (real_answer.code, real_answer.opaque)
    assert response.ext_fields == real_answer.ext_fields  # stored: msgId of offset 0


def test_a_requester_without_a_heartbeat_gets_the_brokers_refusal() -> None:
    broker = Broker("broker-a", clock_ms=lambda: 0, rng=random.Random(0))
    broker.store.put_topic(TopicConfig("DefaultCluster_REPLY_TOPIC", 1, 1, 6))
    answer = broker.handle(raw(64)[4:], no_fault, FakeChannel("127.0.0.1:60798"))
    assert answer is not None
    response = decode_payload(answer.frame[4:])
    assert response.code == 1
    assert response.remark == f"push reply message fail, channel of <{REQUESTER}> not found."


class _Routes:
    """The route table as the requester reads it on a push: broker names by address."""

    def broker_addrs(self) -> dict[str, str]:
        return {"broker-a": "127.0.0.2:10911"}


def requester() -> Requester:
    return Requester(
        group="RequesterGroup",
        client_id=REQUESTER,
        routes=_Routes(),  # type: ignore[arg-type]
        client=None,  # type: ignore[arg-type]
        clock=None,  # type: ignore[arg-type]
        rng=random.Random(0),
        tg=None,  # type: ignore[arg-type]
    )


@pytest.mark.anyio
async def test_our_answer_to_the_push_is_the_recorded_one_and_the_reply_is_handed_over() -> None:
    ours = requester()
    waiter = _ReplyWaiter(5000)
    ours._pending.add("0bd7cb5d-d699-4bb1-ad8f-3e1ff48cbefd", 5000.0, waiter)
    answer = ours.receive("127.0.0.2:10911", golden(65))
    answer.flag = FLAG_RESPONSE  # the connection sets these on a peer request's answer
    assert as_java(answer, golden(66)) == raw(66)  # a plain 0: no remark, no ext fields
    assert waiter.event.is_set() and waiter.reply is not None and len(ours._pending) == 0
    reply = waiter.reply
    assert (reply.topic, reply.body) == ("DefaultCluster_REPLY_TOPIC", b"reply-to-request-sync")
    assert reply.queue == MessageQueue("DefaultCluster_REPLY_TOPIC", "broker-a", 0)
    assert reply.properties["PUSH_REPLY_TIME"] == "1795788446413"
    assert reply.msg_id == "C000020239BB5FFD2B2788ED32C40001"
    assert ours.receive("127.0.0.2:10911", golden(65)).code == 0  # late: answered, dropped


def test_without_store_reply_message_the_reply_is_pushed_not_stored() -> None:
    """``storeReplyMessageEnable=false``: the push alone; the answer says msgId 0, offset 0."""
    broker = Broker("broker-a", clock_ms=lambda: 0, rng=random.Random(0))
    broker.store.put_topic(TopicConfig("DefaultCluster_REPLY_TOPIC", 1, 1, 6))
    broker.replies.store_reply_message = False
    requester = FakeChannel("127.0.0.1:50000")
    heartbeat = heartbeat_request(REQUESTER, ["RequesterGroup"])
    broker.handle(encode_frame(heartbeat)[4:], no_fault, requester)
    answer = broker.handle(raw(64)[4:], no_fault, FakeChannel("127.0.0.1:60798"))
    assert answer is not None
    response = decode_frame(answer.frame)
    assert response.code == 0
    assert (response.ext_fields or {})["msgId"] == "0"
    assert (response.ext_fields or {})["queueOffset"] == "0"
    [push] = requester.written
    assert decode_frame(push).code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT
    assert broker.store.max_offset("DefaultCluster_REPLY_TOPIC", 0) == 0
