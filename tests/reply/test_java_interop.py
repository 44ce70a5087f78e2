"""Request-reply between Python and the official 4.9.4 Java client's frames, through the
dev cluster: the recorded Java requester's heartbeat and request (golden #56, #58)
answered by a Python listener, and a Python requester answered by the recorded Java reply
send (#64, its CORRELATION_ID and REPLY_TO_CLIENT swapped for our request's). The Java
side is its recorded bytes written on a raw socket, not a live JVM."""

from __future__ import annotations

import json

import anyio
import pytest

from latency_fault import java_string_hash
from producer import Message, Producer
from producer._remoting.command import RemotingCommand
from producer._remoting.frame_decoder import decode_frame
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.properties import decode_properties
from producer._remoting.reply import encode_java_map
from producer._remoting.request_codes import LanguageCode, RequestCode
from producer.consumer import ConsumeStatus, PushConsumer, ReceivedMessage, create_reply
from producer.testing import DevCluster
from tests.protocol.golden import golden_dir
from tests.testing.rawclient import RawClient

SESSION = golden_dir() / "sessions" / "features_4_9_4" / "a_request_reply"
JAVA_CORRELATION_ID = "0bd7cb5d-d699-4bb1-ad8f-3e1ff48cbefd"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the raw Java side is an asyncio stream


def raw(seq: int) -> bytes:
    lines = (SESSION / "frames.jsonl").read_text().splitlines()
    frame = next(f for f in map(json.loads, lines) if f["seq"] == seq)
    return (SESSION / frame["file"]).read_bytes()


@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_a_java_request_is_answered_by_a_python_listener() -> None:
    async def answer(messages: list[ReceivedMessage]) -> ConsumeStatus:
        for message in messages:
            await replier.send_reply(create_reply(message, b"python says: " + message.body))
        return ConsumeStatus.SUCCESS

    async with DevCluster(brokers=1, topics={"ReqTopic": 1}) as cluster:
        java = await RawClient.connect(cluster.broker_addr("broker-a"))
        async with java:
            await java.write(raw(56))  # HEART_BEAT of 192.0.2.2@requester
            assert (await java.read()).code == 0
            await java.write(raw(58))  # the request, as the Java client sent it
            assert (await java.read()).code == 0
            consumer = PushConsumer(
                "Replier", cluster.namesrv_addr, listener=answer, consume_from="first"
            )
            consumer.subscribe("ReqTopic")
            async with (
                Producer("ReplierProducerGroup", cluster.namesrv_addr) as replier,
                consumer,
            ):
                with anyio.fail_after(30):
                    push = await java.read()
    assert push.code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT and not push.is_response
    assert push.body == b"python says: request-sync"
    properties = decode_properties(push.ext_fields["properties"])  # type: ignore[index]
    assert properties["CORRELATION_ID"] == JAVA_CORRELATION_ID  # what Java's table waits on
    assert properties["REPLY_TO_CLIENT"] == "192.0.2.2@requester"
    assert properties["MSG_TYPE"] == "reply" and properties["TTL"] == "5000"


@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_a_python_request_is_answered_by_the_java_reply_send() -> None:
    async with (
        DevCluster(brokers=1, topics={"ReqTopic": 1}) as cluster,
        Producer("RequesterGroup", cluster.namesrv_addr) as requester,
    ):
        got: list[ReceivedMessage] = []

        async def ask() -> None:
            got.append(await requester.request(Message("ReqTopic", b"q"), timeout_ms=30_000))

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            with anyio.fail_after(20):
                while not cluster.messages("ReqTopic"):  # noqa: ASYNC110 - the broker's state
                    await anyio.sleep(0.01)
            [stored] = cluster.messages("ReqTopic")
            java_reply = decode_frame(raw(64))  # Java's createReplyMessage + send
            fields = dict(java_reply.ext_fields or {})
            props = decode_properties(fields["i"])
            props["CORRELATION_ID"] = stored.properties["CORRELATION_ID"]
            props["REPLY_TO_CLIENT"] = stored.properties["REPLY_TO_CLIENT"]
            fields["i"] = encode_java_map(props, java_string_hash)
            java_reply = RemotingCommand(
                java_reply.code,
                opaque=java_reply.opaque,
                ext_fields=fields,
                body=java_reply.body,
                language=LanguageCode.JAVA,
            )
            java = await RawClient.connect(cluster.broker_addr("broker-a"))
            async with java:
                await java.write(encode_frame(java_reply))
                assert (await java.read()).code == 0  # pushed to us, and stored
    [reply] = got
    assert reply.body == b"reply-to-request-sync"
    assert reply.properties["CORRELATION_ID"] == stored.properties["CORRELATION_ID"]
