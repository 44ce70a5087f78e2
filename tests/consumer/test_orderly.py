"""Orderly consumption against the dev cluster (docs/consuming.md 2.9, 5.3 item 11): queue locks
before pulls and released on hand-over and close, order per queue through a failing
message, local retries only, and the orderly route to the DLQ."""

from __future__ import annotations

import time
from collections.abc import Iterator

import anyio
import pytest

from producer import Message, Producer
from producer.consumer import (
    ConsumeContext,
    ConsumeRetryPolicy,
    ConsumeStatus,
    ReceivedMessage,
)
from producer.testing import DevClusterThread
from tests.helpers.push import FAST_LEVELS, orderly_consumer, until

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

KEYS = ("order-1", "order-2", "order-3")


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=2, topics={"Orders": 2}, delay_levels=FAST_LEVELS) as c:
        yield c


async def publish_in_order(cluster: DevClusterThread, per_key: int) -> dict[str, list[bytes]]:
    """``per_key`` messages for each order key, each key's to one queue, in order."""
    sent: dict[str, list[bytes]] = {key: [] for key in KEYS}
    async with Producer("pg", namesrv=cluster.namesrv_addr) as producer:
        for i in range(per_key):
            for key in KEYS:
                body = f"{key}:{i}".encode()
                await producer.send(Message("Orders", body), order_key=key)
                sent[key].append(body)
    return sent


def locks(cluster: DevClusterThread) -> dict[str, str]:
    held: dict[str, str] = {}
    for broker in cluster.broker_names:
        held.update(cluster.queue_locks(broker).get("og", {}))
    return held


def key_of(message: ReceivedMessage) -> str:
    return message.body.decode().split(":")[0]


async def test_each_queue_is_consumed_in_order_through_a_failing_message(
    cluster: DevClusterThread,
) -> None:
    sent = await publish_in_order(cluster, per_key=6)
    consumed: dict[str, list[bytes]] = {key: [] for key in KEYS}
    poison_tries: list[int] = []

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        (message,) = messages
        if message.body == b"order-2:2" and message.reconsume_times < 3:
            poison_tries.append(message.reconsume_times)
            return ConsumeStatus.RECONSUME_LATER  # the queue waits; nothing after it runs
        consumed[key_of(message)].append(message.body)
        return ConsumeStatus.SUCCESS

    async with orderly_consumer(cluster, listener) as c:
        await until(lambda: sum(map(len, consumed.values())) == 18)
        assert set(locks(cluster)) == {str(q) for q in c.assigned_queues}  # %RETRY% too
        assert set(locks(cluster).values()) == {c.client_id}
    assert consumed == sent  # every key in its order, each message once
    assert poison_tries == [0, 1, 2]  # retried locally, its count kept
    assert cluster.messages("%RETRY%og") == []  # orderly never sends back
    assert locks(cluster) == {}  # released at close


async def test_a_message_out_of_attempts_goes_to_the_dlq_and_the_queue_moves_on(
    cluster: DevClusterThread,
) -> None:
    sent = await publish_in_order(cluster, per_key=3)
    consumed: list[bytes] = []
    poison_tries: list[int] = []

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        (message,) = messages
        if message.body == b"order-1:1":
            poison_tries.append(message.reconsume_times)
            return ConsumeStatus.RECONSUME_LATER
        consumed.append(message.body)
        return ConsumeStatus.SUCCESS

    async with orderly_consumer(cluster, listener, max_reconsume_times=1):
        await until(lambda: len(consumed) == 8 and len(cluster.messages("%DLQ%og")) == 1)
    assert poison_tries == [0, 1]  # consumed max + 1 times, then dead
    assert [b for b in consumed if b.startswith(b"order-1")] == [b"order-1:0", b"order-1:2"]
    (dead,) = cluster.messages("%DLQ%og")
    assert dead.body == b"order-1:1"
    # Java's orderly route: SEND_MESSAGE_V2 to %RETRY% with the count (docs/consuming.md 2.9).
    assert dead.properties["RETRY_TOPIC"] == "Orders" and dead.properties["DELAY"] == "4"
    assert (
        dead.properties["RECONSUME_TIME"] == "1" and dead.properties["MAX_RECONSUME_TIMES"] == "1"
    )
    assert sum(len(v) for v in sent.values()) == 9


async def test_the_listener_sets_how_long_its_queue_is_suspended(cluster: DevClusterThread) -> None:
    await publish_in_order(cluster, per_key=1)
    tries: list[float] = []

    def listener(messages: list[ReceivedMessage], context: ConsumeContext) -> ConsumeStatus:
        if messages[0].body != b"order-3:0":
            return ConsumeStatus.SUCCESS
        tries.append(time.monotonic())
        context.suspend_current_queue_time_ms = 400
        return ConsumeStatus.SUCCESS if len(tries) == 2 else ConsumeStatus.RECONSUME_LATER

    async with orderly_consumer(cluster, listener):
        await until(lambda: len(tries) == 2)
    assert tries[1] - tries[0] >= 0.4


async def test_a_second_member_takes_queues_only_after_their_lock_is_released(
    cluster: DevClusterThread,
) -> None:
    await publish_in_order(cluster, per_key=4)
    consumed: dict[str, list[bytes]] = {key: [] for key in KEYS}

    async def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        (message,) = messages
        consumed[key_of(message)].append(message.body)
        await anyio.sleep(0.01)
        return ConsumeStatus.SUCCESS

    first = orderly_consumer(cluster, listener, instance_name="first")
    second = orderly_consumer(cluster, listener, instance_name="second")
    async with first:
        await until(lambda: len(locks(cluster)) == 6)  # 4 of Orders, 2 of %RETRY%og
        async with second:
            await until(lambda: set(locks(cluster).values()) == {first.client_id, second.client_id})

            def second_holds_its_share() -> bool:
                # Hand-over is under way: wait until the second holds exactly what is now
                # assigned to it (a lock may outlive an assignment by a rebalance).
                mine = {str(q) for q in second.assigned_queues}
                held = {q for q, owner in locks(cluster).items() if owner == second.client_id}
                return bool(mine) and held == mine

            await until(second_holds_its_share)
            await publish_in_order(cluster, per_key=4)
            await until(lambda: sum(map(len, consumed.values())) >= 24)
        # The first member holds every queue again: 4 of Orders, 2 of %RETRY%og.
        await until(
            lambda: set(locks(cluster).values()) == {first.client_id} and len(locks(cluster)) == 6
        )
    for key, bodies in consumed.items():
        numbers = [int(b.split(b":")[1]) for b in bodies]
        firsts = [n for n in numbers]
        assert sorted(set(firsts)) == [0, 1, 2, 3], (key, numbers)
        # Order holds across the hand-over: each round of sends is consumed in order.
        assert numbers[:4] == [0, 1, 2, 3] and numbers[-4:] == [0, 1, 2, 3], (key, numbers)


async def test_the_retry_policy_dead_letters_a_hopeless_message_at_once(
    cluster: DevClusterThread,
) -> None:
    await publish_in_order(cluster, per_key=2)
    tries: list[int] = []
    consumed: list[bytes] = []

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        (message,) = messages
        if message.body == b"order-2:0":
            tries.append(message.reconsume_times)
            raise ValueError("cannot parse")
        consumed.append(message.body)
        return ConsumeStatus.SUCCESS

    policy = ConsumeRetryPolicy(dead_letter_on=(ValueError,))
    async with orderly_consumer(cluster, listener, retry_policy=policy):
        await until(lambda: len(consumed) == 5 and len(cluster.messages("%DLQ%og")) == 1)
    assert tries == [0]  # no local retries: straight to the DLQ
    assert b"order-2:1" in consumed


async def test_closing_does_not_wait_for_a_held_queue_to_retry(cluster: DevClusterThread) -> None:
    """A queue pausing before its next retry has no batch in flight: ``aclose`` stops it
    at once (its message uncommitted, for the next owner), not after close_timeout_ms."""
    await publish_in_order(cluster, 1)
    failures: list[int] = []

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        failures.append(len(messages))
        return ConsumeStatus.RECONSUME_LATER  # SUSPEND_CURRENT_QUEUE_A_MOMENT

    slow = {"suspend_current_queue_time_ms": 30_000, "close_timeout_ms": 60_000.0}
    with anyio.fail_after(10):
        async with orderly_consumer(cluster, listener, **slow):
            await until(lambda: len(failures) >= 1)  # failed, now pausing 30 s
    committed = [cluster.consumer_offsets(b).get("Orders@og", {}) for b in cluster.broker_names]
    assert sum(sum(queues.values()) for queues in committed) == 0
