"""Where a pull consumer's reading starts, asked of the brokers: the group's committed
offset or, for a group that never committed, the reset (``auto_offset_reset``); and the
first message stored at or after a time (``offsets_for_time``, ``seek_to_time``)."""

from __future__ import annotations

from producer._types.message import MessageQueue
from producer.consumer._broker_api import BrokerApi
from producer.consumer._pull_step import PullRequest, pull_once
from producer.consumer._sql_filters import parse_subscription

__all__ = ["not_stored_before", "start_offset"]


async def start_offset(api: BrokerApi, queue: MessageQueue, reset: str) -> int:
    """The committed offset, else the queue's first (``reset`` ``"earliest"``) or its end
    (``"latest"``, a word of ``START_WORDS``)."""
    committed = await api.query_offset(queue)
    if committed is not None and committed >= 0:
        return committed
    if reset == "earliest":
        return await api.min_offset(queue)
    return await api.max_offset(queue)


async def not_stored_before(
    api: BrokerApi, queue: MessageQueue, offset: int, timestamp_ms: int, ask: PullRequest
) -> int:
    """``offset`` (SEARCH_OFFSET_BY_TIMESTAMP's closest message), or the next one if the
    message there was stored before ``timestamp_ms``; ``ask`` pulls one message."""
    every = parse_subscription(queue.topic, "*")
    pulled = await pull_once(api, queue, offset, every, ask)
    if not pulled.messages:
        return pulled.position
    first = pulled.messages[0]
    return first.queue_offset + 1 if first.store_timestamp < timestamp_ms else offset
