"""One PULL_MESSAGE of a pull consumer and what it means for the queue's position.

The records are turned into messages by the push consumer's own steps (the subscription's
tag check, after ``decode_pulled`` with its size cap and codecs): one pull decoding for
both consumers. Where the push consumer consumes an undecodable message as a failure, a
pull consumer stops in front of it: the good messages before it are returned, and the
next pull of that queue raises :class:`~producer.errors.UndecodableBodyError` saying
where it is.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from producer._consume.message import ReceivedMessage, decode_pulled
from producer._remoting.codecs import DEFAULT_CODECS, BodyCodecs
from producer._remoting.consumer_requests import PullParams, PullResult, PullStatus
from producer._remoting.message import MessageQueue
from producer._remoting.namespace import unwrap
from producer._remoting.subscription import Subscription
from producer.consumer._broker_api import BrokerApi
from producer.consumer._queue_worker import MAX_BODY_BYTES, PULL_RPC_MARGIN_MS
from producer.errors import OffsetOutOfRangeError, UndecodableBodyError

log = logging.getLogger("producer.consumer")

__all__ = ["PullRequest", "Pulled", "decode_records", "pull_once"]


@dataclass(slots=True)
class Pulled:
    """What one pull of one queue gave: messages, and where the queue's position goes."""

    queue: MessageQueue
    position: int
    messages: list[ReceivedMessage] = field(default_factory=list)
    min_offset: int = 0
    max_offset: int = 0
    records: bytes = b""  # the records undecoded, for a PullRequest with decode=False


@dataclass(frozen=True, slots=True)
class PullRequest:
    group: str
    max_messages: int
    suspend_ms: int  # 0: answer at once; else the broker may hold the pull this long
    request_timeout_ms: float
    raise_out_of_range: bool
    namespace: str | None = None
    decode: bool = True  # False: keep the records as they came (Pulled.records), unchecked


async def pull_once(
    api: BrokerApi, queue: MessageQueue, offset: int, subscription: Subscription, ask: PullRequest
) -> Pulled:
    """One pull of ``queue`` from ``offset``; every status handled (docs/consuming.md 1.5)."""
    params = PullParams(
        group=ask.group,
        queue=queue,
        offset=offset,
        max_messages=ask.max_messages,
        commit_offset=0,
        suspend_timeout_ms=ask.suspend_ms,
        sub_version=0,
        commit=False,  # offsets are committed only by commit(), never piggy-backed
        suspend=ask.suspend_ms > 0,
        expression=subscription.expression,  # no heartbeat needed: no group membership
        expression_type=subscription.expression_type,
    )
    timeout = ask.suspend_ms + PULL_RPC_MARGIN_MS if ask.suspend_ms else ask.request_timeout_ms
    result = await api.pull(params, timeout)
    pulled = Pulled(queue, result.next_begin_offset, [], result.min_offset, result.max_offset)
    if result.status is PullStatus.FOUND and not ask.decode:
        pulled.records = result.body  # tags, bodies and namespace are the caller's to check
    elif result.status is PullStatus.FOUND:
        pulled.messages, pulled.position = _messages(queue, result, subscription)
        if ask.namespace is not None:  # the user's topic (the queue keeps the wire's)
            for message in pulled.messages:
                message.topic = unwrap(message.topic, ask.namespace)
    elif result.status is PullStatus.OFFSET_ILLEGAL:
        _offset_moved(queue, offset, result, raising=ask.raise_out_of_range)
    # NO_NEW_MSG keeps the offset; NO_MATCHED_MSG moves past what the tag filter skipped:
    # both are next_begin_offset, as the broker says.
    return pulled


def decode_records(records: bytes, broker_name: str) -> list[ReceivedMessage]:
    """The messages of records pulled from ``broker_name`` (:meth:`PullConsumer.pull_records`),
    decoded as ``getmany`` decodes them: bodies inflated (to at most the consumer's bound),
    a retry topic's messages under their original topic. No tag check here, and a body
    that does not inflate is marked (``ReceivedMessage.undecodable``), not raised."""
    return decode_pulled(records, broker_name, max_body_bytes=MAX_BODY_BYTES)


def _messages(
    queue: MessageQueue,
    result: PullResult,
    subscription: Subscription,
    codecs: BodyCodecs = DEFAULT_CODECS,
) -> tuple[list[ReceivedMessage], int]:
    """The pull's messages and the position after them (before a bad body, if any)."""
    pulled = decode_pulled(
        result.body, queue.broker_name, max_body_bytes=MAX_BODY_BYTES, codecs=codecs
    )
    messages: list[ReceivedMessage] = []
    for message in pulled:
        # The broker filters by tag hash only; the tag itself is checked here, as Java does.
        if not subscription.matches(message.tags):
            continue
        bad = message.undecodable
        if bad is not None:
            if messages:  # hand out the good ones; the next pull starts at the bad one
                return messages, message.queue_offset
            raise UndecodableBodyError(
                message.msg_id, bad.cause, queue=str(queue), offset=message.queue_offset
            ) from bad.cause
        messages.append(message)
    return messages, result.next_begin_offset


def _offset_moved(
    queue: MessageQueue, requested: int, result: PullResult, *, raising: bool
) -> None:
    if raising:
        raise OffsetOutOfRangeError(
            str(queue), requested, result.next_begin_offset, result.min_offset, result.max_offset
        )
    log.warning(
        "%s: offset %d is out of range [%d, %d]; moving to %d as the broker suggests",
        queue,
        requested,
        result.min_offset,
        result.max_offset,
        result.next_begin_offset,
    )
