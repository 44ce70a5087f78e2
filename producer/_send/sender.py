"""Carries out send plans: the I/O shell around :mod:`producer._send.plan`.

Every send - sync, async, oneway, keyed - runs here, through one attempt function: select
a queue (a keyed send's is final, F5), send the request rebuilt for that queue through
the client's one request door, feed the outcome to the fault-aware router (S8), run hooks
and telemetry, and ask the plan what to do next.

The clock is read once per step that can take time: at the start, after each wait
(backpressure, route lookup, connect, hooks, back-off) and after each attempt. Code
between two awaits that cannot suspend reuses the last reading (``now``), so a plain
send reads it four times rather than once per decision.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence

import anyio
import msgspec
from opentelemetry.trace import Span

from latency_fault import Router, choose_queue, spread_batch
from producer._client.clock import Clock
from producer._client.remoting import RemotingClient
from producer._client.routes import RouteTable, TopicRoute
from producer._remoting.codes import SendStatus
from producer._remoting.command import RemotingCommand
from producer._remoting.message import Message, MessageQueue
from producer._remoting.requests import PreparedMessage, build_send_request
from producer._remoting.send_header import SendResponseHeader, parse_send_response
from producer._send.backpressure import InFlightLimiter
from producer._send.hooks import AttemptContext, HookRunner
from producer._send.plan import Dispatch, Finish, Retry, SendMode, SendPlan
from producer._send.result import SendResult
from producer._send.telemetry import Telemetry
from producer.errors import BrokerError, ConnectError, ProducerError

Answer = tuple[SendStatus, SendResponseHeader]
#: Told of every attempt a broker answered, synchronously and cheaply (message trace):
#: the messages with their ids, the queue, its broker's address, the latency, the result.
AnswerObserver = Callable[
    [Sequence[tuple[Message, str]], MessageQueue, str, float, SendResult | None], None
]


class SendJob(msgspec.Struct, frozen=True):
    """One send's request; its budget, attempts and mode live in its :class:`SendPlan`."""

    prepared: PreparedMessage
    message: Message
    order_key: str | None = None  # keyed: the key's queue is final (F5)
    holds_slot: bool = False  # the caller already took its in-flight slot
    ticket: int = 0  # send_async's place in the producer's SendTracker (flush)
    #: A transparent batch's messages: each holds its own in-flight slot, and hooks and
    #: spans see each one. Empty for every other send.
    members: tuple[Message, ...] = ()
    #: The first attempt's queue, chosen with its neighbours' (:meth:`Sender.spread`);
    #: retries choose again.
    first_queue: MessageQueue | None = None

    @property
    def msg_ids(self) -> list[str]:
        """One id per message: a transparent batch's are comma-joined in its UNIQ_KEY."""
        return self.prepared.msg_id.split(",") if self.members else [self.prepared.msg_id]


class _Send(msgspec.Struct, frozen=True):
    job: SendJob
    plan: SendPlan
    spans: tuple[Span, ...]  # one per message: a transparent batch fans out


class Sender:
    def __init__(
        self,
        *,
        group: str,
        routes: RouteTable,
        client: RemotingClient,
        router: Router,
        limiter: InFlightLimiter,
        hooks: HookRunner,
        telemetry: Telemetry,
        clock: Clock,
        answered: AnswerObserver | None = None,
    ) -> None:
        self.group = group
        self.answered = answered
        self.routes = routes
        self.client = client
        self.router = router
        self.limiter = limiter
        self.hooks = hooks
        self.telemetry = telemetry
        self.clock = clock

    def spread(self, topic: str, count: int) -> list[tuple[MessageQueue, int]] | None:
        """Where a transparent group of ``count`` messages to ``topic`` goes, per message
        (``spread_batch``); ``None`` when the route is not cached yet (the group is then
        dealt once the lookup returns)."""
        route = self.routes.cached(topic)
        if route is None or not len(route.snapshot):
            return None
        now = int(self.clock.monotonic_ms())
        return spread_batch(self.router, route.snapshot, count, now_ms=now)

    async def run(self, job: SendJob, plan: SendPlan) -> SendResult | None:
        """The whole send: backpressure, route, attempts; raises the final error.

        Returns the result, or ``None`` for a oneway send (it gets no answer)."""
        started = self.clock.monotonic_ms()
        try:
            if not self.telemetry.enabled(started):  # no OpenTelemetry SDK: no no-op calls
                return await self._run_limited(_Send(job, plan, ()), started)
            return await self._run_traced(job, plan, started)
        except ProducerError as error:
            _name_msg_id(error, job)
            raise

    async def _run_traced(self, job: SendJob, plan: SendPlan, started: float) -> SendResult | None:
        telemetry = self.telemetry
        topic = job.prepared.topic
        operation = plan.mode.value
        msg_ids = job.msg_ids
        if job.members and telemetry.tracing:  # each member's own span, as if sent alone
            spans = tuple(telemetry.start_send(topic, operation) for _ in job.members)
        else:
            spans = (telemetry.start_send(topic, operation),)
        try:
            result = await self._run_limited(_Send(job, plan, spans), started)
        except ProducerError as exc:
            telemetry.finish_error(spans, topic, exc, self._seconds_since(started), len(msg_ids))
            raise
        except BaseException:
            for span in spans:
                span.end()
            raise
        telemetry.finish_ok(spans, topic, result, self._seconds_since(started), msg_ids)
        return result

    async def _run_limited(self, send: _Send, now: float) -> SendResult | None:
        job = send.job
        if job.members:  # its members hold their slots
            return await self._run_routed(send, now)
        size = len(job.prepared.body)
        if not (job.holds_slot or self.limiter.try_acquire(size)):
            await self.limiter.acquire(size, send.plan.deadline_ms - now)
            now = self.clock.monotonic_ms()
        try:
            return await self._run_routed(send, now)
        finally:
            self.limiter.release(size)

    async def _run_routed(self, send: _Send, now: float) -> SendResult | None:
        """The route (cached, or looked up within the budget), then the attempts."""
        plan = send.plan
        route = self.routes.cached(send.job.prepared.topic)
        if route is None:
            route = await self.routes.get(send.job.prepared.topic, plan.deadline_ms)
            now = self.clock.monotonic_ms()
        step = plan.next_attempt(now)
        while isinstance(step, Dispatch):
            if step.number > 1:
                route = self.routes.cached(route.topic) or route  # a refresh may have landed
            first = send.job.first_queue
            queue = (
                first
                if first is not None and step.number == 1
                else self._select(send.job, plan, route, now)
            )
            decision, now = await self._attempt(send, route, queue, step, now)
            if isinstance(decision, Finish):
                step = decision
                break
            if decision.backoff_ms > 0:
                await self._back_off(decision, plan, now)
                now = self.clock.monotonic_ms()
            step = plan.next_attempt(now)
        if step.error is not None:
            raise step.error
        return step.result

    # -- a first attempt as a bare loop future (asyncio) ---------------------------------

    def _start_first(
        self, job: SendJob, plan: SendPlan, now: float
    ) -> tuple[asyncio.Future[RemotingCommand | None], MessageQueue] | SendJob | None:
        """The first attempt written as a loop future on an open connection, and its
        queue. Otherwise nothing is sent: ``None`` when a hook or OpenTelemetry SDK needs
        the attempt or the route is not cached; the job with its first queue set when one
        was chosen but no connection to it can start the request (none open yet, or
        trio), so that the attempt :meth:`run` makes goes there and the router's
        round-robin is not stepped twice for one attempt."""
        if self.hooks.active or self.telemetry.enabled(now):
            return None
        route = self.routes.cached(job.prepared.topic)
        step = plan.next_attempt(now)
        if route is None or not isinstance(step, Dispatch):
            return None
        queue = job.first_queue or self._select(job, plan, route, now)  # a batch's is dealt
        addr = _master_addr(route, queue)
        connection = self.client.startable(addr) if addr else None
        if connection is None:
            return msgspec.structs.replace(job, first_queue=queue)
        request = build_send_request(job.prepared, queue, self.clock.wall_ms())
        waiter = self.client.start(connection, request, step.timeout_ms)
        self.router.on_dispatch(queue.broker_name, int(now))
        return waiter, queue

    async def run_direct(self, job: SendJob, plan: SendPlan) -> SendResult | None:
        """:meth:`run` for a caller awaiting one message (not oneway, not a batch): the
        first attempt awaits its connection's future in the caller's own coroutine (no
        coroutine chain, one loop future); anything else, and every retry, is
        :meth:`run`'s. The rules are the same: the same decision (:meth:`_decide`)."""
        size = len(job.prepared.body)
        if job.holds_slot or not self.limiter.try_acquire(size):
            return await self.run(job, plan)
        start = self.clock.monotonic_ms()
        try:
            started = self._start_first(job, plan, start)
        except BaseException:
            self.limiter.release(size)
            raise
        if not isinstance(started, tuple):  # run() frees the slot held here
            rest = msgspec.structs.replace(job if started is None else started, holds_slot=True)
            return await self.run(rest, plan)
        waiter, queue = started
        try:
            response = await waiter
            assert response is not None
            answer = parse_send_response(response)
        except ProducerError as exc:
            decision = self._decide(job, plan, queue, start, None, exc)[0]
        except BaseException:  # cancelled: the attempt is over without an outcome
            waiter.cancel()  # if still queued, never written (the connection skips it)
            self._cancelled(plan, queue, start)
            self.limiter.release(size)
            raise
        else:
            decision = self._decide(job, plan, queue, start, answer, None)[0]
        if isinstance(decision, Retry):
            held = msgspec.structs.replace(job, holds_slot=True)  # resume() frees it
            return await self.resume(held, plan, decision)
        self.limiter.release(size)
        if decision.error is not None:
            raise _name_msg_id(decision.error, job)
        return decision.result

    def start_direct(
        self, job: SendJob, plan: SendPlan, settled: Callable[[Finish | Retry], None]
    ) -> SendJob | None:
        """Start an async send's first attempt as a loop future with a callback, no task
        (see :meth:`_start_first`). ``settled`` gets the :class:`Finish`, or the
        :class:`Retry` that :meth:`resume` carries on in a task. Returns ``None`` once
        started; otherwise the job to :meth:`run` in a task (its first queue set if one
        was chosen here)."""
        now = self.clock.monotonic_ms()
        started = self._start_first(job, plan, now)
        if not isinstance(started, tuple):
            return job if started is None else started
        waiter, queue = started
        answered = functools.partial(self._direct_answered, job, plan, queue, now, settled)
        waiter.add_done_callback(answered)
        return None

    def _direct_answered(
        self,
        job: SendJob,
        plan: SendPlan,
        queue: MessageQueue,
        start: float,
        settled: Callable[[Finish | Retry], None],
        waiter: asyncio.Future[RemotingCommand | None],
    ) -> None:
        decision: Finish | Retry
        try:
            response = waiter.result()  # raises the request's error
            assert response is not None
            answer = parse_send_response(response)
        except ProducerError as exc:
            decision = self._decide(job, plan, queue, start, None, exc)[0]
        except BaseException as exc:  # cancelled (nobody should) or a bug of ours
            self._cancelled(plan, queue, start)
            error = ProducerError(f"internal error: {exc!r}", attempts=plan.attempts)
            decision = Finish(error=error)
        else:
            decision = self._decide(job, plan, queue, start, answer, None)[0]
        settled(decision)

    def _decide(
        self,
        job: SendJob,
        plan: SendPlan,
        queue: MessageQueue,
        start: float,
        answer: Answer | None,
        error: ProducerError | None,
    ) -> tuple[Retry | Finish, float, float]:
        """An attempt came back (``answer``, ``None`` for a oneway write, or ``error``):
        the router learns it (S8) and the plan decides. Returns the decision, the clock
        reading and the attempt's latency."""
        broker = queue.broker_name
        self.router.on_complete(broker)
        now = self.clock.monotonic_ms()
        latency = now - start
        if error is not None:
            self._record_fault(broker, latency, error, now)
            return plan.on_error(queue, error, latency, now), now, latency
        if answer is None:  # oneway: a write is not an answer, so no latency to learn
            return plan.on_written(queue, latency), now, latency
        self._record_fault(broker, latency, None, now)
        decision = plan.on_answer(queue, *answer, job.prepared.msg_id, latency)
        if self.answered is not None:
            self._tell_answered(job, queue, latency, plan.last_result)
        return decision, now, latency

    def _tell_answered(
        self, job: SendJob, queue: MessageQueue, latency: float, result: SendResult | None
    ) -> None:
        assert self.answered is not None
        route = self.routes.cached(queue.topic)
        addr = "" if route is None else _master_addr(route, queue)
        if job.members:
            messages = list(zip(job.members, job.msg_ids, strict=True))
        else:
            messages = [(job.message, job.prepared.msg_id)]
        self.answered(messages, queue, addr, latency, result)

    async def resume(self, job: SendJob, plan: SendPlan, retry: Retry) -> SendResult | None:
        """The rest of a send whose first attempt :meth:`start_direct` made: its back-off,
        then the attempts its plan has left (it keeps its in-flight slot)."""
        if retry.backoff_ms > 0:
            await self._back_off(retry, plan, self.clock.monotonic_ms())
        return await self.run(job, plan)

    def _select(self, job: SendJob, plan: SendPlan, route: TopicRoute, now: float) -> MessageQueue:
        return choose_queue(
            self.router,
            route.snapshot,
            last_broker=plan.last_broker,
            now_ms=int(now),
            order_key=job.order_key,
        )

    async def _back_off(self, decision: Retry, plan: SendPlan, now: float) -> None:
        remaining = plan.deadline_ms - now
        await anyio.sleep(max(min(decision.backoff_ms, remaining), 0.0) / 1000.0)

    async def _attempt(
        self, send: _Send, route: TopicRoute, queue: MessageQueue, step: Dispatch, now: float
    ) -> tuple[Retry | Finish, float]:
        """One attempt; returns the decision and the clock reading it ended at."""
        job, plan = send.job, send.plan
        addr = _master_addr(route, queue)
        contexts: list[AttemptContext] = []
        if self.hooks.active:
            contexts = self._hook_contexts(job, queue, addr, step.number)
            for ctx in contexts:
                await self.hooks.before(ctx)
            now = self.clock.monotonic_ms()
        start = now
        broker = queue.broker_name
        self.router.on_dispatch(broker, int(start))  # an unanswered attempt is evidence too
        try:
            if not addr:
                raise ConnectError(f"no master address for broker {broker!r} in the route")
            oneway = plan.mode is SendMode.ONEWAY
            request = build_send_request(job.prepared, queue, self.clock.wall_ms(), oneway=oneway)
            if oneway:
                await self.client.invoke_oneway(addr, request, step.timeout_ms)
                answer: Answer | None = None
            else:
                answer = parse_send_response(
                    await self.client.invoke(addr, request, step.timeout_ms)
                )
        except ProducerError as exc:
            decision, now, latency = self._decide(job, plan, queue, start, None, exc)
            for ctx in contexts:
                ctx.error, ctx.latency_ms = exc, latency
        except BaseException:
            self._cancelled(plan, queue, start)
            raise
        else:
            decision, now, latency = self._decide(job, plan, queue, start, answer, None)
            for ctx in contexts:
                ctx.result, ctx.latency_ms = plan.last_result, latency
        if send.spans:  # none: telemetry is off
            messages = len(job.members) or 1
            record = plan.attempts[-1]
            self.telemetry.attempt(send.spans, route.topic, record, step.number, messages)
        if contexts:
            for ctx in contexts:
                await self.hooks.after(ctx)
            now = self.clock.monotonic_ms()
        return decision, now

    def _cancelled(self, plan: SendPlan, queue: MessageQueue, start: float) -> None:
        """An attempt ended without an outcome: the router is told it is over, but learns
        no fault from it (S8)."""
        self.router.on_complete(queue.broker_name)
        plan.on_cancelled(queue, self.clock.monotonic_ms() - start)

    def _hook_contexts(
        self, job: SendJob, queue: MessageQueue, addr: str, number: int
    ) -> list[AttemptContext]:
        """One context per message: hooks see each member of a transparent batch."""
        if not job.members:
            return [
                AttemptContext(self.group, job.message, queue, addr, number, job.prepared.msg_id)
            ]
        return [
            AttemptContext(self.group, message, queue, addr, number, msg_id)
            for message, msg_id in zip(job.members, job.msg_ids, strict=True)
        ]

    def _record_fault(
        self, broker: str, latency_ms: float, error: ProducerError | None, now_ms: float
    ) -> None:
        """S8: success -> latency; any error -> isolation (5.x marks broker codes unreachable)."""
        banned = self.router.record(
            broker,
            latency_ms,
            isolation=error is not None,
            now_ms=int(now_ms),
            reachable=not isinstance(error, BrokerError),
        )
        if banned:
            self.telemetry.ban(broker)

    def _seconds_since(self, started_ms: float) -> float:
        return (self.clock.monotonic_ms() - started_ms) / 1000.0


def _name_msg_id(error: ProducerError, job: SendJob) -> ProducerError:
    """``error`` naming the UNIQ_KEY its send went out under (to resend with), unless it
    names one already."""
    if error.msg_id is None:
        error.msg_id = job.prepared.msg_id
    return error


def _master_addr(route: TopicRoute, queue: MessageQueue) -> str:
    """The address of the queue's broker (its master), ``""`` when the route has none."""
    return route.broker_addrs.get(queue.broker_name, "")
