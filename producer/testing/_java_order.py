"""Java's ``MessageQueue.hashCode()``, for the order a broker writes a set of queues in
(``producer._remoting.java_hash_map.java_hash_order`` is the iteration order itself)."""

from __future__ import annotations

from latency_fault import java_string_hash
from producer._types.message import MessageQueue


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def queue_hash(queue: MessageQueue) -> int:
    """``MessageQueue.hashCode()``: 31-based over brokerName, queueId, topic."""
    h = 31 + java_string_hash(queue.broker_name)
    h = 31 * _int32(h) + queue.queue_id
    return _int32(31 * _int32(h) + java_string_hash(queue.topic))
