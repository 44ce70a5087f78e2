"""Keyed (ordered) sends: the queue Java's `SelectMessageQueueByHash` picks for a key.

A keyed send's queue is a pure function of the key and the snapshot's queue list, so a
Python and a Java producer that see the same route put one key's messages on one queue.
"""

from __future__ import annotations

import struct

from ._snapshot import PublishSnapshot, Q

__all__ = ["java_string_hash", "keyed_queue"]

_INT32_SPAN = 1 << 32
_INT32_MASK = _INT32_SPAN - 1
_INT32_SIGN = 1 << 31


def java_string_hash(text: str) -> int:
    """Java's `String.hashCode()`: `h = 31 * h + unit` over the UTF-16 code units, in a
    signed 32-bit int (so a character outside the BMP counts as its two surrogates)."""
    data = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for unit in struct.unpack(f">{len(data) // 2}H", data):
        h = (31 * h + unit) & _INT32_MASK
    return h - _INT32_SPAN if h & _INT32_SIGN else h


def keyed_queue(snapshot: PublishSnapshot[Q], key: str) -> Q:
    """`SelectMessageQueueByHash`: `abs(key.hashCode() % n)` over the snapshot's queues,
    in route order. Java's `%` truncates toward zero, so that is `abs(hash) % n`.
    Raises `EmptySnapshotError` when there is no queue."""
    snapshot.require_queues()
    queues = snapshot.queues
    return queues[abs(java_string_hash(key)) % len(queues)]
