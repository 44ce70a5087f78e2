"""Carries out sends: the I/O shell around the pure :mod:`producer._send.plan`.

Theory of operation
-------------------
A send is one :class:`~producer._send.send.Send`: its :class:`SendJob` (its request,
built once), its :class:`SendPlan` (the mode, the attempt counter, the deadline) and what
it holds (its in-flight slot, its flush ticket, its caller), which it alone releases, in
:meth:`Send.finish`. The plan owns the deadline: it is fixed when the plan is made, every
wait here (for an in-flight slot, the route, a connection, a back-off) is bounded by what
is left of it, and each attempt's network timeout is the plan's
(:meth:`SendPlan.next_attempt`). The plan decides; this module carries its decisions out
and moves the send along its states (WAITING, ADMITTED, OUT, FINISHED; the table is in
:mod:`producer._send.send`). Its steps:

* admitted: it holds an in-flight slot (A7), taken by its caller or by :meth:`Sender.run`.
* routed: the topic's route, cached or looked up within the budget.
* attempt out: a queue chosen (a keyed send's is final, F5; a transparent batch's first
  one is dealt with its neighbours'), the request rebuilt for it (A4) and written by
  :mod:`producer._send.attempt`, which tells the router it is in flight (S8).
* attempt settled: :meth:`Attempt.settle` - the router learns the latency or the fault
  (S8), the plan answers Retry or Finish. An attempt cancelled before its outcome is
  abandoned instead (:meth:`Attempt.abandon`): over, but no fault (S5).
* backing off: a Retry's back-off is owed by the plan; its next step waits it.
* finished: :meth:`Send.finish` frees what it holds and resolves its caller with the
  result, or the final error naming the send's ``msg_id``.

Where it runs: every attempt can run in :meth:`Sender.run`'s loop (driven to its finish by
:meth:`Sender.complete`), in the caller's coroutine or a task of the producer. On asyncio,
when nothing needs a task (no hooks, no OpenTelemetry SDK, the route cached, a connection
open), the FIRST attempt is started by :meth:`Sender.start_first` as a bare loop future
instead, and settled where it lands: a lone ``await producer.send`` awaits it in its own
coroutine; an async send or a transparent batch settles it in the future's callback
(:meth:`Attempt.when_settled`). A Retry then hands the same send, and so its plan's one
attempt counter (A2) and the back-off it owes, to :meth:`Sender.complete`. One of these
holds a send at a time: nothing touches a plan twice at once.

The clock is read once per step that can take time: at the start, after each wait
(backpressure, route lookup, connect, hooks, back-off) and after each attempt. Code
between two awaits that cannot suspend reuses the last reading (``now``), so a plain
send reads it four times rather than once per decision.
"""

from __future__ import annotations

import functools
import logging

import anyio
import msgspec
from opentelemetry.trace import Span

from latency_fault import Router, choose_queue, spread_batch
from producer._client.clock import Clock
from producer._client.remoting import RemotingClient
from producer._client.routes import RouteTable, TopicRoute
from producer._send.attempt import AnswerObserver, Attempt, Attempts
from producer._send.backpressure import InFlightLimiter
from producer._send.future import SendFuture, closed_error
from producer._send.hooks import HookRunner, attempt_contexts, tell_contexts
from producer._send.job import SendJob
from producer._send.plan import Backoff, Dispatch, Finish, SendPlan
from producer._send.send import Ending, Send, SendState
from producer._send.telemetry import Telemetry
from producer._send.tracker import SendTracker
from producer._types.attempt_context import AttemptContext
from producer._types.message import MessageQueue
from producer._types.send_result import SendResult
from producer.errors import ProducerError

log = logging.getLogger("producer")


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
        tracker: SendTracker,
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
        self.tracker = tracker
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

    def begin(self, job: SendJob, plan: SendPlan, future: SendFuture | None = None) -> Send:
        """A new send of ``job`` under ``plan``, its flush ticket taken (WAITING);
        ``future``: the caller's, resolved when it finishes (``None``: the caller awaits)."""
        return Send(job, plan, self.limiter, self.tracker, future)

    def spread(self, topic: str, count: int) -> list[tuple[MessageQueue, int]] | None:
        """Where a transparent group of ``count`` messages to ``topic`` goes, per message
        (``spread_batch``); ``None`` when the route is not cached yet (the group is then
        dealt once the lookup returns)."""
        route = self.routes.cached(topic)
        if route is None or not len(route.snapshot):
            return None
        now = int(self.clock.monotonic_ms())
        return spread_batch(self.router, route.snapshot, count, now_ms=now)

    async def complete(self, send: Send) -> Ending:
        """Run ``send`` to its end (:meth:`run`) and finish it: its outcome, also handed
        to its future if it has one. Cancelled, it finishes as closed (its fate unknown
        once attempted) and the cancellation goes on; a bug of ours is logged and ends
        it with an internal error, so that no task group dies of it."""
        try:
            outcome: Ending = await self.run(send)
        except ProducerError as exc:
            outcome = exc
        except anyio.get_cancelled_exc_class():
            send.finish(closed_error(send.plan))
            raise
        except Exception as exc:
            log.exception("a send failed unexpectedly")
            outcome = ProducerError(f"internal error: {exc!r}", attempts=send.plan.attempts)
        return send.finish(outcome)

    async def run(self, send: Send) -> SendResult | None:
        """The whole send, or what its plan has left of it (a back-off it owes first):
        backpressure, route, attempts; raises the final error. It does not finish the
        send: :meth:`complete` does.

        Returns the result, or ``None`` for a oneway send (it gets no answer)."""
        started = self.clock.monotonic_ms()
        job, plan = send.job, send.plan
        if not self.telemetry.enabled(started):  # no OpenTelemetry SDK: no no-op calls
            return await self._run_admitted(send, started)
        run = functools.partial(self._run_admitted, send, started)
        topic, operation = job.prepared.topic, plan.mode.value
        return await self.telemetry.traced(topic, operation, job.msg_ids, self.clock, started, run)

    async def _run_admitted(
        self, send: Send, now: float, spans: tuple[Span, ...] = ()
    ) -> SendResult | None:
        """The send holding its in-flight slot (waited for here while it has none), its
        route (cached, or looked up within the budget), then its plan's steps: attempts
        and back-offs until it finishes. ``spans``: the send's, when it is traced."""
        plan = send.plan
        if send.state is SendState.WAITING and not send.try_admit():
            await send.admit(plan.deadline_ms - now)
            now = self.clock.monotonic_ms()
        route = self.routes.cached(send.job.prepared.topic)
        if route is None:
            route = await self.routes.get(send.job.prepared.topic, plan.deadline_ms)
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
            now = await self._attempt(send, spans, route, step, now)

    # -- the first attempt without a task (asyncio) -------------------------------------

    def start_first(self, send: Send, now: float | None = None) -> Attempt | None:
        """Start an admitted send's first attempt as a loop future on an open connection:
        the :class:`Attempt` out, its ``waiter`` set, for the caller to settle. ``None``:
        nothing is sent, for :meth:`complete` to run it all: when a hook or an
        OpenTelemetry SDK needs the attempt or the route is not cached; and with its
        first queue set when one was chosen but no connection to it can start the request
        (none open yet, or trio), so that the router's round-robin is not stepped twice.
        If starting it raises, the send is finished with the error first. ``now``: the
        clock read when its plan was made just before, if it was (read here otherwise)."""
        if now is None:
            now = self.clock.monotonic_ms()
        if self.hooks.active or self.telemetry.enabled(now):
            return None
        job, plan = send.job, send.plan
        route = self.routes.cached(job.prepared.topic)
        if route is None:
            return None
        try:
            # The queue first, then the plan's step: a fresh plan always dispatches (its
            # budget is positive), so the round-robin is stepped for a send that goes out.
            queue = job.first_queue or self._select(job, plan, route, now)  # a batch's: dealt
            step = plan.next_attempt(now)
            if type(step) is not Dispatch:  # no isinstance call: every send
                return None
            addr = _master_addr(route, queue)
            connection = self.client.startable(addr) if addr else None
            if connection is None:
                send.job = msgspec.structs.replace(job, first_queue=queue)
                return None
            return self.attempts.start(connection, send, queue, step, now)
        except ProducerError as exc:
            send.finish(exc)
            raise

    def _select(self, job: SendJob, plan: SendPlan, route: TopicRoute, now: float) -> MessageQueue:
        return choose_queue(
            self.router,
            route.snapshot,
            last_broker=plan.last_broker,
            now_ms=int(now),
            order_key=job.order_key,
        )

    async def _attempt(
        self, send: Send, spans: tuple[Span, ...], route: TopicRoute, step: Dispatch, now: float
    ) -> float:
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
        attempt = await self.attempts.send_and_settle(send, queue, addr, step, now)
        if contexts:
            tell_contexts(contexts, attempt.latency_ms, plan.last_result, attempt.error)
        if spans:  # none: telemetry is off
            messages = len(job.members) or 1
            record = plan.attempts[-1]
            self.telemetry.attempt(spans, route.topic, record, step.number, messages)
        if not contexts:
            return attempt.ended_ms
        for ctx in contexts:
            await self.hooks.after(ctx)
        return self.clock.monotonic_ms()


def _master_addr(route: TopicRoute, queue: MessageQueue) -> str:
    """The address of the queue's broker (its master), ``""`` when the route has none."""
    return route.broker_addrs.get(queue.broker_name, "")
