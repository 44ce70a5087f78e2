"""A namespaced TransactionProducer (its Producer's ``namespace=``): the half message and
the committed one live in ``nsA%TxTopic``, and the check function sees the user's topic."""

from __future__ import annotations

import pytest

from producer import Message, TransactionState
from producer.consumer import ReceivedMessage
from producer.testing import DevClusterThread
from tests.transactions.conftest import TOPIC, SharedClock, barrier, check_round, tx_producer

pytestmark = pytest.mark.anyio


async def test_a_namespaced_transaction_is_checked_under_the_users_topic(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    cluster.add_topic(f"nsA%{TOPIC}", 4)
    asked: list[ReceivedMessage] = []

    def check(message: ReceivedMessage) -> TransactionState:
        asked.append(message)
        return TransactionState.COMMIT

    async with tx_producer(cluster, clock, check, namespace="nsA", topics=(TOPIC,)) as tx:
        assert tx.group == "nsA%TxGroup"
        clock.ms += 900
        result = await tx.send_in_transaction(
            Message(TOPIC, b"maybe"), lambda m: TransactionState.UNKNOWN
        )
        broker = result.send_result.queue.broker_name
        await barrier(tx, broker)
        check_round(cluster, clock)
        await tx.checks.wait_answered(1)
        await barrier(tx, broker)
    assert result.send_result.queue.topic == TOPIC
    [message] = asked
    assert message.topic == TOPIC
    [stored] = cluster.messages(f"nsA%{TOPIC}")
    assert (stored.body, stored.properties["INSTANCE_ID"]) == (b"maybe", "nsA")
    assert cluster.messages(TOPIC) == []
