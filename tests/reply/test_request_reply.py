"""Request-reply through the dev cluster: ``Producer.request`` answered by a push
consumer's listener with ``create_reply`` + ``send_reply``, the callback form, a request
nobody answers, and a reply whose requester is gone (the broker's own answer)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import anyio
import pytest

from producer import Message, Producer
from producer._remoting.reply import PendingRequests
from producer.consumer import (
    ConsumeStatus,
    MessageQueue,
    PushConsumer,
    ReceivedMessage,
    create_reply,
)
from producer.errors import (
    NoReplyTopicError,
    NotARequestError,
    ProducerClosedError,
    ReplyRefusedError,
    ReplyTimeout,
    RequestTimeout,
)
from producer.testing import DevClusterThread

FAST = {"persist_interval_ms": 50, "rebalance_interval_ms": 500, "suspend_timeout_ms": 1000}


def received(topic: str, body: bytes, properties: dict[str, str]) -> ReceivedMessage:
    """A message as a listener gets it (the fields create_reply does not read zeroed)."""
    queue = MessageQueue(topic, "broker-a", 0)
    return ReceivedMessage(topic, body, properties, "", "", queue, 0, 0, 0, 0, 0, "", "")


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=2, topics={"ReqTopic": 1, "Nobody": 1}) as c:
        yield c


def replying_consumer(addr: str, replier: Producer, seen: list[ReceivedMessage]) -> PushConsumer:
    async def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        for message in messages:
            seen.append(message)
            await replier.send_reply(create_reply(message, b"re: " + message.body))
        return ConsumeStatus.SUCCESS

    consumer = PushConsumer("ReplierGroup", addr, listener=listener, consume_from="first", **FAST)
    consumer.subscribe("ReqTopic")
    return consumer


@pytest.mark.anyio
@pytest.mark.timeout(90)
async def test_a_request_gets_the_listeners_reply_not_itself(cluster: DevClusterThread) -> None:
    addr = cluster.namesrv_addr
    seen: list[ReceivedMessage] = []
    async with (
        Producer("ReplierProducerGroup", addr) as replier,
        replying_consumer(addr, replier, seen),
        Producer("RequesterGroup", addr) as requester,
    ):
        message = Message("ReqTopic", b"request-sync", keys="req-sync")
        reply = await requester.request(message, timeout_ms=30_000)
        got: list[object] = []
        done = anyio.Event()

        def settle(outcome: object) -> None:
            got.append(outcome)
            done.set()

        requester.request_async(
            Message("ReqTopic", b"request-async"), settle, settle, timeout_ms=30_000
        )
        with anyio.fail_after(40):
            await done.wait()
    assert (reply.topic, reply.body) == ("DefaultCluster_REPLY_TOPIC", b"re: request-sync")
    assert reply.properties["MSG_TYPE"] == "reply"
    assert reply.properties["CORRELATION_ID"] == seen[0].properties["CORRELATION_ID"]
    assert seen[0].properties["CLUSTER"] == "DefaultCluster"  # the broker added it
    # each reply was taken at once: the requester had heartbeated the reply's broker
    # before its first request (else a reply is refused and its request redelivered)
    assert [m.body for m in seen] == [b"request-sync", b"request-async"]
    [async_reply] = got  # one callback, once, with the reply (not None, not the request)
    assert isinstance(async_reply, ReceivedMessage), async_reply
    assert async_reply.body == b"re: request-async"
    stored = cluster.messages("DefaultCluster_REPLY_TOPIC")  # storeReplyMessageEnable
    assert sorted(m.body for m in stored) == [b"re: request-async", b"re: request-sync"]


@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_a_request_nobody_answers_times_out_at_its_timeout(
    cluster: DevClusterThread,
) -> None:
    async with Producer("RequesterGroup", cluster.namesrv_addr) as requester:
        await requester.send(Message("Nobody", b"warm"))  # routes and connections ready
        start = time.monotonic()
        with pytest.raises(ReplyTimeout) as caught:
            await requester.request(Message("Nobody", b"anyone?"), timeout_ms=300)
        waited_ms = (time.monotonic() - start) * 1000
        ends = requester._requests
        assert ends is not None and len(ends.requester._pending) == 0
    assert isinstance(caught.value, RequestTimeout) and isinstance(caught.value, TimeoutError)
    assert waited_ms >= 300  # not before its deadline (no upper bound: a loaded machine)
    [stored] = [m for m in cluster.messages("Nobody") if m.body == b"anyone?"]
    assert stored.properties["TTL"] == "300"
    assert stored.properties["CORRELATION_ID"] == caught.value.correlation_id


@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_two_requests_answered_in_reverse_order_each_get_their_own_reply(
    cluster: DevClusterThread,
) -> None:
    """A reply goes to the request with its CORRELATION_ID, not to the oldest waiting."""
    addr = cluster.namesrv_addr
    replies: dict[bytes, bytes] = {}
    async with (
        Producer("RequesterGroup", addr) as requester,
        Producer("ReplierProducerGroup", addr) as replier,
        anyio.create_task_group() as tg,
    ):

        async def ask(body: bytes) -> None:
            reply = await requester.request(Message("Nobody", body), timeout_ms=30_000)
            replies[body] = reply.body

        stored: list[ReceivedMessage] = []
        for body in (b"first", b"second"):  # the first is the older pending request
            tg.start_soon(ask, body)
            with anyio.fail_after(20):
                while len(cluster.messages("Nobody")) == len(stored):  # noqa: ASYNC110 - the broker's state
                    await anyio.sleep(0.01)
            [new] = [m for m in cluster.messages("Nobody") if m.body == body]
            stored.append(received(new.topic, new.body, dict(new.properties)))
        for request in reversed(stored):
            await replier.send_reply(create_reply(request, b"re: " + request.body))
    assert replies == {b"first": b"re: first", b"second": b"re: second"}


@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_a_reply_to_a_gone_requester_gets_the_brokers_answer(
    cluster: DevClusterThread,
) -> None:
    addr = cluster.namesrv_addr
    async with Producer("RequesterGroup", addr) as requester:
        with pytest.raises(ReplyTimeout):
            await requester.request(Message("Nobody", b"then gone"), timeout_ms=200)
        gone_id = requester.client_id
    [stored] = cluster.messages("Nobody")
    request = received(stored.topic, stored.body, dict(stored.properties))
    async with Producer("ReplierProducerGroup", addr) as replier:
        with pytest.raises(ReplyRefusedError, match="not found") as caught:
            await replier.send_reply(create_reply(request, b"too late"))
    assert caught.value.code == 1
    assert caught.value.remark == f"push reply message fail, channel of <{gone_id}> not found."


def test_pending_requests_settle_by_correlation_id_not_age() -> None:
    pending: PendingRequests[str] = PendingRequests()
    pending.add("a", 100.0, "waiter a")
    pending.add("b", 50.0, "waiter b")
    pending.add("c", 200.0, "waiter c")
    assert pending.settle("b") == "waiter b"  # neither the oldest nor ...
    assert pending.settle("c") == "waiter c"  # ... the one due first
    assert pending.settle("b") is None and pending.settle("unknown") is None
    with pytest.raises(ValueError, match="already pending"):
        pending.add("a", 300.0, "a again")
    assert len(pending) == 1 and pending.next_deadline() == 100.0
    assert pending.expired(99.0) == [] and pending.expired(100.0) == [("a", "waiter a")]


def test_create_reply_refuses_a_message_that_is_not_a_request() -> None:
    plain = received("T", b"x", {"CLUSTER": "DefaultCluster"})
    with pytest.raises(
        NotARequestError, match=r"CORRELATION_ID, REPLY_TO_CLIENT.*Producer\.request"
    ):
        create_reply(plain, b"re")
    with pytest.raises(NotARequestError, match="not a request"):
        create_reply(Message("T", b"x"), b"re")  # type: ignore[arg-type]
    with pytest.raises(NotARequestError, match="received message"):
        create_reply(b"x", b"re")  # type: ignore[arg-type]


@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_a_request_whose_cluster_has_no_reply_topic_is_refused_unsent() -> None:
    with DevClusterThread(brokers=1, topics={"ReqTopic": 1}, cluster_name="C5") as cluster:
        async with Producer("RequesterGroup", cluster.namesrv_addr) as requester:
            cluster.delete_topic("C5_REPLY_TOPIC")
            with pytest.raises(
                NoReplyTopicError, match="mqadmin updateTopic -c C5 -t C5_REPLY_TOPIC"
            ):
                await requester.request(Message("ReqTopic", b"x"), timeout_ms=5000)
        assert cluster.messages("ReqTopic") == []


@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_closing_fails_waiting_requests_once_and_leaves_none(
    cluster: DevClusterThread,
) -> None:
    outcomes: list[object] = []
    async with Producer("RequesterGroup", cluster.namesrv_addr) as requester:
        requester.request_async(
            Message("Nobody", b"never answered"),
            outcomes.append,
            outcomes.append,
            timeout_ms=600_000,
        )
        with anyio.fail_after(20):
            while not cluster.messages("Nobody"):  # noqa: ASYNC110 - the broker's state
                await anyio.sleep(0.01)
        pending = None if requester._requests is None else requester._requests.requester
    [outcome] = outcomes
    assert isinstance(outcome, ProducerClosedError), outcome
    assert pending is not None and len(pending._pending) == 0
