"""Transactional sends against the dev cluster (issue 26): commit, rollback, UNKNOWN and
check-backs, lost END_TRANSACTIONs, another member answering, checks that raise or hang,
and a half message retried on another broker. Each test runs on asyncio and on trio."""

from __future__ import annotations

import anyio
import pytest

from producer import Message, SendStatus, TransactionState
from producer.consumer import ReceivedMessage
from producer.errors import TransactionError
from producer.testing import DevClusterThread, FaultSpec
from tests.transactions.conftest import (
    CHECK_MAX,
    COMMIT,
    ROLLBACK,
    TOPIC,
    UNKNOWN,
    SharedClock,
    barrier,
    check_round,
    tx_producer,
)

pytestmark = pytest.mark.anyio

HALF = "RMQ_SYS_TRANS_HALF_TOPIC"


def visible(cluster: DevClusterThread) -> list[bytes]:
    """Bodies consumers can read: what the real topic holds."""
    return sorted(m.body for m in cluster.messages(TOPIC))


def never(message: ReceivedMessage) -> TransactionState:
    raise AssertionError(f"no check expected, got one for {message.msg_id}")


async def test_commit_is_visible_once_and_rollback_never(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    async with tx_producer(cluster, clock, never) as tx:
        committed = await tx.send_in_transaction(Message(TOPIC, b"paid"), lambda m: COMMIT)
        rolled = await tx.send_in_transaction(Message(TOPIC, b"void"), lambda m: ROLLBACK)
        for result in (committed, rolled):
            await barrier(tx, result.send_result.queue.broker_name)
        for _ in range(CHECK_MAX + 2):  # no check follows a settled transaction
            check_round(cluster, clock)
    assert committed.settled and rolled.settled
    assert (committed.state, rolled.state) == (COMMIT, ROLLBACK)
    assert visible(cluster) == [b"paid"]
    (stored,) = cluster.messages(TOPIC)
    assert stored.uniq_key == committed.msg_id
    assert stored.sys_flag & 0xC == 0x8  # TRANSACTION_COMMIT_TYPE
    assert stored.prepared_transaction_offset == int(committed.send_result.offset_msg_id[-16:], 16)
    assert len(cluster.messages(HALF)) == 2  # parked there, never copied for a check


async def test_the_half_message_is_invisible_until_the_end(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    seen: list[list[bytes]] = []

    def execute(message: Message) -> TransactionState:
        seen.append(visible(cluster))  # while the local transaction runs
        return COMMIT

    async with tx_producer(cluster, clock, never) as tx:
        result = await tx.send_in_transaction(Message(TOPIC, b"later", delay_level=3), execute)
        await barrier(tx, result.send_result.queue.broker_name)
    assert seen == [[]]
    assert visible(cluster) == [b"later"]
    (half,) = cluster.messages(HALF)
    assert "DELAY" not in half.properties  # a half message's delay level is cleared
    assert half.properties["REAL_TOPIC"] == TOPIC


async def test_unknown_then_the_check_back_commits(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    asked: list[ReceivedMessage] = []

    async def check(message: ReceivedMessage) -> TransactionState:
        asked.append(message)
        return COMMIT

    async with tx_producer(cluster, clock, check) as tx:
        clock.ms += 900  # born 100 ms before the first check round
        result = await tx.send_in_transaction(
            Message(TOPIC, b"maybe", keys="o-1"), lambda m: UNKNOWN
        )
        broker = result.send_result.queue.broker_name
        await barrier(tx, broker)
        assert result.end_written and not result.settled
        check_round(cluster, clock, 100)  # a round, but younger than the timeout: no check
        assert len(cluster.messages(HALF)) == 1  # no copy re-stored for a check
        check_round(cluster, clock)
        await tx.checks.wait_answered(1)
        await barrier(tx, broker)
        assert visible(cluster) == [b"maybe"]
        check_round(cluster, clock)  # settled: never asked again
        await barrier(tx, broker)
    (message,) = asked
    assert (message.msg_id, message.topic, message.keys) == (result.msg_id, TOPIC, ["o-1"])
    assert message.body == b"maybe" and message.properties["TRANSACTION_CHECK_TIMES"] == "1"


async def test_unknown_forever_is_checked_check_max_times_then_dropped(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    asked: list[str] = []

    def check(message: ReceivedMessage) -> TransactionState:
        asked.append(message.properties["TRANSACTION_CHECK_TIMES"])
        return UNKNOWN

    async with tx_producer(cluster, clock, check) as tx:
        result = await tx.send_in_transaction(Message(TOPIC, b"limbo"), lambda m: UNKNOWN)
        for n in range(1, CHECK_MAX + 3):
            check_round(cluster, clock)
            await tx.checks.wait_answered(min(n, CHECK_MAX))
        await barrier(tx, result.send_result.queue.broker_name)
    assert asked == ["1", "2", "3"]
    assert visible(cluster) == []
    (dropped,) = cluster.messages("TRANS_CHECK_MAX_TIME_TOPIC")
    assert dropped.uniq_key == result.msg_id


async def test_execute_raising_counts_as_unknown_and_the_check_decides(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    def execute(message: Message) -> TransactionState:
        raise RuntimeError("local transaction failed")

    async with tx_producer(cluster, clock, lambda m: ROLLBACK) as tx:
        result = await tx.send_in_transaction(Message(TOPIC, b"x"), execute)
        check_round(cluster, clock, 1500)
        await tx.checks.wait_answered(1)
        await barrier(tx, result.send_result.queue.broker_name)
    assert result.state is UNKNOWN and isinstance(result.execute_error, RuntimeError)
    assert visible(cluster) == []


async def test_a_lost_end_transaction_is_resolved_by_the_check(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    """END_TRANSACTION written but eaten by the network: the broker asks; the producer,
    which committed, finds the message not stored and commits the copy once the END had
    time to be applied (a round later here: T5), making it visible exactly once."""
    lost: list[str] = []

    async def execute(message: Message) -> TransactionState:
        broker = cluster.messages(HALF)[-1].broker_name
        cluster.set_fault(broker, FaultSpec(blackhole=True))  # what we write next is lost
        lost.append(broker)
        return COMMIT

    async with tx_producer(cluster, clock, lambda m: COMMIT) as tx:
        result = await tx.send_in_transaction(Message(TOPIC, b"once"), execute)
        assert result.settled  # as far as the producer can tell
        cluster.clear_fault(lost[0])
        await barrier(tx, lost[0])
        assert visible(cluster) == []
        check_round(cluster, clock, 1500)
        await tx.checks.wait_answered(1)
        await barrier(tx, lost[0])
        assert visible(cluster) == []  # maybe still on its way: UNKNOWN, ask again
        check_round(cluster, clock)
        await tx.checks.wait_answered(2)
        await barrier(tx, lost[0])
    assert visible(cluster) == [b"once"]


async def test_a_check_while_execute_runs_is_answered_unknown_without_asking(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    release = anyio.Event()
    asked: list[str] = []

    async def execute(message: Message) -> TransactionState:
        check_round(cluster, clock, 1500)  # the broker asks while we still work
        await tx.checks.wait_answered(1)
        release.set()
        return COMMIT

    async with tx_producer(cluster, clock, lambda m: asked.append(m.msg_id) or ROLLBACK) as tx:
        result = await tx.send_in_transaction(Message(TOPIC, b"slow"), execute)
        await barrier(tx, result.send_result.queue.broker_name)
    assert release.is_set() and asked == []  # UNKNOWN answered; the check never ran
    assert visible(cluster) == [b"slow"]  # execute's COMMIT stands, stored once


async def test_a_check_that_raises_or_hangs_is_answered_unknown(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    calls: list[int] = []

    async def check(message: ReceivedMessage) -> TransactionState:
        calls.append(int(message.properties["TRANSACTION_CHECK_TIMES"]))
        if len(calls) == 1:
            raise ValueError("database unreachable")
        if len(calls) == 2:
            await anyio.sleep_forever()  # hangs: the check timeout answers UNKNOWN
        return COMMIT

    async with tx_producer(cluster, clock, check, check_timeout_ms=50) as tx:
        result = await tx.send_in_transaction(Message(TOPIC, b"flaky"), lambda m: UNKNOWN)
        broker = result.send_result.queue.broker_name
        for n in (1, 2, 3):
            check_round(cluster, clock, 1500 if n == 1 else 1000)
            await tx.checks.wait_answered(n)
            await barrier(tx, broker)
            assert visible(cluster) == ([b"flaky"] if n == 3 else [])
    assert calls == [1, 2, 3]


async def test_the_check_reaches_another_member_when_the_sender_is_gone(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    async with tx_producer(cluster, clock, never, seed=1) as first:
        orphan = await first.send_in_transaction(Message(TOPIC, b"orphan"), lambda m: UNKNOWN)
    asked: list[str] = []

    def check(message: ReceivedMessage) -> TransactionState:
        asked.append(message.msg_id)  # from the message alone: this process never saw it
        return COMMIT

    async with tx_producer(cluster, clock, check, seed=2, topics=(TOPIC,)) as second:
        check_round(cluster, clock, 1500)
        await second.checks.wait_answered(1)
        await barrier(second, orphan.send_result.queue.broker_name)
    assert asked == [orphan.msg_id]
    assert visible(cluster) == [b"orphan"]


async def test_a_half_message_failed_on_one_broker_is_retried_on_another(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    async with tx_producer(cluster, clock, never) as tx:
        cluster.set_fault("broker-a", FaultSpec(error_code=14))  # SERVICE_NOT_AVAILABLE
        results = [
            await tx.send_in_transaction(Message(TOPIC, b"r%d" % i), lambda m: COMMIT)
            for i in range(4)
        ]
        for result in results:
            await barrier(tx, result.send_result.queue.broker_name)
    retried = [r for r in results if len(r.send_result.attempts) > 1]
    assert retried, "a half message first went to broker-a and was retried"
    assert all(r.send_result.queue.broker_name == "broker-b" for r in results)
    assert all(r.settled for r in results)
    assert visible(cluster) == sorted(b"r%d" % i for i in range(4))  # each once


async def test_two_steps_commit_and_rollback(cluster: DevClusterThread, clock: SharedClock) -> None:
    async with tx_producer(cluster, clock, never) as tx:
        kept = await tx.send_half(Message(TOPIC, b"kept"))
        dropped = await tx.send_half(Message(TOPIC, b"dropped"))
        assert kept.status is SendStatus.SEND_OK
        committed = await tx.commit(kept)
        await tx.rollback(dropped)
        with pytest.raises(TransactionError, match="not open here"):
            await tx.commit(kept)  # a second commit would store a duplicate
        await barrier(tx, kept.queue.broker_name)
        await barrier(tx, dropped.queue.broker_name)
    assert committed.settled and visible(cluster) == [b"kept"]


async def test_an_open_two_step_half_is_answered_unknown(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    async with tx_producer(cluster, clock, never) as tx:
        half = await tx.send_half(Message(TOPIC, b"pending"))
        check_round(cluster, clock, 1500)
        await tx.checks.wait_answered(1)
        await tx.commit(half)
        await barrier(tx, half.queue.broker_name)
    assert visible(cluster) == [b"pending"]


async def test_a_half_not_stored_send_ok_is_rolled_back_without_running_execute(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    ran: list[Message] = []
    for broker in cluster.broker_names:
        cluster.set_fault(broker, FaultSpec(store_status=10))  # FLUSH_DISK_TIMEOUT

    def execute(message: Message) -> TransactionState:
        ran.append(message)
        return COMMIT

    async with tx_producer(cluster, clock, never) as tx:
        result = await tx.send_in_transaction(Message(TOPIC, b"unsure"), execute)
        await barrier(tx, result.send_result.queue.broker_name)
    assert result.send_result.status is SendStatus.FLUSH_DISK_TIMEOUT
    assert (ran, result.state, result.end_written) == ([], ROLLBACK, True)
    assert visible(cluster) == []
