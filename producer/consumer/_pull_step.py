"""One PULL_MESSAGE, made the one way every reader of queues makes it: the push
consumer's queue loop, the pull consumer and the dead-letter tool (docs/consuming.md 1.5).

:func:`pull` builds the request from a reader's :class:`PullRequest`, sends it with a
timeout that outlives the broker's hold, and turns the records of a FOUND answer into
messages: decoded by the reader's codecs (an inflated body is capped at
``MAX_BODY_BYTES``; one that does not decode is marked ``undecodable``), named by the
user's topic (namespace unwrapped; a retry's original topic is restored by the decoder),
and filtered exactly by the subscription's tags (the broker filters by hash code only,
as Java's ``PullAPIWrapper.processPullResult`` re-checks). What a status means for the
queue's position is the reader's to say: the push consumer's queue loop keeps an offset
table, the pull consumer a position per queue (:func:`pull_once`, below), the
dead-letter tool reads to the end.

Where the push consumer consumes an undecodable message as a failure, a pull consumer
stops in front of it: the good messages before it are returned, and the next pull of
that queue raises :class:`~producer.errors.UndecodableBodyError` saying where it is.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from producer._consume.received import MAX_BODY_BYTES, decode_pulled
from producer._remoting.codecs import DEFAULT_CODECS, BodyCodecs
from producer._remoting.consumer_requests import PullParams, PullResult, PullStatus
from producer._remoting.namespace import unwrap
from producer._remoting.subscription import Subscription
from producer._types.consumer.received import ReceivedMessage
from producer._types.message import MessageQueue
from producer.consumer._broker_api import BrokerApi
from producer.errors import OffsetOutOfRangeError, TransportError, UndecodableBodyError

log = logging.getLogger("producer.consumer")

__all__ = [
    "Answer",
    "PullRequest",
    "Pulled",
    "decode_records",
    "pull",
    "pull_once",
    "pull_params",
    "read_answer",
]

PULL_RPC_MARGIN_MS = 15_000.0  # the RPC outlives the broker's hold by this much


@dataclass(frozen=True, slots=True)
class PullRequest:
    """How a reader pulls: its group, batch size, hold and codecs.

    ``suspend``: the broker may hold the pull up to ``suspend_ms`` (long polling), and the
    RPC outlives that by ``PULL_RPC_MARGIN_MS``; else it answers at once and the RPC times
    out after ``request_timeout_ms``. ``carry_subscription``: the pull names its
    subscription (no heartbeat needed); the push consumer's pulls leave it to the one its
    heartbeats registered (``sub_version``). ``commit``: the pull carries the group's
    committed offset for the broker to store (the push consumer, clustering).
    """

    group: str
    max_messages: int
    suspend_ms: int
    request_timeout_ms: float
    raise_out_of_range: bool = False  # the pull consumer's choice (pull_once)
    suspend: bool = False
    namespace: str | None = None
    codecs: BodyCodecs = DEFAULT_CODECS
    carry_subscription: bool = True
    commit: bool = False
    decode: bool = True  # False: the records as they came (Answer.records), unchecked

    @property
    def timeout_ms(self) -> float:
        """The RPC's timeout: past the broker's hold, if it may hold the pull."""
        if self.suspend:
            return self.suspend_ms + PULL_RPC_MARGIN_MS
        return self.request_timeout_ms


@dataclass(slots=True)
class Answer:
    """A pull's status, the broker's offsets, and the messages of a FOUND answer (the
    user's topic, the subscription's tags only, undecodable ones marked)."""

    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[ReceivedMessage]
    records: bytes = b""  # a FOUND answer's records, undecoded, when the reader asked so


def pull_params(
    ask: PullRequest,
    queue: MessageQueue,
    offset: int,
    subscription: Subscription,
    *,
    commit_offset: int = 0,
    sub_version: int = 0,
) -> PullParams:
    """The PULL_MESSAGE of ``queue`` from ``offset`` that ``ask`` describes."""
    return PullParams(
        group=ask.group,
        queue=queue,
        offset=offset,
        max_messages=ask.max_messages,
        commit_offset=commit_offset,
        suspend_timeout_ms=ask.suspend_ms,
        sub_version=sub_version,
        commit=ask.commit,
        suspend=ask.suspend,
        expression=subscription.expression if ask.carry_subscription else None,
        expression_type=subscription.expression_type,
    )


async def pull(
    api: BrokerApi, ask: PullRequest, queue: MessageQueue, offset: int, subscription: Subscription
) -> Answer:
    """One pull of ``queue`` from ``offset``; a broker's or a decoding error raises (a
    :class:`~producer.errors.ProducerError`). A replica that fails in transport is
    passed over: the pull goes once more, at once, to another one if there is one."""
    params = pull_params(ask, queue, offset, subscription)
    try:
        result = await api.pull(params, ask.timeout_ms)
    except TransportError:
        if not api.retry_at_once(queue):
            raise
        result = await api.pull(params, ask.timeout_ms)  # another replica, at once
    return read_answer(ask, queue, subscription, result)


def read_answer(
    ask: PullRequest, queue: MessageQueue, subscription: Subscription, result: PullResult
) -> Answer:
    """A pull's result as the reader asked it: a FOUND answer's records decoded into
    messages (user's topic, exact tags), or left as they came (``ask.decode`` false)."""
    messages: list[ReceivedMessage] = []
    if result.status is PullStatus.FOUND and not ask.decode:  # tags, bodies: the reader's
        return Answer(
            result.status,
            result.next_begin_offset,
            result.min_offset,
            result.max_offset,
            [],
            result.body,
        )
    if result.status is PullStatus.FOUND:
        messages = decode_pulled(
            result.body, queue.broker_name, max_body_bytes=MAX_BODY_BYTES, codecs=ask.codecs
        )
        if ask.namespace is not None:  # the user's topic (the queue keeps the wire's)
            for message in messages:
                message.topic = unwrap(message.topic, ask.namespace)
        if not subscription.is_all:  # the broker filtered by hash code; this is exact
            messages = [m for m in messages if subscription.matches(m.tags)]
    return Answer(
        result.status, result.next_begin_offset, result.min_offset, result.max_offset, messages
    )


# -- the pull consumer's reading of an answer --------------------------------------------


@dataclass(slots=True)
class Pulled:
    """What one pull of one queue gave: messages, and where the queue's position goes."""

    queue: MessageQueue
    position: int
    messages: list[ReceivedMessage] = field(default_factory=list)
    min_offset: int = 0
    max_offset: int = 0
    records: bytes = b""  # the records undecoded, for a PullRequest with decode=False


async def pull_once(
    api: BrokerApi, queue: MessageQueue, offset: int, subscription: Subscription, ask: PullRequest
) -> Pulled:
    """A pull consumer's pull of ``queue`` from ``offset``; every status handled
    (docs/consuming.md 1.5)."""
    answer = await pull(api, ask, queue, offset, subscription)
    pulled = Pulled(queue, answer.next_begin_offset, [], answer.min_offset, answer.max_offset)
    if answer.status is PullStatus.FOUND and not ask.decode:
        pulled.records = answer.records
    elif answer.status is PullStatus.FOUND:
        pulled.messages, pulled.position = _before_undecodable(queue, answer)
    elif answer.status is PullStatus.OFFSET_ILLEGAL:
        _offset_moved(queue, offset, answer, raising=ask.raise_out_of_range)
    # NO_NEW_MSG keeps the offset; NO_MATCHED_MSG moves past what the tag filter skipped:
    # both are next_begin_offset, as the broker says.
    return pulled


def decode_records(
    records: bytes, broker_name: str, *, codecs: BodyCodecs = DEFAULT_CODECS
) -> list[ReceivedMessage]:
    """The messages of records pulled from ``broker_name`` (:meth:`PullConsumer.pull_records`):
    bodies inflated by ``codecs`` (pass the consumer's ``body_codecs`` to inflate as its
    ``getmany`` does) to at most ``MAX_BODY_BYTES``, a retry topic's messages under their
    original topic. Unlike ``getmany``, no tag check here, and a body that does not
    inflate is marked (``ReceivedMessage.undecodable``), not raised."""
    return decode_pulled(records, broker_name, max_body_bytes=MAX_BODY_BYTES, codecs=codecs)


def _before_undecodable(queue: MessageQueue, answer: Answer) -> tuple[list[ReceivedMessage], int]:
    """The pull's messages and the position after them (before a bad body, if any)."""
    messages: list[ReceivedMessage] = []
    for message in answer.messages:
        bad = message.undecodable
        if bad is not None:
            if messages:  # hand out the good ones; the next pull starts at the bad one
                return messages, message.queue_offset
            raise UndecodableBodyError(
                message.msg_id, bad.cause, queue=str(queue), offset=message.queue_offset
            ) from bad.cause
        messages.append(message)
    return messages, answer.next_begin_offset


def _offset_moved(queue: MessageQueue, requested: int, answer: Answer, *, raising: bool) -> None:
    if raising:
        raise OffsetOutOfRangeError(
            str(queue), requested, answer.next_begin_offset, answer.min_offset, answer.max_offset
        )
    log.warning(
        "%s: offset %d is out of range [%d, %d]; moving to %d as the broker suggests",
        queue,
        requested,
        answer.min_offset,
        answer.max_offset,
        answer.next_begin_offset,
    )
