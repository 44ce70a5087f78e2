"""How a ``send_async`` outside a transparent batch runs.

On asyncio, with nothing that needs a task (no hooks, no OpenTelemetry SDK, the route
cached, a connection open), its first attempt is a loop future with a callback: no task
is made for the send at all (most sends need one attempt). A retry, or anything the
fast way cannot do, runs as a task of the producer through the :class:`Sender`, as every
send does under trio.
"""

from __future__ import annotations

import functools

from producer._remoting.requests import PreparedMessage
from producer._send.backpressure import InFlightLimiter
from producer._send.future import SendFuture, closed_error, settle
from producer._send.job import SendJob
from producer._send.options import Planner
from producer._send.plan import Finish, Retry, SendMode, SendPlan
from producer._send.send_tasks import Spawn
from producer._send.sender import Sender
from producer._send.timed import TimerGate
from producer._send.tracker import SendTracker
from producer._types.message import Message


class AsyncSendRunner:
    """Runs the producer's ``send_async`` calls that go alone (not in a transparent
    batch), and the groups of one that batching hands it."""

    __slots__ = ("_limiter", "_planner", "_sender", "_spawn", "_tracker")

    def __init__(
        self,
        *,
        sender: Sender,
        planner: Planner,
        spawn: Spawn,
        limiter: InFlightLimiter,
        tracker: SendTracker,
    ) -> None:
        self._sender = sender
        self._planner = planner
        self._spawn = spawn
        self._limiter = limiter
        self._tracker = tracker

    def send(
        self, prepared: PreparedMessage, message: Message, budget_ms: float, future: SendFuture
    ) -> None:
        """A new ``send_async`` of ``message`` within ``budget_ms``, resolving ``future``:
        its flush ticket taken, and its in-flight slot now when there is room, so that
        close() drains this send even if its task has not started yet."""
        plan = self._planner.plan(SendMode.ASYNC, budget_ms)
        holds_slot = self._limiter.try_acquire(len(prepared.body))
        job = SendJob(prepared, message, holds_slot=holds_slot, ticket=self._tracker.begin())
        self.start(job, plan, future)

    def send_timed(
        self,
        timer: TimerGate,
        prepared: PreparedMessage,
        message: Message,
        budget_ms: float,
        future: SendFuture,
    ) -> None:
        """A new timed ``send_async``: ``timer`` checks its delivery time first, in a task
        the producer owns (a refusal settles ``future``), then it goes as :meth:`send`."""
        timer.then_send_async(
            message,
            budget_ms,
            future,
            lambda: self.send(prepared, message, budget_ms, future),
            spawn=self._spawn,
            tracker=self._tracker,
            topic=prepared.topic,
        )

    def start(self, job: SendJob, plan: SendPlan, future: SendFuture) -> None:
        """Run ``job`` (its ticket taken, its in-flight slot too if ``job.holds_slot``)."""
        if not job.holds_slot:
            self._spawn_run(job, plan, future)
            return
        first = self._sender.start_first(job, plan)
        if isinstance(first, SendJob):  # not started: a task makes every attempt
            self._spawn_run(first, plan, future)
        else:  # out, with no task of its own
            first.when_settled(functools.partial(self._settled, job, plan, future))

    def _spawn_run(self, job: SendJob, plan: SendPlan, future: SendFuture) -> None:
        self._spawn(
            self._run, job, plan, future, if_never_ran=lambda: self._abandon(job, plan, future)
        )

    def _settled(
        self, job: SendJob, plan: SendPlan, future: SendFuture, decision: Finish | Retry
    ) -> None:
        """A task-less first attempt is over: the send is finished, or goes on in a task."""
        if isinstance(decision, Retry):
            self._spawn_run(job, plan, future)  # the plan holds its back-off
            return
        self._limiter.release(len(job.prepared.body))
        self._tracker.end(job.ticket)
        if decision.error is not None:
            future.set_error(decision.error)
        else:
            assert decision.result is not None
            future.set_result(decision.result)

    async def _run(self, job: SendJob, plan: SendPlan, future: SendFuture) -> None:
        """The send, or what a task-less first attempt left of it (its plan knows)."""
        try:
            await settle(future, plan, self._sender.run(job, plan))
        finally:
            self._tracker.end(job.ticket)

    def _abandon(self, job: SendJob, plan: SendPlan, future: SendFuture) -> None:
        """Its task was cancelled at close before it ever ran (its fate unknown if a
        task-less first attempt was made)."""
        if future.done():
            return  # it did run: its own handler resolved the future and freed its slot
        if job.holds_slot:
            self._limiter.release(len(job.prepared.body))
        self._tracker.end(job.ticket)
        future.set_error(closed_error(plan))
