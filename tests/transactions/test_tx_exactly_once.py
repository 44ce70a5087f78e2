"""A transaction's message is stored exactly once (T5, issue 32), however many check
rounds pass while it runs, when its END is lost, on 4.9.4 and on 5.x's batched op
records, and when a fresh member takes over mid-``execute``.

Every check round stores the half again and asks about the copy; these tests run many
rounds (on the shared fake clock) around each transaction and count what the real topic
holds, and which checks the brokers sent.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from producer import Message, TransactionProducer, TransactionState
from producer.consumer import ReceivedMessage
from producer.testing import DevClusterThread, TransactionConfig
from tests.transactions.conftest import (
    COMMIT,
    INTERVAL_MS,
    ROLLBACK,
    TIMEOUT_MS,
    TOPIC,
    UNKNOWN,
    SharedClock,
    barrier,
    check_round,
    tx_producer,
)

pytestmark = pytest.mark.anyio

ROUNDS_AFTER = 6  # check rounds run after a transaction ended: no copy may commit again


@pytest.fixture(params=["4.9.4", "5.x"])
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def cluster(clock: SharedClock, version: str) -> Iterator[DevClusterThread]:
    """Checks every second after one second, up to Java's 15 per half; on 5.x the op
    records are written in batches every 3 rounds (``transactionOpBatchInterval``)."""
    config = TransactionConfig(
        timeout_ms=TIMEOUT_MS,
        interval_ms=INTERVAL_MS,
        check_max=15,
        op_batch_interval_ms=3 * INTERVAL_MS if version == "5.x" else None,
    )
    with DevClusterThread(
        brokers=2,
        topics={TOPIC: 4},
        clock_ms=clock,
        transactions=config,
        seed=0,
        broker_version=version,
    ) as c:
        yield c


def stored(cluster: DevClusterThread) -> list[bytes]:
    return sorted(m.body for m in cluster.messages(TOPIC))


def truthful(rows: set[str]) -> object:
    """A check function answering from the local state: COMMIT once the row exists."""

    def check(message: ReceivedMessage) -> TransactionState:
        return COMMIT if message.msg_id in rows else ROLLBACK

    return check


async def rounds(
    cluster: DevClusterThread, clock: SharedClock, tx: TransactionProducer, count: int
) -> None:
    """``count`` check rounds, each waited for: every check the brokers sent meanwhile
    is answered, and the brokers have read the answers."""
    for _ in range(count):
        answered, sent = tx.checks.answered, len(cluster.transaction_checks())
        check_round(cluster, clock)
        await tx.checks.wait_answered(answered + len(cluster.transaction_checks()) - sent)
        for broker in cluster.broker_names:
            await barrier(tx, broker)


async def test_an_execute_outliving_five_timeouts_is_stored_once(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    rows: set[str] = set()
    seen: list[int] = []

    async with tx_producer(cluster, clock, truthful(rows)) as tx:  # type: ignore[arg-type]

        async def slow(message: Message) -> TransactionState:
            await rounds(cluster, clock, tx, 5)  # 5x the timeout: 4-5 copies checked
            seen.extend(cluster.transaction_checks(message.msg_id or ""))
            rows.add(message.msg_id or "")
            return COMMIT

        result = await tx.send_in_transaction(Message(TOPIC, b"slow"), slow)
        await barrier(tx, result.send_result.queue.broker_name)
        await rounds(cluster, clock, tx, ROUNDS_AFTER)
    assert len(seen) >= 4, "the broker checked copies while execute ran"
    assert stored(cluster) == [b"slow"]
    if cluster.cluster.broker_version == "4.9.4":  # ops at once: END named the newest copy
        assert cluster.transaction_checks(result.msg_id) == seen


async def test_a_two_step_half_left_open_four_timeouts_is_stored_once(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    rows: set[str] = set()
    async with tx_producer(cluster, clock, truthful(rows)) as tx:  # type: ignore[arg-type]
        half = await tx.send_half(Message(TOPIC, b"open"))
        await rounds(cluster, clock, tx, 4)
        rows.add(half.msg_id)
        await tx.commit(half)
        await barrier(tx, half.queue.broker_name)
        await rounds(cluster, clock, tx, ROUNDS_AFTER)
    assert stored(cluster) == [b"open"]


async def test_an_end_lost_after_checks_is_stored_once_and_not_lost(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    rows: set[str] = set()
    async with tx_producer(cluster, clock, truthful(rows)) as tx:  # type: ignore[arg-type]

        async def execute(message: Message) -> TransactionState:
            await rounds(cluster, clock, tx, 3)
            rows.add(message.msg_id or "")
            cluster.lose_end_transaction(message.msg_id)
            return COMMIT

        result = await tx.send_in_transaction(Message(TOPIC, b"lost"), execute)
        assert result.end_written  # as far as the producer can tell
        await barrier(tx, result.send_result.queue.broker_name)
        assert stored(cluster) == []
        await rounds(cluster, clock, tx, ROUNDS_AFTER)
    assert stored(cluster) == [b"lost"]


async def test_an_end_lost_with_no_check_is_stored_once(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    async with tx_producer(cluster, clock, truthful(set())) as tx:  # type: ignore[arg-type]

        def execute(message: Message) -> TransactionState:
            cluster.lose_end_transaction(message.msg_id)
            return COMMIT

        result = await tx.send_in_transaction(Message(TOPIC, b"quick"), execute)
        await barrier(tx, result.send_result.queue.broker_name)
        await rounds(cluster, clock, tx, ROUNDS_AFTER)
    # the check function would say ROLLBACK (no row): the producer's own END decides
    assert stored(cluster) == [b"quick"]


async def test_a_rollback_after_checks_stores_nothing(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    async with tx_producer(cluster, clock, truthful(set())) as tx:  # type: ignore[arg-type]

        async def declined(message: Message) -> TransactionState:
            await rounds(cluster, clock, tx, 3)
            return ROLLBACK

        await tx.send_in_transaction(Message(TOPIC, b"void"), declined)
        await rounds(cluster, clock, tx, ROUNDS_AFTER)
    assert stored(cluster) == []
    assert cluster.open_transactions() == set()


class Killed(BaseException):
    """The process dies: no END is sent, nothing else runs."""


@pytest.mark.parametrize("row_committed", [True, False], ids=["row", "no-row"])
async def test_a_member_replaced_mid_execute_stores_what_the_check_says(
    cluster: DevClusterThread, clock: SharedClock, row_committed: bool
) -> None:
    rows: set[str] = set()
    first = tx_producer(cluster, clock, truthful(rows), seed=1)  # type: ignore[arg-type]
    async with first:

        async def dies(message: Message) -> TransactionState:
            await rounds(cluster, clock, first, 2)
            if row_committed:
                rows.add(message.msg_id or "")
            raise Killed

        with pytest.raises(Killed):
            await first.send_in_transaction(Message(TOPIC, b"orphan"), dies)
    second = tx_producer(cluster, clock, truthful(rows), seed=2, topics=(TOPIC,))  # type: ignore[arg-type]
    async with second:
        await rounds(cluster, clock, second, ROUNDS_AFTER)
    assert stored(cluster) == ([b"orphan"] if row_committed else [])


async def test_aclose_leaves_open_halves_to_the_checks_without_waiting(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    """T7: only an open two-step half remains; closing does not wait ``close_timeout_ms``
    (an hour here) for it."""
    budget_s = 3600.0
    tx = tx_producer(cluster, clock, truthful(set()), close_timeout_ms=budget_s * 1000)
    async with tx:
        await tx.send_half(Message(TOPIC, b"left"))
        started = anyio.current_time()
        await tx.aclose()
        took = anyio.current_time() - started
    assert took < budget_s / 2  # only a wait for the open half takes the budget
    assert stored(cluster) == []


async def test_a_plain_check_function_runs_off_the_event_loop(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    import threading

    loop_thread = threading.get_ident()
    threads: list[int] = []

    def check(message: ReceivedMessage) -> TransactionState:
        threads.append(threading.get_ident())
        return ROLLBACK

    async with tx_producer(cluster, clock, check) as tx:
        await tx.send_in_transaction(Message(TOPIC, b"x"), lambda m: UNKNOWN)
        await rounds(cluster, clock, tx, 2)
    assert threads and loop_thread not in threads


def test_a_transaction_state_prints_its_name() -> None:
    assert (str(COMMIT), f"{ROLLBACK}", str(UNKNOWN)) == ("COMMIT", "ROLLBACK", "UNKNOWN")
    assert int(COMMIT) == 8  # still END_TRANSACTION's commitOrRollback on the wire
