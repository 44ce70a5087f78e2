"""The order a ``java.util.HashMap`` / ``HashSet`` iterates in, given the keys' Java
``hashCode``: the order a Java client writes a map's properties, and a broker or name
server a map or set into a JSON body (fastjson walks it as it iterates). Pure; the hash
is a parameter (Java's ``String.hashCode`` is ``latency_fault.java_string_hash``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["java_hash_order"]

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
