"""Calling the user's listener, the one way concurrent and orderly consumption share:
:meth:`ListenerCall.call` (a verdict, or the rest of the call to await), and
:meth:`ListenerCall.run_plain` for a run of plain calls in one worker-thread hop. A
failure is a RECONSUME_LATER verdict carrying its exception; where its fate is decided,
``_failure_log`` says it."""

from __future__ import annotations

import inspect
import logging
import time
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from dataclasses import dataclass
from typing import Any

import anyio

from producer._consume.policy import SeenRecently
from producer._trace.records import ConsumeTrace
from producer._types.consumer.context import ConsumeContext
from producer._types.consumer.received import ReceivedMessage
from producer._types.consumer.retry_policy import DEAD_LETTER
from producer._types.consumer.status import ConsumeStatus
from producer.consumer._telemetry import NO_SPAN, ConsumerTelemetry

log = logging.getLogger("producer.consumer")

Listener = Callable[..., Any]
Call = tuple[list[ReceivedMessage], "ConsumeContext"]  # one listener call's arguments
RUN_MAX = 64  # listener calls of one run (one thread hop, one settlement), at most ...
RUN_BUDGET_S = 0.002  # ... and about this much listener time (one call: unknown)
ORDERLY_RUN_S = 0.1  # an orderly run's calls stop after this long (a call blocked)
SUCCESS = ConsumeStatus.SUCCESS


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
        trace: ConsumeTrace | None = None,
    ) -> None:
        self.telemetry = telemetry
        self._trace = trace  # message trace: SubBefore/SubAfter of every call
        self._clock_ms = clock_ms
        self._listener = listener
        self._with_context = _takes_context(listener)
        self._is_async = inspect.iscoroutinefunction(listener)
        self._limiter = anyio.CapacityLimiter(max_concurrency)
        self._guard = guard
        self.duplicates = 0  # re-deliveries the guard kept from the listener
        self.not_a_status = 0  # calls that returned no ConsumeStatus (docs/consuming.md 2.12)
        self.call_s = 0.0  # a call's mean duration in the last run (0: none timed yet)

    def _verdict(self, result: object) -> Verdict:
        """A listener's return value as a verdict (one made per status: most calls
        succeed). Anything else - ``None`` from a forgotten ``return`` - is RECONSUME_LATER,
        as Java's null is: nothing is acknowledged by accident. The first one is an ERROR
        naming the fix, the rest DEBUG (docs/consuming.md 2.12)."""
        if isinstance(result, ConsumeStatus):
            return _VERDICTS[result]
        self.not_a_status += 1
        if self.not_a_status == 1:
            log.error(
                "the listener returned %r, not a ConsumeStatus: the messages will be "
                "consumed again (RECONSUME_LATER, as Java treats null). End the listener "
                "with `return ConsumeStatus.SUCCESS`, and raise (or return "
                "ConsumeStatus.RECONSUME_LATER) to retry. Said once; the rest are DEBUG.",
                result,
            )
        else:
            log.debug("listener returned %r: RECONSUME_LATER", result)
        return _RETRY

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

    @property
    def is_async(self) -> bool:
        return self._is_async

    @property
    def guarded(self) -> bool:
        """An idempotency guard holds back what was consumed successfully."""
        return self._guard is not None

    def run_length(self) -> int:
        """How many calls the next run makes: about ``RUN_BUDGET_S`` of listener time as
        judged by the last run (a call that blocks holds up the rest of its run, a few
        ms' worth); one before any call was timed, and one per call while tracing (each
        call has its span: the caller has asked ``telemetry.look()``)."""
        if self.telemetry.tracing or not self.call_s:
            return 1
        return max(1, min(RUN_MAX, int(RUN_BUDGET_S / max(self.call_s, 1e-7))))

    @property
    def slot(self) -> anyio.CapacityLimiter:
        """One of the ``max_concurrency`` slots; a caller holding one uses :meth:`call`."""
        return self._limiter

    async def __call__(
        self, batch: list[ReceivedMessage], context: ConsumeContext, now_ms: float
    ) -> Verdict:
        """One listener call, in a slot of its own."""
        async with self._limiter:
            verdict = self.call(batch, context, now_ms)
            return verdict if isinstance(verdict, Verdict) else await verdict

    def call(
        self, batch: list[ReceivedMessage], context: ConsumeContext, now_ms: float
    ) -> Verdict | Awaitable[Verdict]:
        """One listener call, by a caller that holds a slot: its verdict if it finished
        without suspending (an async listener's call that never waited: the caller goes on
        without yielding to the event loop), else the rest of the call for the caller to
        await (it settles what it holds first: it is about to wait) in the cancel scope it
        called this in (trio ties a call's scopes to its task's stack). A plain listener
        runs in a worker thread; while tracing, each call has its span."""
        for message in batch:
            message.consume_start_ms = now_ms
        if self.telemetry.tracing:
            return self._traced(batch, context, now_ms)
        if not self._is_async:
            return self._in_thread(batch, context, now_ms)
        started = time.perf_counter()
        verdict = self._step(batch, context)
        if isinstance(verdict, Verdict):
            self._timed(batch, context, verdict, now_ms, started)
            return verdict
        return self._timed_rest(verdict, batch, context, now_ms)

    async def run_plain(
        self, calls: list[Call], now_ms: float, *, orderly: bool = False
    ) -> list[Verdict]:
        """A plain listener called once per ``calls`` entry, all in one worker-thread hop
        (the caller holds a slot, and nothing traces: each call would need its span).
        ``orderly``: no call after the first that does not succeed, nor once the run has
        taken ``ORDERLY_RUN_S``, so the verdicts may be fewer than the calls."""
        for batch, _ in calls:
            for message in batch:
                message.consume_start_ms = now_ms
        outcomes = await anyio.to_thread.run_sync(self._call_each, calls, orderly)
        self.call_s = sum(seconds for _, seconds in outcomes) / len(outcomes)
        if self._observed:  # the duration histogram, the trace: one sample per call
            for (batch, context), (verdict, seconds) in zip(calls, outcomes, strict=False):
                self._processed(NO_SPAN, batch, context, verdict, now_ms, seconds)
        return [verdict for verdict, _ in outcomes]

    async def _in_thread(
        self, batch: list[ReceivedMessage], context: ConsumeContext, now_ms: float
    ) -> Verdict:
        return (await self.run_plain([(batch, context)], now_ms))[0]

    async def _traced(
        self, batch: list[ReceivedMessage], context: ConsumeContext, now_ms: float
    ) -> Verdict:
        with self.telemetry.processing(context.queue, batch) as span:
            if self._is_async:
                verdict = self._step(batch, context)
                if not isinstance(verdict, Verdict):
                    verdict = await verdict
            else:
                verdict = await anyio.to_thread.run_sync(self._call_one, batch, context)
            if verdict.error is not None and span.is_recording():
                span.record_exception(verdict.error)
            self._processed(span, batch, context, verdict, now_ms)
        return verdict

    def _step(
        self, batch: list[ReceivedMessage], context: ConsumeContext
    ) -> Verdict | Coroutine[Any, Any, Verdict]:
        """An async listener's call run up to its first suspension: its verdict, or the
        rest of the call."""
        coroutine = self._invoke(batch, context)
        if isinstance(coroutine, Verdict):  # refused: never called
            return coroutine
        try:
            yielded = coroutine.send(None)
        except StopIteration as stop:
            return self._verdict(stop.value)
        except Exception as exc:
            return _raised(exc)
        return self._rest(coroutine, yielded)

    async def _rest(self, coroutine: Coroutine[Any, Any, Any], yielded: object) -> Verdict:
        try:
            return self._verdict(await _resumed(coroutine, yielded))
        except Exception as exc:
            return _raised(exc)

    async def _timed_rest(
        self,
        rest: Awaitable[Verdict],
        batch: list[ReceivedMessage],
        context: ConsumeContext,
        now_ms: float,
    ) -> Verdict:
        started = time.perf_counter()  # the first step's few microseconds are not counted
        verdict = await rest
        self._timed(batch, context, verdict, now_ms, started)
        return verdict

    def _timed(
        self,
        batch: list[ReceivedMessage],
        context: ConsumeContext,
        verdict: Verdict,
        now_ms: float,
        started: float,
    ) -> None:
        seconds = time.perf_counter() - started
        self.call_s = seconds
        if self._observed:
            self._processed(NO_SPAN, batch, context, verdict, now_ms, seconds)

    def _processed(
        self,
        span: Any,
        batch: list[ReceivedMessage],
        context: ConsumeContext,
        verdict: Verdict,
        now_ms: float,
        seconds: float | None = None,
    ) -> None:
        if seconds is None:
            seconds = (self._clock_ms() - now_ms) / 1000.0
        topic = batch[0].topic if batch else context.queue.topic
        self.telemetry.processed(span, topic, verdict.status.value, seconds, len(batch))
        if self._trace is not None:
            succeeded = verdict.status is ConsumeStatus.SUCCESS
            self._trace.called(batch, succeeded, verdict.error is not None, seconds)

    @property
    def _observed(self) -> bool:
        """Each call is measured: metrics are read, or calls are traced."""
        return self.telemetry.metering or self._trace is not None

    def _call_each(self, calls: list[Call], orderly: bool) -> list[tuple[Verdict, float]]:
        """In a worker thread: each call's verdict (an exception raised is a failure, one
        returned is not a ConsumeStatus) and time."""
        outcomes: list[tuple[Verdict, float]] = []
        stop_at = time.perf_counter() + ORDERLY_RUN_S
        for batch, context in calls:
            if orderly and outcomes and time.perf_counter() > stop_at:
                break
            started = time.perf_counter()
            verdict = self._call_one(batch, context)
            outcomes.append((verdict, time.perf_counter() - started))
            if orderly and verdict.status is not SUCCESS:
                break
        return outcomes

    def _invoke(self, batch: list[ReceivedMessage], context: ConsumeContext) -> Any:
        """The one place the listener is called: what it returned (an async listener's
        coroutine), or - without calling it - a failed :class:`Verdict` when the batch
        holds a body that could not be decoded. Such a batch fails as a whole
        (consumption gives that message a batch of its own); a corrupt body stays
        corrupt, so it goes straight to the dead-letter queue."""
        for message in batch:
            undecodable = message.undecodable
            if undecodable is not None:
                log.error("%s not consumed: %s", context.queue, undecodable)
                if undecodable.permanent:  # no retry helps
                    context.delay_level = DEAD_LETTER
                return Verdict(ConsumeStatus.RECONSUME_LATER, undecodable)
        return self._listener(*((batch, context) if self._with_context else (batch,)))

    def _call_one(self, batch: list[ReceivedMessage], context: ConsumeContext) -> Verdict:
        """A plain listener's call (in a worker thread) and its verdict."""
        try:
            result = self._invoke(batch, context)
        except Exception as exc:
            return _raised(exc)
        return result if isinstance(result, Verdict) else self._verdict(result)


_VERDICTS = {status: Verdict(status) for status in ConsumeStatus}
_RETRY = _VERDICTS[ConsumeStatus.RECONSUME_LATER]


def _raised(error: Exception) -> Verdict:
    """The listener raised ``error``: its messages are consumed again (RECONSUME_LATER).
    Said where their fate is decided (``_failure_log``), once per message and attempt."""
    return Verdict(ConsumeStatus.RECONSUME_LATER, error)


@types.coroutine
def _resumed(coroutine: Coroutine[Any, Any, Any], yielded: object) -> Generator[Any, Any, Any]:
    """The rest of ``await coroutine`` once its first step (``send(None)``) yielded
    ``yielded``: PEP 380's ``yield from``, by hand. What it yields goes to the event loop
    (asyncio's futures, trio's traps, untouched), what the loop sends or throws goes in."""
    while True:
        try:
            sent = yield yielded
        except GeneratorExit:
            coroutine.close()
            raise
        except BaseException as exc:  # cancellation included: the coroutine decides
            try:
                yielded = coroutine.throw(exc)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                yielded = coroutine.send(sent)
            except StopIteration as stop:
                return stop.value


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
