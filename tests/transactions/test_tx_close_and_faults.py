"""Closing with checks queued (README T7), an END_TRANSACTION that cannot be written (T3),
and the dev cluster's view of transactions in doubt. asyncio and trio."""

from __future__ import annotations

import anyio
import pytest

from producer import Message, TransactionProducer, TransactionState
from producer.consumer import ReceivedMessage
from producer.errors import ProducerError
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

CLOSE_MS = 300


def visible(cluster: DevClusterThread) -> list[bytes]:
    return sorted(m.body for m in cluster.messages(TOPIC))


async def barriers(tx: TransactionProducer, cluster: DevClusterThread) -> None:
    for broker in cluster.broker_names:
        await barrier(tx, broker)


async def test_aclose_answers_queued_checks_and_drops_those_arriving_meanwhile(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    """T7: one check runs (held at a gate), one waits in the queue when ``aclose()`` starts;
    both are answered before it returns. The next round's checks, arriving while it
    closes, are dropped unanswered: the check function never sees them."""
    gate, first_asked, closing = anyio.Event(), anyio.Event(), anyio.Event()
    asked: list[str] = []
    seen_while_closing: list[tuple[int, int, list[str]]] = []

    async def check(message: ReceivedMessage) -> TransactionState:
        asked.append(message.properties["TRANSACTION_CHECK_TIMES"])
        first_asked.set()
        await gate.wait()
        return COMMIT

    async def while_closing() -> None:
        await closing.wait()
        await anyio.wait_all_tasks_blocked()  # aclose() waits for the queued checks
        check_round(cluster, clock)  # both asked again, while closing
        await barriers(tx, cluster)
        seen_while_closing.append((tx.checks.answered, tx.checks.dropped, list(asked)))
        gate.set()

    tx = tx_producer(cluster, clock, check, close_timeout_ms=10_000)
    async with anyio.create_task_group() as tg:
        tg.start_soon(while_closing)
        await tx.start()
        for body in (b"a", b"b"):
            await tx.send_in_transaction(Message(TOPIC, body), lambda m: UNKNOWN)
        check_round(cluster, clock, 1500)
        await barriers(tx, cluster)  # both checks read: one taken by the worker, one queued
        await first_asked.wait()
        closing.set()
        await tx.aclose()
    assert seen_while_closing == [(0, 2, ["1"])]
    assert (tx.checks.answered, tx.checks.dropped, asked) == (2, 2, ["1", "1"])


async def test_aclose_gives_up_on_a_hanging_check_at_its_deadline(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    """T7: a check that never returns does not hold ``aclose()`` past ``close_timeout_ms``
    (plus the producer's own close); it is left unanswered for the broker to ask again."""
    hung = anyio.Event()

    async def check(message: ReceivedMessage) -> TransactionState:
        hung.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    tx = tx_producer(cluster, clock, check, check_timeout_ms=600_000, close_timeout_ms=CLOSE_MS)
    with anyio.fail_after(10):  # entered before tx's own task group, left after it
        async with tx:
            result = await tx.send_in_transaction(Message(TOPIC, b"x"), lambda m: UNKNOWN)
            check_round(cluster, clock, 1500)
            await hung.wait()
            started = anyio.current_time()
        took_ms = (anyio.current_time() - started) * 1000
    assert CLOSE_MS * 0.9 <= took_ms < CLOSE_MS * 2 + 1000, took_ms
    assert tx.checks.answered == 0
    assert cluster.open_transactions() == {result.msg_id}  # still the broker's to ask


async def test_an_end_that_cannot_be_written_is_reported_and_the_check_resolves_it(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    """T3: the broker that stored the half goes down before END_TRANSACTION: the result
    says ``end_written=False`` with the error; back up, the broker checks, and the check
    function's COMMIT makes the message visible once."""
    gone: list[str] = []

    async def execute(message: Message) -> TransactionState:
        (broker,) = {m.broker_name for m in cluster.messages("RMQ_SYS_TRANS_HALF_TOPIC")}
        cluster.set_fault(broker, FaultSpec(down=True))
        await barrier(tx, broker)  # the producer has seen its connection close
        gone.append(broker)
        return COMMIT

    async with tx_producer(cluster, clock, lambda m: COMMIT) as tx:
        result = await tx.send_in_transaction(Message(TOPIC, b"late"), execute)
        assert (result.state, result.end_written, result.settled) == (COMMIT, False, False)
        assert isinstance(result.end_error, ProducerError)
        cluster.clear_fault(gone[0])  # back on its old port, the half still stored
        assert cluster.open_transactions() == {result.msg_id} and visible(cluster) == []
        await barrier(tx, gone[0])  # the periodic heartbeat: the broker knows the group again
        check_round(cluster, clock, 1500)
        await tx.checks.wait_answered(1)
        await barrier(tx, gone[0])
    assert visible(cluster) == [b"late"]
    assert cluster.open_transactions() == set()


async def test_the_dev_cluster_reports_the_transactions_in_doubt(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    """``open_transactions()``: UNKNOWN stays open; a COMMIT from a check closes it; a
    half checked ``check_max`` times is dropped and closed; a ROLLBACK closes it."""
    states = {b"c": COMMIT, b"u": UNKNOWN}

    def check(message: ReceivedMessage) -> TransactionState:
        return states[message.body]

    async with tx_producer(cluster, clock, check) as tx:
        ended = [
            await tx.send_in_transaction(Message(TOPIC, body), lambda m: UNKNOWN)
            for body in (b"c", b"u")
        ]
        rolled = await tx.send_in_transaction(Message(TOPIC, b"r"), lambda m: ROLLBACK)
        await barriers(tx, cluster)
        assert cluster.open_transactions() == {r.msg_id for r in ended}
        check_round(cluster, clock, 1500)
        await tx.checks.wait_answered(2)
        await barriers(tx, cluster)
        assert cluster.open_transactions() == {ended[1].msg_id}
        for n in range(CHECK_MAX):  # asked check_max times in all, then dropped
            check_round(cluster, clock)
            await tx.checks.wait_answered(min(3 + n, 2 + CHECK_MAX - 1))
        await barriers(tx, cluster)
        assert cluster.open_transactions() == set()
    assert rolled.settled and visible(cluster) == [b"c"]


async def test_a_half_whose_fate_is_unknown_is_not_retried_on_another_broker(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    """T1: a half that broker-a stored but did not answer in time is not sent again to
    broker-b: ``execute`` does not run, the send raises, and the check (answering from
    the local state: no commit there) rolls the stored half back. A retry would have run
    ``execute`` and left the first half behind, and the check's truthful COMMIT would
    have stored the event twice."""
    committed: list[str] = []

    def execute(message: Message) -> TransactionState:
        assert message.msg_id is not None
        committed.append(message.msg_id)
        return COMMIT

    def check(message: ReceivedMessage) -> TransactionState:
        return COMMIT if message.msg_id in committed else ROLLBACK

    failed: list[ProducerError] = []
    async with tx_producer(cluster, clock, check) as tx:
        cluster.set_fault("broker-a", FaultSpec(latency_ms=2000))  # stored, answered late
        for i in range(4):  # taking turns over two brokers: some go to broker-a
            try:
                await tx.send_in_transaction(Message(TOPIC, b"r%d" % i), execute, timeout_ms=900)
            except ProducerError as exc:
                failed.append(exc)
        cluster.clear_fault("broker-a")
        assert failed and len(committed) == 4 - len(failed)
        assert all(len(exc.attempts) == 1 for exc in failed)  # type: ignore[attr-defined]
        await barriers(tx, cluster)
        check_round(cluster, clock, 1500)
        await tx.checks.wait_answered(len(failed))
        await barriers(tx, cluster)
    assert len(visible(cluster)) == len(committed) == len(set(visible(cluster)))
    assert cluster.open_transactions() == set()
