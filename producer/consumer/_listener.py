"""Calling the user's listener, and counting the batches in flight: what concurrent and
orderly consumption share."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio

from producer._consume.decisions import ConsumeStatus
from producer._consume.message import ReceivedMessage
from producer._consume.policy import DEAD_LETTER, SeenRecently
from producer._remoting.message import MessageQueue
from producer.consumer._telemetry import ConsumerTelemetry

log = logging.getLogger("producer.consumer")

Listener = Callable[..., Any]


@dataclass(slots=True)
class ConsumeContext:
    """Passed to a listener that takes two arguments; set fields to steer the outcome.

    ``ack_index``: with SUCCESS, messages ``0..ack_index`` succeeded and the rest are
    retried (default: all succeeded). ``delay_level``: for retried messages, 0 lets the
    broker choose (``3 + reconsume_times``), > 0 is that level, -1 sends them straight
    to the dead-letter queue. Orderly consumers: ``suspend_current_queue_time_ms`` is
    how long the queue waits before a failed batch is consumed again (default: the
    consumer's option; 10 ms .. 30 s).
    """

    queue: MessageQueue
    ack_index: int | None = None
    delay_level: int = 0
    suspend_current_queue_time_ms: int | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """A listener call's answer, and the exception that made it RECONSUME_LATER."""

    status: ConsumeStatus
    error: BaseException | None = None


class ListenerCall:
    """The listener, called the way it wants: async on the loop, plain in a worker thread
    (so it may block), with or without a context; at most ``max_concurrency`` at once.

    With an idempotency guard, messages consumed successfully within its window are
    held back from the listener (``split``) and successes are remembered (``remember``).
    """

    def __init__(
        self,
        listener: Listener,
        max_concurrency: int,
        *,
        telemetry: ConsumerTelemetry,
        clock_ms: Callable[[], float],
        guard: SeenRecently | None = None,
    ) -> None:
        self.telemetry = telemetry
        self._clock_ms = clock_ms
        self._listener = listener
        self._with_context = _takes_context(listener)
        self._is_async = inspect.iscoroutinefunction(listener)
        self._limiter = anyio.CapacityLimiter(max_concurrency)
        self._guard = guard
        self.duplicates = 0  # re-deliveries the guard kept from the listener

    def split(
        self, batch: list[ReceivedMessage], now_ms: float
    ) -> tuple[list[ReceivedMessage], list[ReceivedMessage]]:
        """``(to consume, already consumed)``; everything is to consume without a guard."""
        if self._guard is None:
            return batch, []
        fresh, repeated = self._guard.split(batch, now_ms)
        for message in repeated:
            log.info("%s was consumed successfully before: not consumed again", message.msg_id)
        self.duplicates += len(repeated)
        if repeated:
            self.telemetry.count(repeated[0].topic, "duplicate", len(repeated))
        return fresh, repeated

    def remember(self, done: list[ReceivedMessage], now_ms: float) -> None:
        """``done`` were consumed successfully: counted, and remembered by the guard."""
        if done:
            self.telemetry.count(done[0].topic, "consumed", len(done))
        if self._guard is not None:
            self._guard.remember(done, now_ms)

    async def __call__(
        self, batch: list[ReceivedMessage], context: ConsumeContext, now_ms: float
    ) -> Verdict:
        async with self._limiter:
            for message in batch:
                message.consume_start_ms = now_ms
            with self.telemetry.processing(context.queue, batch) as span:
                verdict = await self._run(batch, context)
                if verdict.error is not None and span.is_recording():
                    span.record_exception(verdict.error)
                seconds = (self._clock_ms() - now_ms) / 1000.0
                topic = batch[0].topic if batch else context.queue.topic
                self.telemetry.processed(span, topic, verdict.status.value, seconds, len(batch))
        return verdict

    async def _run(self, batch: list[ReceivedMessage], context: ConsumeContext) -> Verdict:
        for message in batch:  # consumption gives such a message a batch of its own
            undecodable = message.undecodable
            if undecodable is not None:
                log.error("%s not consumed: %s", context.queue, undecodable)
                if undecodable.permanent:  # a corrupt body stays corrupt: no retry helps
                    context.delay_level = DEAD_LETTER
                return Verdict(ConsumeStatus.RECONSUME_LATER, undecodable)
        args: tuple[Any, ...] = (batch, context) if self._with_context else (batch,)
        try:
            if self._is_async:
                result = await self._listener(*args)
            else:
                result = await anyio.to_thread.run_sync(self._listener, *args)
        except Exception as exc:
            log.exception("listener raised on %d message(s)", len(batch))
            return Verdict(ConsumeStatus.RECONSUME_LATER, exc)
        if isinstance(result, ConsumeStatus):
            return Verdict(result)
        log.warning("listener returned %r, not a ConsumeStatus: treated as RECONSUME_LATER", result)
        return Verdict(ConsumeStatus.RECONSUME_LATER)


def _takes_context(listener: Listener) -> bool:
    try:
        parameters = inspect.signature(listener).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in positional)


class InFlight:
    """Consumption tasks running or waiting to run; ``wait_idle`` returns when none is."""

    def __init__(self) -> None:
        self.count = 0
        self._idle = anyio.Event()
        self._idle.set()

    def enter(self) -> None:
        if self.count == 0:
            self._idle = anyio.Event()
        self.count += 1

    def leave(self) -> None:
        self.count -= 1
        if self.count == 0:
            self._idle.set()

    async def wait_idle(self) -> None:
        await self._idle.wait()
