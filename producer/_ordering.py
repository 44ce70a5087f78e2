"""Keyed (ordered) sends: the queue for a key, as Java's ``SelectMessageQueueByHash``."""

from __future__ import annotations

from collections.abc import Sequence

from producer._remoting.message import MessageQueue
from producer.errors import NoRouteError

_INT32 = 2**32


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: 31-polynomial over UTF-16 code units, as a signed int32."""
    data = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) % _INT32
    return h - _INT32 if h >= 2**31 else h


def queue_for_key(queues: Sequence[MessageQueue], key: str) -> MessageQueue:
    """The queue Java picks for ``key``: ``abs(hashCode % n)`` over the writable queues,
    so Python and Java producers keep one key's messages on one queue."""
    if not queues:
        raise NoRouteError("?", (), "no writable queue for a keyed send")
    n = len(queues)
    # Java's % truncates toward zero; abs() of it equals abs(h) % n.
    return queues[abs(java_string_hash(key)) % n]
