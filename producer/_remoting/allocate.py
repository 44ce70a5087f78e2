"""Queue allocation among a group's consumers (``AllocateMessageQueueAveragely``).

In the remoting core because both sides run it: a 4.x client rebalancing itself, and a
5.x broker answering QUERY_ASSIGNMENT for a client that does not (the dev cluster's
``_assignment.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from producer._types.message import MessageQueue

__all__ = ["allocate_averagely", "java_sorted", "queue_sort_key"]

T = TypeVar("T")


def queue_sort_key(queue: MessageQueue) -> tuple[str, str, int]:
    """``MessageQueue.compareTo``: topic, then broker name, then queue id."""
    return (java_order(queue.topic), java_order(queue.broker_name), queue.queue_id)


def java_order(text: str) -> str:
    """A sort key that orders strings as Java's ``String.compareTo`` (UTF-16 code units).

    Python compares code points; the two differ only for characters beyond the BMP
    against U+E000..U+FFFF, which UTF-16-BE bytes order as Java does.
    """
    return text.encode("utf-16-be").decode("latin-1")


def java_sorted(items: Sequence[str]) -> list[str]:
    return sorted(items, key=java_order)


def allocate_averagely(
    queues: Sequence[MessageQueue], consumers: Sequence[str], me: str
) -> list[MessageQueue]:
    """The queues ``me`` takes: contiguous, as even as possible, the first ones larger.

    Both lists are sorted here as Java sorts them, so every member computes the same
    split from the same inputs. A consumer not in the list takes nothing.
    """
    mq_all = sorted(queues, key=queue_sort_key)
    cid_all = java_sorted(consumers)
    if me not in cid_all or not mq_all:
        return []
    index = cid_all.index(me)
    n_mq, n_cid = len(mq_all), len(cid_all)
    mod = n_mq % n_cid
    if n_mq <= n_cid:
        size = 1
    elif mod > 0 and index < mod:
        size = n_mq // n_cid + 1
    else:
        size = n_mq // n_cid
    start = index * size if mod > 0 and index < mod else index * size + mod
    take = min(size, n_mq - start)
    return [mq_all[(start + k) % n_mq] for k in range(take)]
