"""The consumer's decisions that need no I/O: where to start, what a listener's answer
means for each message (concurrently and orderly) and what becomes of a failed one next,
which flow-control limit holds a pull back, whether an orderly queue's lock still holds."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from producer._consume.process_queue import ProcessQueue
from producer._remoting.consumer_requests import ConsumeFromWhere
from producer._remoting.delay_levels import DelayLevels, parse_delay_levels, send_back_level
from producer._remoting.retry_topics import RETRY_PREFIX, dlq_topic, is_dead_letter
from producer._types.consumer.received import ReceivedMessage
from producer._types.consumer.status import ConsumeStatus

__all__ = [
    "LOCK_MAX_LIVE_MS",
    "EXPIRED_PER_SWEEP",
    "DeliveryFate",
    "FlowLimits",
    "NextStep",
    "OrderlyRetry",
    "Settlement",
    "StartFrom",
    "expired",
    "flow_blocked",
    "lock_valid",
    "orderly_retry",
    "sent_back_fate",
    "settle",
    "settle_batch",
    "start_from",
    "suspend_ms",
]

EXPIRED_PER_SWEEP = 16  # cleanExpiredMsg looks at this many messages per queue
LOCK_MAX_LIVE_MS = 30_000.0  # a queue counts as locked this long after the last lock
SUSPEND_MIN_MS, SUSPEND_MAX_MS = 10, 30_000
BROKER_LEVELS = parse_delay_levels()  # the broker's messageDelayLevel, as shipped


@dataclass(frozen=True, slots=True)
class Settlement:
    """What becomes of one listener call's messages: ``done`` settle at once, ``failed``
    go back to the broker for a later retry (clustering) or are dropped (broadcasting)."""

    done: list[ReceivedMessage]
    failed: list[ReceivedMessage]


def settle(
    status: ConsumeStatus, messages: Sequence[ReceivedMessage], ack_index: int | None
) -> Settlement:
    """``processConsumeResult``: SUCCESS acknowledges messages ``0..ack_index`` (all by
    default) and fails the rest; RECONSUME_LATER fails all."""
    if status is ConsumeStatus.SUCCESS:
        last = len(messages) - 1 if ack_index is None else min(ack_index, len(messages) - 1)
    else:
        last = -1
    return Settlement(list(messages[: last + 1]), list(messages[last + 1 :]))


class NextStep(enum.Enum):
    """What happens to a message after a failed delivery."""

    RETRY = "retry"  # sent back: the broker delivers it again after its delay level
    AGAIN_HERE = "again here"  # consumed again by this consumer after a pause
    DEAD_LETTER = "dead letter"  # to %DLQ%<group>: no more deliveries
    DROPPED = "dropped"  # broadcasting never retries


@dataclass(frozen=True, slots=True)
class DeliveryFate:
    """A failed delivery's next step, as the failure's log line says it: delivery
    ``attempt`` (1-based) of at most ``attempts`` (``None``: no limit, orderly's default),
    and for a retry its delay ``level`` and wait (``delay_ms``, the broker's default table
    for a level: a broker configured otherwise waits its own)."""

    step: NextStep
    attempt: int
    attempts: int | None
    level: int = 0
    delay_ms: float = 0.0

    def describe(self, group: str) -> str:
        of = f"attempt {self.attempt}" + ("" if self.attempts is None else f" of {self.attempts}")
        if self.step is NextStep.RETRY:
            return f"retried in {self.delay_ms / 1000:g} s at delay level {self.level} ({of})"
        if self.step is NextStep.AGAIN_HERE:
            return f"consumed again here in {self.delay_ms:.0f} ms ({of})"
        if self.step is NextStep.DEAD_LETTER:
            return f"moved to {dlq_topic(group)} ({of})"
        return "dropped: broadcasting never retries"


def sent_back_fate(
    reconsume_times: int,
    delay_level: int,
    max_reconsume_times: int,
    *,
    resent: bool = False,
    levels: DelayLevels = BROKER_LEVELS,
) -> DeliveryFate:
    """What the broker does with a message sent back at ``delay_level`` after its
    delivery number ``reconsume_times + 1`` failed (``consumerSendMsgBack``,
    docs/consuming.md 3.1): the DLQ once out of attempts or asked (level < 0), else a
    delayed retry. ``resent``: sent by the fallback instead, a copy to ``%RETRY%`` whose
    count is already raised, at ``3 + reconsumeTimes`` whatever the listener asked
    (2.7 step 2, 3.6), so it reaches the DLQ one delivery sooner."""
    attempt, attempts = reconsume_times + 1, max_reconsume_times + 1
    counted, asked = (reconsume_times + 1, 0) if resent else (reconsume_times, delay_level)
    if is_dead_letter(counted, max_reconsume_times, asked):
        return DeliveryFate(NextStep.DEAD_LETTER, attempt, attempts)
    level = levels.clamp(send_back_level(asked, reconsume_times))
    return DeliveryFate(NextStep.RETRY, attempt, attempts, level, levels.delay_ms(level))


def settle_batch(queue: ProcessQueue, settled: Iterable[ReceivedMessage]) -> int | None:
    """The one settle step: ``settled`` leave ``queue``; the offset to commit now (the
    smallest still held, or past the last once empty, docs/consuming.md 2.5), or ``None``:
    nothing was held, or the queue was dropped meanwhile (another member owns it now)."""
    offset = queue.remove(settled)
    return offset if offset >= 0 and not queue.dropped else None


class StartFrom(enum.Enum):
    """Where a newly assigned queue starts (``computePullFromWhereWithException``)."""

    STORED = "stored"  # the group's stored offset
    ZERO = "zero"
    MAX_OFFSET = "max"  # ask GET_MAX_OFFSET
    TIMESTAMP = "timestamp"  # ask SEARCH_OFFSET_BY_TIMESTAMP


def start_from(stored: int | None, consume_from: ConsumeFromWhere, topic: str) -> StartFrom:
    """``stored`` is the group's committed offset (``None``: it never committed one,
    told apart from a committed 0 even where a 4.9.4 broker answers 0 for both,
    docs/consuming.md 1.8).

    A stored offset always wins; ``consume_from`` decides for a queue without one. Retry
    topics start at 0 (or their end for TIMESTAMP), as in Java.
    """
    if stored is not None and stored >= 0:
        return StartFrom.STORED
    retry = topic.startswith(RETRY_PREFIX)
    if consume_from is ConsumeFromWhere.FIRST_OFFSET:
        return StartFrom.ZERO
    if consume_from is ConsumeFromWhere.TIMESTAMP:
        return StartFrom.MAX_OFFSET if retry else StartFrom.TIMESTAMP
    return StartFrom.ZERO if retry else StartFrom.MAX_OFFSET


@dataclass(frozen=True, slots=True)
class FlowLimits:
    """Per-queue flow control (``pullThresholdForQueue`` and friends)."""

    max_messages: int = 1000
    max_bytes: int = 100 * 1024 * 1024
    max_span: int = 2000  # concurrent consumption only


def flow_blocked(
    queue: ProcessQueue,
    limits: FlowLimits,
    *,
    orderly: bool,
    coming: int = 0,
    coming_bytes: int = 0,
    coming_last: int = -1,
) -> str | None:
    """Why the next pull of ``queue`` must wait, or ``None`` when it may go
    (``DefaultMQPushConsumerImpl.pullMessage``'s flow control, docs/consuming.md 2.4).

    ``coming``: up to this many messages (``coming_bytes`` of records, the last at offset
    ``coming_last``) have arrived and are not held yet; a pull sent ahead of them counts
    them as held, so the pipeline holds no more than a pull sent after them would
    (docs/consuming.md 2.13)."""
    held = len(queue) + coming
    if held > limits.max_messages:
        return f"{held} messages held > {limits.max_messages}"
    if queue.body_bytes + coming_bytes > limits.max_bytes:
        return f"{queue.body_bytes + coming_bytes} body bytes held > {limits.max_bytes}"
    span = queue.span_to(coming_last)
    if not orderly and span > limits.max_span:
        return f"offset span {span} > {limits.max_span}"
    return None


@dataclass(frozen=True, slots=True)
class OrderlyRetry:
    """An orderly batch that failed (``checkReconsumeTimes``): ``dead`` have used up
    their attempts and go to ``%RETRY%`` with their count, which the broker turns into a
    DLQ entry; ``again`` are consumed again locally, in order, after the suspension."""

    dead: list[ReceivedMessage]
    again: list[ReceivedMessage]


def orderly_retry(messages: Sequence[ReceivedMessage], max_reconsume_times: int) -> OrderlyRetry:
    dead = [m for m in messages if is_dead_letter(m.reconsume_times, max_reconsume_times)]
    return OrderlyRetry(dead, [m for m in messages if m not in dead])


def suspend_ms(requested: int | None, default: int) -> int:
    """How long a failed orderly queue waits: the listener's request, else the option's;
    clamped to 10 ms .. 30 s as Java clamps it (-1 or ``None``: the option's)."""
    chosen = default if requested is None or requested < 0 else requested
    return max(SUSPEND_MIN_MS, min(SUSPEND_MAX_MS, chosen))


def lock_valid(queue: ProcessQueue, now_ms: float) -> bool:
    """Whether an orderly queue may be consumed: locked, and not longer ago than 30 s."""
    return queue.locked and now_ms - queue.last_lock_ms <= LOCK_MAX_LIVE_MS


def expired(queue: ProcessQueue, now_ms: float, timeout_ms: float) -> list[ReceivedMessage]:
    """``cleanExpiredMsg``: of the first 16 messages held, those whose listener call
    started more than ``timeout_ms`` ago (a message still waiting for a slot has not)."""
    return [
        m
        for m in queue.head(EXPIRED_PER_SWEEP)
        if m.consume_start_ms and now_ms - m.consume_start_ms > timeout_ms
    ]
