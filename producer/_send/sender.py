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
  one is dealt with its neighbours'), the request rebuilt for it (A4) and written by
  :mod:`producer._send.attempt`, which tells the router it is in flight (S8).
* attempt settled: :meth:`Attempt.settle` - the router learns the latency or the fault
  (S8), the plan answers Retry or Finish. An attempt cancelled before its outcome is
  abandoned instead (:meth:`Attempt.abandon`): over, but no fault (S5).
* backing off: a Retry's back-off is owed by the plan; its next step waits it.
* finished: the result, or the final error naming the send's ``msg_id``, goes back.

Where it runs: every attempt can run in :meth:`Sender.run`'s loop, in the caller's
coroutine or a task of the producer. On asyncio, when nothing needs a task (no hooks, no
OpenTelemetry SDK, the route cached, a connection open), the FIRST attempt is started by
:meth:`Sender.start_first` as a bare loop future instead, and settled where it lands: a
lone ``await producer.send`` awaits it in its own coroutine (:meth:`Sender.start_lone`,
:meth:`Sender.settle_lone`); an async send or a transparent batch settles it in the
future's callback (:meth:`Attempt.when_settled`).
A Retry then hands the same plan, and so its one attempt counter (A2) and the back-off it
owes, to :meth:`Sender.run`. One of these holds a send at a time: nothing touches a plan
twice at once.

The clock is read once per step that can take time: at the start, after each wait
(backpressure, route lookup, connect, hooks, back-off) and after each attempt. Code
between two awaits that cannot suspend reuses the last reading (``now``), so a plain
send reads it four times rather than once per decision.
"""

from __future__ import annotations

import functools
from collections.abc import Coroutine
from typing import Any

import anyio
import msgspec
from opentelemetry.trace import Span

from latency_fault import Router, choose_queue, spread_batch
from producer._client.clock import Clock
from producer._client.remoting import RemotingClient
from producer._client.routes import RouteTable, TopicRoute
from producer._send.attempt import AnswerObserver, Attempt, Attempts, Outcome
from producer._send.backpressure import InFlightLimiter
from producer._send.hooks import AttemptContext, HookRunner, attempt_contexts, tell_contexts
from producer._send.job import SendJob
from producer._send.plan import Backoff, Dispatch, Finish, Retry, SendPlan
from producer._send.telemetry import Telemetry
from producer._types.message import MessageQueue
from producer._types.send_result import SendResult
from producer.errors import ProducerError


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
            client=client,
            router=router,
            clock=clock,
            routes=routes,
            telemetry=telemetry,
            answered=answered,
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
        """The whole send, or what its plan has left of it (a back-off it owes first):
        backpressure, route, attempts; raises the final error.

        Returns the result, or ``None`` for a oneway send (it gets no answer)."""
        started = self.clock.monotonic_ms()
        try:
            if not self.telemetry.enabled(started):  # no OpenTelemetry SDK: no no-op calls
                return await self._run_admitted(job, plan, started)
            run = functools.partial(self._run_admitted, job, plan, started)
            topic, operation = job.prepared.topic, plan.mode.value
            return await self.telemetry.traced(
                topic, operation, job.msg_ids, self.clock, started, run
            )
        except ProducerError as error:
            job.name_in(error)
            raise

    async def _run_admitted(
        self, job: SendJob, plan: SendPlan, now: float, spans: tuple[Span, ...] = ()
    ) -> SendResult | None:
        """The send holding its in-flight slot (taken here unless its caller took it; a
        transparent batch's members hold theirs), its route (cached, or looked up within
        the budget), then its plan's steps: attempts and back-offs until it finishes.
        ``spans``: the send's, when it is traced."""
        size = 0 if job.members else len(job.prepared.body)
        if size and not (job.holds_slot or self.limiter.try_acquire(size)):
            await self.limiter.acquire(size, plan.deadline_ms - now)
            now = self.clock.monotonic_ms()
        try:
            route = self.routes.cached(job.prepared.topic)
            if route is None:
                route = await self.routes.get(job.prepared.topic, plan.deadline_ms)
                now = self.clock.monotonic_ms()
            while True:
                step = plan.next_attempt(now)
                if isinstance(step, Finish):
                    return step.outcome()
                if isinstance(step, Backoff):
                    await anyio.sleep(step.seconds)
                    now = self.clock.monotonic_ms()
                    continue
                if step.number > 1:  # a refresh may have landed
                    route = self.routes.cached(route.topic) or route
                now = await self._attempt(_Send(job, plan, spans), route, step, now)
        finally:
            if size:
                self.limiter.release(size)

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
        if route is None:
            return job
        # The queue first, then the plan's step: a fresh plan always dispatches (its budget
        # is positive), so the round-robin is stepped for a send that goes out.
        queue = job.first_queue or self._select(job, plan, route, now)  # a batch's is dealt
        step = plan.next_attempt(now)
        if not isinstance(step, Dispatch):
            return job
        addr = _master_addr(route, queue)
        connection = self.client.startable(addr) if addr else None
        if connection is None:
            return msgspec.structs.replace(job, first_queue=queue)
        return self.attempts.start(connection, job, plan, queue, step, now)

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
        :class:`Retry`: :meth:`resume_lone` runs the rest (the slot kept for it)."""
        decision = first.settle(outcome)
        if isinstance(decision, Retry):
            return decision
        self.limiter.release(len(first.job.prepared.body))
        if decision.error is not None:
            raise first.job.name_in(decision.error)
        return decision.result

    def abandon_lone(self, first: Attempt) -> None:
        """A lone send was cancelled while its first attempt was out: over without an
        outcome (S5, S8), its slot freed."""
        first.abandon()
        self.limiter.release(len(first.job.prepared.body))

    def resume_lone(self, first: Attempt) -> Coroutine[Any, Any, SendResult | None]:
        """The rest of a lone send whose first attempt answered :class:`Retry`
        (:meth:`settle_lone`): :meth:`run`, with the slot it holds."""
        return self.run(msgspec.structs.replace(first.job, holds_slot=True), first.plan)

    def _select(self, job: SendJob, plan: SendPlan, route: TopicRoute, now: float) -> MessageQueue:
        return choose_queue(
            self.router,
            route.snapshot,
            last_broker=plan.last_broker,
            now_ms=int(now),
            order_key=job.order_key,
        )

    async def _attempt(self, send: _Send, route: TopicRoute, step: Dispatch, now: float) -> float:
        """One attempt, its hooks and telemetry around it; returns the clock reading it
        ended at. Its queue: a transparent batch's first one was dealt with its
        neighbours' (:meth:`spread`); any other is chosen now."""
        job, plan = send.job, send.plan
        first = job.first_queue
        queue = (
            first if first is not None and step.number == 1 else self._select(job, plan, route, now)
        )
        addr = _master_addr(route, queue)
        contexts: list[AttemptContext] = []
        if self.hooks.active:
            contexts = attempt_contexts(self.group, job.messages(), queue, addr, step.number)
            for ctx in contexts:
                await self.hooks.before(ctx)
            now = self.clock.monotonic_ms()
        attempt = await self.attempts.send_and_settle(job, plan, queue, addr, step, now)
        if contexts:
            tell_contexts(contexts, attempt.latency_ms, plan.last_result, attempt.error)
        if send.spans:  # none: telemetry is off
            messages = len(job.members) or 1
            record = plan.attempts[-1]
            self.telemetry.attempt(send.spans, route.topic, record, step.number, messages)
        if not contexts:
            return attempt.ended_ms
        for ctx in contexts:
            await self.hooks.after(ctx)
        return self.clock.monotonic_ms()


def _master_addr(route: TopicRoute, queue: MessageQueue) -> str:
    """The address of the queue's broker (its master), ``""`` when the route has none."""
    return route.broker_addrs.get(queue.broker_name, "")
