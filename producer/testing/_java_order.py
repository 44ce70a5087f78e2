"""The order a ``java.util.HashMap`` / ``HashSet`` iterates in: the order a Java broker or
name server writes a map or set into a JSON body (fastjson walks it as it iterates)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from latency_fault import java_string_hash
from producer._types.message import MessageQueue

T = TypeVar("T")


def java_hash_order(
    items: Sequence[T], hash_code: Callable[[T], int], initial_capacity: int = 16
) -> list[T]:
    """``items`` (added in this order to a map made with ``initial_capacity``; 16 is
    ``new HashMap<>()``) in iteration order: by bucket of the final table - the hash's
    unsigned bits spread as ``h ^ h >>> 16``, masked by the table size - then by
    addition within a bucket."""
    capacity = 1
    while capacity < initial_capacity:
        capacity *= 2
    while len(items) > capacity * 3 // 4:  # the 0.75 load factor: the table doubles
        capacity *= 2

    def bucket(entry: tuple[int, T]) -> tuple[int, int]:
        h = hash_code(entry[1]) & 0xFFFFFFFF
        return ((h ^ (h >> 16)) & (capacity - 1), entry[0])

    return [item for _, item in sorted(enumerate(items), key=bucket)]


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def queue_hash(queue: MessageQueue) -> int:
    """``MessageQueue.hashCode()``: 31-based over brokerName, queueId, topic."""
    h = 31 + java_string_hash(queue.broker_name)
    h = 31 * _int32(h) + queue.queue_id
    return _int32(31 * _int32(h) + java_string_hash(queue.topic))
