"""Carries out sends: the I/O shell around the pure :mod:`producer._send.plan`.

Theory of operation
-------------------
A send is one :class:`SendJob` (its request, built once) and its :class:`SendPlan` (the
mode, the attempt counter, the deadline). The plan owns the deadline: it is fixed when the
plan is made, every wait here (for an in-flight slot, the route, a connection, a back-off)
is bounded by what is left of it, and each attempt's network timeout is the plan's
(:meth:`SendPlan.next_attempt`). The plan decides; this module carries its decisions out.

A send passes through these states, in order::

    admitted -> routed -> attempt out -> attempt settled -> finished
                              ^                 |
                              +- backing off <--+  (Retry)

* admitted: it holds an in-flight slot (A7), taken by its caller or by :meth:`Sender.run`;
  whoever finishes the send frees it (and ends its flush ticket, outside this module).
* routed: the topic's route, cached or looked up within the budget.
* attempt out: a queue chosen (a keyed send's is final, F5; a transparent batch's first
  one is dealt with its neighbours'), the request rebuilt for it (A4) and written;
  :meth:`Attempts.launch` tells the router it is in flight (S8).
* attempt settled: :meth:`Attempt.settle` - the router learns the latency or the fault
  (S8), the plan answers Retry or Finish. An attempt cancelled before its outcome is
  abandoned instead (:meth:`Attempt.abandon`): over, but no fault (S5).
* finished: the result, or the final error naming the send's ``msg_id``, goes back.

Where it runs: every attempt can run in :meth:`Sender.run`'s loop, in the caller's
coroutine or a task of the producer. On asyncio, when nothing needs a task (no hooks, no
OpenTelemetry SDK, the route cached, a connection open), the FIRST attempt is started by
:meth:`Sender.start_first` as a bare loop future instead, and settled where it lands: a
sync send awaits it in the caller's coroutine (:meth:`Sender.run_direct`); an async send
or a transparent batch settles it in the future's callback (:meth:`Attempt.when_settled`).
A Retry then hands the same plan, and so its one attempt counter (A2), to
:meth:`Sender.resume`. One of these holds a send at a time: nothing touches a plan twice at once.

The clock is read once per step that can take time: at the start, after each wait
(backpressure, route lookup, connect, hooks, back-off) and after each attempt. Code
between two awaits that cannot suspend reuses the last reading (``now``), so a plain
send reads it four times rather than once per decision.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

import anyio
import msgspec
from opentelemetry.trace import Span

from latency_fault import Router, choose_queue, spread_batch
from producer._client.clock import Clock
from producer._client.remoting import RemotingClient
from producer._client.routes import RouteTable, TopicRoute
from producer._remoting.requests import PreparedMessage, build_send_request
from producer._send.attempt import AnswerObserver, Attempt, Attempts, Outcome
from producer._send.backpressure import InFlightLimiter
from producer._send.hooks import AttemptContext, HookRunner, attempt_contexts, tell_contexts
from producer._send.plan import Dispatch, Finish, Retry, SendMode, SendPlan
from producer._send.telemetry import Telemetry
from producer._types.message import Message, MessageQueue
from producer._types.send_result import SendResult
from producer.errors import ConnectError, ProducerError


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
    """Runs the sends of one producer (see the theory of operation above): one per started
    producer, shared by its sync, async, oneway, keyed and batched sends."""

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
        self.routes = routes
        self.client = client
        self.router = router
        self.limiter = limiter
        self.hooks = hooks
        self.telemetry = telemetry
        self.clock = clock
        self.attempts = Attempts(
            router=router, clock=clock, routes=routes, telemetry=telemetry, answered=answered
        )

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
        while True:
            step = plan.next_attempt(now)
            if isinstance(step, Finish):
                return step.outcome()
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
                return decision.outcome()
            if decision.backoff_ms > 0:
                await anyio.sleep(plan.backoff_s(decision, now))
                now = self.clock.monotonic_ms()

    # -- the first attempt without a task (asyncio) -------------------------------------

    def start_first(self, job: SendJob, plan: SendPlan) -> Attempt | SendJob:
        """Start ``job``'s first attempt as a loop future on an open connection: the
        :class:`Attempt` out, its ``waiter`` set, for the caller to settle. Otherwise
        nothing is sent and the job comes back for :meth:`run`: as it was when a hook or
        an OpenTelemetry SDK needs the attempt or the route is not cached; with its first
        queue set when one was chosen but no connection to it can start the request (none
        open yet, or trio), so that the router's round-robin is not stepped twice."""
        now = self.clock.monotonic_ms()
        if self.hooks.active or self.telemetry.enabled(now):
            return job
        route = self.routes.cached(job.prepared.topic)
        step = plan.next_attempt(now)
        if route is None or not isinstance(step, Dispatch):
            return job
        queue = job.first_queue or self._select(job, plan, route, now)  # a batch's is dealt
        addr = _master_addr(route, queue)
        connection = self.client.startable(addr) if addr else None
        if connection is None:
            return msgspec.structs.replace(job, first_queue=queue)
        request = build_send_request(job.prepared, queue, self.clock.wall_ms())
        waiter = self.client.start(connection, request, step.timeout_ms)
        return self.attempts.launch(job, plan, queue, now, waiter)

    def start_lone(self, job: SendJob, plan: SendPlan) -> Attempt | SendJob:
        """The first attempt of a send awaited alone (not oneway, not a batch), its
        in-flight slot taken: the :class:`Attempt` out, for the caller to await its
        ``waiter`` in its own coroutine and hand the outcome to :meth:`settle_lone` (or,
        cancelled, the attempt to :meth:`abandon_lone`). Otherwise nothing is sent and
        the job comes back for :meth:`run` (``holds_slot`` set when the slot was taken
        here: :meth:`run` frees it)."""
        size = len(job.prepared.body)
        if job.holds_slot or not self.limiter.try_acquire(size):
            return job  # run() waits for the slot
        try:
            first = self.start_first(job, plan)
        except BaseException:
            self.limiter.release(size)
            raise
        if isinstance(first, SendJob):
            return msgspec.structs.replace(first, holds_slot=True)
        return first

    def settle_lone(self, first: Attempt, outcome: Outcome) -> SendResult | Retry | None:
        """A lone send's first attempt came back (:meth:`Attempt.settle`): its result, its
        final error raised (naming its ``msg_id``; the slot freed either way), or the
        :class:`Retry` to hand to :meth:`resume` (the slot kept for it)."""
        decision = first.settle(outcome)
        if isinstance(decision, Retry):
            return decision
        self.limiter.release(len(first.job.prepared.body))
        if decision.error is not None:
            raise _name_msg_id(decision.error, first.job)
        return decision.result

    def abandon_lone(self, first: Attempt) -> None:
        """A lone send was cancelled while its first attempt was out: over without an
        outcome (S5, S8), its slot freed."""
        first.abandon()
        self.limiter.release(len(first.job.prepared.body))

    async def run_direct(self, job: SendJob, plan: SendPlan) -> SendResult | None:
        """:meth:`run` for a caller awaiting one message (not oneway, not a batch): the
        first attempt's loop future is awaited in this coroutine (:meth:`start_lone`);
        anything else, and every retry, is :meth:`run`'s. Either way an attempt is
        settled by :meth:`Attempt.settle`, so the rules are the same."""
        first = self.start_lone(job, plan)
        if isinstance(first, SendJob):
            return await self.run(first, plan)
        assert first.waiter is not None
        outcome: Outcome
        try:
            outcome = await first.waiter
        except ProducerError as exc:
            outcome = exc
        except BaseException:  # cancelled: the attempt is over without an outcome
            self.abandon_lone(first)
            raise
        settled = self.settle_lone(first, outcome)
        if isinstance(settled, Retry):
            return await self.resume_lone(first, settled)
        return settled

    def resume_lone(self, first: Attempt, retry: Retry) -> Coroutine[Any, Any, SendResult | None]:
        """The rest of a lone send whose first attempt answered ``retry``
        (:meth:`settle_lone`): :meth:`resume`, with the slot it holds."""
        return self.resume(msgspec.structs.replace(first.job, holds_slot=True), first.plan, retry)

    async def resume(self, job: SendJob, plan: SendPlan, retry: Retry) -> SendResult | None:
        """The rest of a send whose first attempt :meth:`start_first` made: its back-off,
        then the attempts its plan has left (it keeps its in-flight slot)."""
        if retry.backoff_ms > 0:
            await anyio.sleep(plan.backoff_s(retry, self.clock.monotonic_ms()))
        return await self.run(job, plan)

    def _select(self, job: SendJob, plan: SendPlan, route: TopicRoute, now: float) -> MessageQueue:
        return choose_queue(
            self.router,
            route.snapshot,
            last_broker=plan.last_broker,
            now_ms=int(now),
            order_key=job.order_key,
        )

    async def _attempt(
        self, send: _Send, route: TopicRoute, queue: MessageQueue, step: Dispatch, now: float
    ) -> tuple[Retry | Finish, float]:
        """One attempt; returns the decision and the clock reading it ended at."""
        job, plan = send.job, send.plan
        addr = _master_addr(route, queue)
        contexts: list[AttemptContext] = []
        if self.hooks.active:
            pairs = (
                list(zip(job.members, job.msg_ids, strict=True))
                if job.members
                else [(job.message, job.prepared.msg_id)]
            )
            contexts = attempt_contexts(self.group, pairs, queue, addr, step.number)
            for ctx in contexts:
                await self.hooks.before(ctx)
            now = self.clock.monotonic_ms()
        attempt = self.attempts.launch(job, plan, queue, now)  # unanswered is evidence too
        outcome: Outcome
        try:
            if not addr:
                broker = queue.broker_name
                raise ConnectError(f"no master address for broker {broker!r} in the route")
            oneway = plan.mode is SendMode.ONEWAY
            request = build_send_request(job.prepared, queue, self.clock.wall_ms(), oneway=oneway)
            if oneway:
                await self.client.invoke_oneway(addr, request, step.timeout_ms)
                outcome = None  # written: all a oneway send learns
            else:
                outcome = await self.client.invoke(addr, request, step.timeout_ms)
        except ProducerError as exc:
            outcome = exc
        except BaseException:
            attempt.abandon()
            raise
        decision = attempt.settle(outcome)
        if contexts:
            tell_contexts(contexts, attempt.latency_ms, plan.last_result, attempt.error)
        if send.spans:  # none: telemetry is off
            messages = len(job.members) or 1
            record = plan.attempts[-1]
            self.telemetry.attempt(send.spans, route.topic, record, step.number, messages)
        now = attempt.ended_ms
        if contexts:
            for ctx in contexts:
                await self.hooks.after(ctx)
            now = self.clock.monotonic_ms()
        return decision, now

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
