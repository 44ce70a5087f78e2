"""The dev broker answers LOCK_BATCH_MQ with its queues in the order a Java ``HashSet``
iterates them (``RebalanceLockManager.tryLockBatch`` returns one, fastjson writes it)."""

from __future__ import annotations

from producer._remoting.java_hash_map import java_hash_order
from producer._types.message import MessageQueue
from producer.testing._java_order import queue_hash

QUEUES = [
    MessageQueue(topic, broker, queue_id)
    for topic in ("SpecTopic", "%RETRY%SpecGroup", "Orders")
    for broker in ("broker-a", "broker-b")
    for queue_id in range(4)
]
# Printed by Java 17: a record with MessageQueue's hashCode() added in this order to
# `new HashSet<>(n)`, then iterated (indexes into QUEUES).
JAVA_ORDER = {
    3: [2, 1, 0],
    8: [0, 5, 4, 2, 7, 1, 6, 3],
    24: [19, 11, 18, 23, 8, 13, 12, 10, 15, 9, 14, 2, 7, 1, 6, 3, 0, 5, 4, 20, 17, 22, 16, 21],
}


def test_queues_come_out_in_java_hash_set_order() -> None:
    for size, expected in JAVA_ORDER.items():
        ordered = java_hash_order(QUEUES[:size], queue_hash, initial_capacity=size)
        assert [QUEUES.index(q) for q in ordered] == expected, size
