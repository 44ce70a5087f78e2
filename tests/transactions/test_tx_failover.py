"""A transaction left UNKNOWN on a master that dies is checked by the slave promoted in its
place (issue 44 item 4): the producer's route refresh sees the new master's address, sends
it a heartbeat at once, and answers the check on the connection it came on."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from producer import Message
from producer.consumer import ReceivedMessage
from producer.testing import DevClusterThread, TransactionConfig
from tests.helpers.push import until
from tests.transactions.conftest import (
    CHECK_MAX,
    COMMIT,
    INTERVAL_MS,
    TIMEOUT_MS,
    TOPIC,
    UNKNOWN,
    SharedClock,
    barrier,
    check_round,
    tx_producer,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture
def cluster(clock: SharedClock) -> Iterator[DevClusterThread]:
    config = TransactionConfig(timeout_ms=TIMEOUT_MS, interval_ms=INTERVAL_MS, check_max=CHECK_MAX)
    with DevClusterThread(
        brokers=2, topics={TOPIC: 4}, clock_ms=clock, transactions=config, seed=0, slaves=1
    ) as c:
        yield c


async def test_a_check_from_a_promoted_master_is_answered(
    cluster: DevClusterThread, clock: SharedClock
) -> None:
    asked: list[ReceivedMessage] = []

    def check(message: ReceivedMessage) -> COMMIT:  # type: ignore[valid-type]
        asked.append(message)
        return COMMIT

    # The route refreshed every 200 ms stands in for "the route shows the new master".
    async with tx_producer(cluster, clock, check, route_refresh_interval_ms=200) as tx:
        result = await tx.send_in_transaction(Message(TOPIC, b"pending"), lambda m: UNKNOWN)
        broker = result.send_result.queue.broker_name
        await barrier(tx, broker)
        check_round(cluster, clock, 0)  # the slave copies the half message on this tick
        assert cluster.replication(broker)["behind"] == 0
        old = cluster.replication(broker)["master"]
        # The producer's first heartbeat round (1 s after its start) is over when the other
        # broker, which it never sent to, has heard from it; the next is 30 s away.
        (other,) = {"broker-a", "broker-b"} - {broker}
        await until(lambda: cluster.broker_status(other)["requests"] > 0)
        new = cluster.promote(broker)
        assert new != old
        heard = cluster.broker_status(broker)["requests"]
        with anyio.fail_after(20):
            # The producer's route refresh names the new master, and sends it a heartbeat
            # at once (no send goes there: nothing else of ours can reach it).
            await until(lambda: cluster.broker_status(broker)["requests"] > heard)
            while not asked:  # each round asks every producer the new master heard from
                check_round(cluster, clock)
                await anyio.sleep(0.05)
            await tx.checks.wait_answered(1)
            while b"pending" not in [m.body for m in cluster.messages(TOPIC)]:
                await barrier(tx, broker)  # the END_TRANSACTION went to the new master
    assert [m.msg_id for m in asked] == [result.msg_id]
