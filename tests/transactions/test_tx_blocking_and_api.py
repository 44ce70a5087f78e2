"""The blocking facade's transactions, and the public names."""

from __future__ import annotations

import producer
from producer import Message, TransactionState
from producer.blocking import TransactionProducer
from producer.consumer import ReceivedMessage
from producer.testing import DevClusterThread
from tests.transactions.conftest import TOPIC, SharedClock, barrier, check_round


def test_the_public_names_are_exported() -> None:
    for name in ("TransactionProducer", "TransactionResult", "TransactionState"):
        assert name in producer.__all__ and getattr(producer, name).__doc__


def test_blocking_send_in_transaction_commit_rollback_and_a_check(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    asked: list[str] = []

    def check(message: ReceivedMessage) -> TransactionState:  # runs in a worker thread
        asked.append(message.msg_id)
        return TransactionState.COMMIT

    def boom(message: Message) -> TransactionState:
        raise RuntimeError("local transaction failed")

    with TransactionProducer(
        "BlockingTx", cluster.namesrv_addr, check=check, clock=clock, batching=False
    ) as tx:
        committed = tx.send_in_transaction(Message(TOPIC, b"a"), lambda m: TransactionState.COMMIT)
        unknown = tx.send_in_transaction(Message(TOPIC, b"b"), boom)
        half = tx.send_half(Message(TOPIC, b"c"))
        tx.rollback(half)
        check_round(cluster, clock, 1500)
        tx.submit(lambda p: tx._tx.checks.wait_answered(1)).result(timeout=10)
        for broker in cluster.broker_names:
            tx.submit(lambda p, b=broker: barrier(tx._tx, b)).result(timeout=10)
    assert committed.settled and unknown.state is TransactionState.UNKNOWN
    assert isinstance(unknown.execute_error, RuntimeError)
    assert asked == [unknown.msg_id]
    assert sorted(m.body for m in cluster.messages(TOPIC)) == [b"a", b"b"]
