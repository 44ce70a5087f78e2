"""Transparent batching: concurrent sends to one topic leave as one SEND_BATCH_MESSAGE,
and every caller still gets exactly its own outcome (issue 11)."""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from producer import AttemptOutcome, Message, Producer, SendFuture, SendResult
from producer.errors import BrokerError, Fate, MessageIllegalError, ProducerError
from producer.testing import DevClusterThread, FaultSpec
from tests.helpers.sends import requests_served
from tests.producer.conftest import TOPIC, make_producer

pytestmark = pytest.mark.anyio

BROKERS = ("broker-a", "broker-b", "broker-c")
QUEUES = 12  # TOPIC's: 3 brokers x 4
SOLO = "Solo"  # a topic on broker-a alone: a group of sends to it is one batch
HELD = "Held"  # a topic on broker-b alone, whose answers a fault can hold back
HELD_MS = 500  # how long broker-b holds an answer back: far longer than one loop turn


async def send_all(p: Producer, messages: list[Message], **kw: Any) -> list[Any]:
    """Send every message concurrently (all in one loop turn); each slot gets its result
    or the error it raised."""
    outcomes: list[Any] = [None] * len(messages)

    async def one(i: int) -> None:
        try:
            outcomes[i] = await p.send(messages[i], **kw)
        except ProducerError as exc:
            outcomes[i] = exc

    async with anyio.create_task_group() as tg:
        for i in range(len(messages)):
            tg.start_soon(one, i)
    return outcomes


async def _done(future: SendFuture) -> SendFuture:
    with contextlib.suppress(ProducerError):
        await future
    return future


async def warm(p: Producer) -> None:
    """Route and connections in place, so the sends under test run in one turn."""
    await p.send(Message(TOPIC, b"warm-up"))


async def test_concurrent_sends_leave_as_batches_each_with_its_own_result(
    cluster: DevClusterThread,
) -> None:
    async with make_producer(cluster) as p:
        await warm(p)
        before = requests_served(cluster)
        results = await send_all(p, [Message(TOPIC, b"m%d" % i) for i in range(100)])
        served = requests_served(cluster) - before
    assert all(isinstance(r, SendResult) for r in results)
    # the first alone, the other 99 dealt over the 12 queues: one batch per queue; plus one
    # request per retry counted (on a loaded machine an attempt can outlive its share of
    # the budget on the loop's clock, and its retry is a request of its own)
    retries = sum(len(r.attempts) - 1 for r in results)
    allowed = QUEUES + 1 + retries
    assert served <= allowed, f"100 concurrent sends took {served} requests: not batched"
    stored = {m.uniq_key: m for m in cluster.messages(TOPIC)}
    assert len({r.msg_id for r in results}) == 100
    for i, result in enumerate(results):
        message = stored[result.msg_id]
        assert message.body == b"m%d" % i
        assert (message.broker_name, message.queue_id) == (
            result.queue.broker_name,
            result.queue.queue_id,
        )
        assert message.queue_offset == result.queue_offset
        assert message.offset_msg_id == result.offset_msg_id
        assert "," not in result.msg_id


@pytest.mark.timeout(30)
async def test_a_turns_first_send_joins_its_group_while_another_send_is_in_flight(
    cluster: DevClusterThread,
) -> None:
    # One send held in flight (broker-b answers it only after HELD_MS), then a later loop
    # turn: the first send of that turn joins the group its turn's other sends join, and
    # all five leave as one SEND_BATCH_MESSAGE. (The other half of the rule, a send with
    # nothing else in flight goes at once and alone, is the first message of
    # test_a_batch_with_one_illegal_message_stores_all_the_others: its one attempt shows
    # it was not in the refused batch.)
    cluster.add_topic(SOLO, 4, brokers=["broker-a"])
    cluster.add_topic(HELD, 4, brokers=["broker-b"])
    async with make_producer(cluster) as p:
        await p.send(Message(SOLO, b"warm-up"))  # routes and connections in place
        await p.send(Message(HELD, b"warm-up"))
        cluster.set_fault("broker-b", FaultSpec(latency_ms=HELD_MS))
        held = p.send_async(Message(HELD, b"held"))
        await anyio.lowlevel.checkpoint()  # the turn ends: the next sends open a new one
        assert p.in_flight == 1 and not held.done(), "the held send is not in flight"
        before = cluster.broker_status("broker-a")["requests"]
        futures = [p.send_async(Message(SOLO, b"j%d" % i)) for i in range(5)]
        results = [await f for f in futures]
        served = cluster.broker_status("broker-a")["requests"] - before
        cluster.clear_fault("broker-b")  # the close's own requests answered at once
        assert isinstance(await held, SendResult)
    assert served == 1, f"5 sends of one turn took {served} requests: the first went alone"
    assert len({r.queue for r in results}) == 1
    assert [r.queue_offset - results[0].queue_offset for r in results] == [0, 1, 2, 3, 4]
    stored = [m for m in cluster.messages(SOLO) if m.body.startswith(b"j")]
    assert [m.body for m in stored] == [b"j%d" % i for i in range(5)]


async def test_batching_off_sends_each_message_alone(cluster: DevClusterThread) -> None:
    async with make_producer(cluster, batching=False) as p:
        await warm(p)
        before = requests_served(cluster)
        results = await send_all(p, [Message(TOPIC, b"m") for _ in range(20)])
        served = requests_served(cluster) - before
    assert all(isinstance(r, SendResult) for r in results)
    assert served >= 20


async def test_send_async_members_each_get_one_callback(cluster: DevClusterThread) -> None:
    seen: dict[str, int] = {}

    def count(result: SendResult) -> None:
        seen[result.msg_id] = seen.get(result.msg_id, 0) + 1

    async with make_producer(cluster) as p:
        await warm(p)
        before = requests_served(cluster)
        futures = [p.send_async(Message(TOPIC, b"a"), on_success=count) for _ in range(50)]
        results = [await f for f in futures]
        served = requests_served(cluster) - before
    assert served <= QUEUES + 1  # the first alone, then one batch per queue
    assert sorted(seen) == sorted(f.msg_id for f in futures)
    assert set(seen.values()) == {1}
    assert [r.msg_id for r in results] == [f.msg_id for f in futures]
    assert cluster.unique_msg_ids(TOPIC) >= set(seen)


async def test_a_batch_with_one_illegal_message_stores_all_the_others(
    cluster: DevClusterThread,
) -> None:
    # The client allows 8 MiB, the broker 4 MiB: the batch is refused with 13 as a
    # whole, then each member goes alone and only the oversized one is refused. The five
    # grouped sends are under 4 per queue of the topic, so they leave as one batch.
    big = 4 * 1024 * 1024 + 100
    options = {"max_message_size": 8 << 20, "batch_max_bytes": 8 << 20, "compress_over": 9 << 20}
    cluster.add_topic(SOLO, 4, brokers=["broker-a"])
    messages = [Message(SOLO, b"small-%d" % i) for i in range(5)]
    messages.insert(2, Message(SOLO, b"x" * big))
    async with make_producer(cluster, **options) as p:
        await p.send(Message(SOLO, b"warm-up"))
        # send_async from one task: the first goes alone, the rest join in this order
        futures = [p.send_async(m) for m in messages]
        outcomes = [f.exception() or f.result() for f in [await _done(f) for f in futures]]
    assert isinstance(outcomes[0], SendResult) and len(outcomes[0].attempts) == 1
    illegal = outcomes[2]
    assert isinstance(illegal, MessageIllegalError)
    assert [a.code for a in illegal.attempts] == [13, 13]  # the batch's, then its own
    for outcome in outcomes[1:2] + outcomes[3:]:
        assert isinstance(outcome, SendResult)
        first, last = outcome.attempts[0], outcome.attempts[-1]
        assert (first.outcome, first.code) == (AttemptOutcome.BROKER_ERROR, 13)
        assert last.outcome is AttemptOutcome.OK
    stored = cluster.unique_msg_ids(SOLO)
    assert {o.msg_id for o in outcomes if isinstance(o, SendResult)} <= stored
    assert len(stored) == 1 + 5  # the warm-up and the five small ones


async def test_a_retriable_batch_error_retries_the_batch_on_another_broker(
    cluster: DevClusterThread,
) -> None:
    cluster.set_fault("broker-a", FaultSpec(error_code=14))
    async with make_producer(cluster) as p:
        results = [await p.send(Message(TOPIC, b"w")) for _ in range(3)]  # warm, skip a
        for _ in range(4):
            results += await send_all(p, [Message(TOPIC, b"r") for _ in range(10)])
    assert all(isinstance(r, SendResult) for r in results)
    assert all(r.queue.broker_name != "broker-a" for r in results)
    retried = [r for r in results if len(r.attempts) == 2]
    assert retried, "no send met broker-a"
    assert all(r.attempts[0].broker_name == "broker-a" for r in retried)
    assert cluster.message_count(TOPIC, broker="broker-a") == 0
    assert len(cluster.unique_msg_ids(TOPIC)) == len(results)


async def test_a_refused_batch_gives_each_member_its_own_error(
    cluster: DevClusterThread,
) -> None:
    async with make_producer(cluster) as p:
        await warm(p)
        for name in BROKERS:
            cluster.set_fault(name, FaultSpec(error_code=3))
        errors = await send_all(p, [Message(TOPIC, b"e") for _ in range(10)])
    assert all(isinstance(e, BrokerError) and e.code == 3 for e in errors)
    assert len({id(e) for e in errors}) == 10
    assert all(len(e.attempts) == 1 and e.fate is Fate.NOT_STORED for e in errors)
    ids = [e.msg_id for e in errors]  # each member's own UNIQ_KEY, not the batch's joined ids
    assert len(set(ids)) == 10
    assert all(i is not None and "," not in i for i in ids)


async def test_cancelling_one_member_leaves_the_batch_to_the_others(
    cluster: DevClusterThread,
) -> None:
    async with make_producer(cluster) as p:
        await warm(p)
        for name in BROKERS:
            cluster.set_fault(name, FaultSpec(latency_ms=300))
        outcomes: dict[str, Any] = {}

        async def send(name: str, cancel_after_s: float | None) -> None:
            with anyio.move_on_after(cancel_after_s or 60) as scope:
                outcomes[name] = await p.send(Message(TOPIC, name.encode()))
            if scope.cancelled_caught:
                outcomes[name] = "cancelled"

        async with anyio.create_task_group() as tg:
            for i in range(6):
                tg.start_soon(send, f"m{i}", 0.1 if i == 3 else None)
    assert outcomes.pop("m3") == "cancelled"
    assert all(isinstance(r, SendResult) for r in outcomes.values())
    stored = {m.body for m in cluster.messages(TOPIC)}
    assert b"m3" in stored  # it was written with the batch: its fate was unknown, not lost


async def test_a_member_cancelled_before_the_flush_is_left_out(
    cluster: DevClusterThread,
) -> None:
    # The linger keeps the group open far longer than a cancellation takes to arrive.
    async with make_producer(cluster, batch_linger_ms=1000) as p:
        await warm(p)

        async def cancelled_send() -> None:
            with anyio.CancelScope() as scope:
                scope.cancel()
                await p.send(Message(TOPIC, b"never"))

        async def send() -> None:
            await p.send(Message(TOPIC, b"kept"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(send)
            tg.start_soon(cancelled_send)
            tg.start_soon(send)
        assert p.in_flight == 0
    bodies = [m.body for m in cluster.messages(TOPIC)]
    assert b"never" not in bodies
    assert bodies.count(b"kept") == 2


async def test_close_drains_pending_members(cluster: DevClusterThread) -> None:
    async with make_producer(cluster) as p:
        await warm(p)
        futures = [p.send_async(Message(TOPIC, b"d")) for _ in range(30)]
    assert all(f.done() and f.exception() is None for f in futures)
    assert cluster.unique_msg_ids(TOPIC) >= {f.msg_id for f in futures}


async def test_hooks_see_each_member_of_a_batch(cluster: DevClusterThread) -> None:
    class Hook:
        def __init__(self) -> None:
            self.before: list[str] = []
            self.after: list[str] = []

        def before_attempt(self, ctx: Any) -> None:
            self.before.append(ctx.msg_id)

        def after_attempt(self, ctx: Any) -> None:
            assert ctx.result is not None
            self.after.append(ctx.msg_id)

    hook = Hook()
    async with make_producer(cluster, hooks=[hook]) as p:
        await warm(p)
        results = await send_all(p, [Message(TOPIC, b"h") for _ in range(20)])
    ids = [r.msg_id for r in results]
    assert sorted(hook.before[1:]) == sorted(ids)
    assert sorted(hook.after[1:]) == sorted(ids)


async def test_delayed_and_keyed_sends_are_never_batched(cluster: DevClusterThread) -> None:
    async with make_producer(cluster) as p:
        await warm(p)
        before = requests_served(cluster)
        delayed = await send_all(p, [Message(TOPIC, b"d", delay_level=1) for _ in range(5)])
        keyed = await send_all(p, [Message(TOPIC, b"k") for _ in range(5)], order_key="o-1")
        served = requests_served(cluster) - before
    assert all(isinstance(r, SendResult) for r in delayed + keyed)
    assert served == 10
    offsets = [r.queue_offset for r in keyed]
    assert len({r.queue.queue_id for r in keyed}) == 1
    assert len(set(offsets)) == 5
