"""What the producer tests read off the dev cluster: requests served, retries' landing."""

from __future__ import annotations

from producer import SendResult
from producer.testing import DevClusterThread

UNEVEN = "Uneven"  # 4 + 2 + 3 queues: a retry from broker-a can land on another queue id


def requests_served(cluster: DevClusterThread) -> int:
    """Requests every broker of the cluster served so far."""
    return sum(int(cluster.broker_status(name)["requests"]) for name in cluster.broker_names)


def add_uneven_topic(cluster: DevClusterThread) -> None:
    """``UNEVEN``: 4 queues on broker-a, 2 on broker-b, 3 on broker-c."""
    for broker, queues in (("broker-a", 4), ("broker-b", 2), ("broker-c", 3)):
        cluster.add_topic(UNEVEN, queues, brokers=[broker])


def assert_retries_were_rebuilt(cluster: DevClusterThread, results: list[SendResult]) -> None:
    """Each message is stored once, on the queue and broker of the attempt that landed.

    Guard: some retry went to another queue id than its first attempt, or a request re-sent
    with the first attempt's header would pass unnoticed.
    """
    stored = {m.uniq_key: m for m in cluster.messages(UNEVEN)}
    assert len(stored) == len(results) == cluster.message_count(UNEVEN)
    retried = [r for r in results if len(r.attempts) > 1]
    assert any(r.attempts[0].queue_id != r.queue.queue_id for r in retried)
    for r in results:
        landed = stored[r.msg_id]
        assert (landed.broker_name, landed.queue_id) == (r.queue.broker_name, r.queue.queue_id)
