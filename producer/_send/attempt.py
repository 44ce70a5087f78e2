"""One attempt of a send, from its dispatch to its settlement (S5, S8, A2).

:meth:`Attempts.launch` sends an attempt out: from then the router counts it in flight (an
unanswered attempt is evidence too, S8). Its request is built for its queue (A4) and
written here too: :meth:`Attempts.start` as a bare loop future on an open connection (no
task), :meth:`Attempts.send_and_settle` awaited to its settlement. The :class:`Attempt`
is settled once, the same way whichever way the send runs (awaited in the caller's coroutine, a loop
future's callback, a task): :meth:`Attempt.settle` with its :data:`Outcome` parses an
answer, has the router learn the latency or the fault (S8), has the plan decide
(:class:`~producer._send.plan.Retry` or :class:`~producer._send.plan.Finish`; the plan's
one attempt counter is what A2 shares across a hand-over to a task) and tells the answer
observer (message trace). :meth:`Attempt.abandon` ends an attempt cancelled before its
outcome: the router is told it is over but learns no fault from it, and the plan records
it as cancelled (S5, S8).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence

import msgspec

from latency_fault import Router
from producer._client.clock import Clock
from producer._client.remoting import RemotingClient
from producer._client.routes import RouteTable
from producer._remoting.command import RemotingCommand
from producer._remoting.producer_requests import build_send_request
from producer._remoting.send_header import parse_send_response
from producer._send.job import SendJob
from producer._send.plan import Dispatch, Finish, Retry, SendMode
from producer._send.send import Send
from producer._send.telemetry import Telemetry
from producer._transport import Connection
from producer._types.message import Message, MessageQueue
from producer._types.send_result import SendResult
from producer.errors import BrokerError, ConnectError, ProducerError

#: How an attempt came back: the broker's response (parsed on settling), the error that
#: ended it, or ``None`` for a oneway frame handed to the socket (no answer comes).
Outcome = RemotingCommand | ProducerError | None
#: Told of every attempt a broker answered, synchronously and cheaply (message trace):
#: the messages with their ids, the queue, its broker's address, the latency, the result.
AnswerObserver = Callable[
    [Sequence[tuple[Message, str]], MessageQueue, str, float, SendResult | None], None
]
#: Gets a task-less first attempt's decision, in its loop future's callback.
Settled = Callable[[Retry | Finish], None]


class Attempts:
    """Starts the attempts of one sender's sends on its client's connections, and holds
    what their settlements report to: the fault-aware router, the clock, telemetry's ban
    count, the answer observer."""

    __slots__ = ("answered", "client", "clock", "router", "routes", "telemetry")

    def __init__(
        self,
        *,
        client: RemotingClient,
        router: Router,
        clock: Clock,
        routes: RouteTable,
        telemetry: Telemetry,
        answered: AnswerObserver | None,
    ) -> None:
        self.client = client
        self.router = router
        self.clock = clock
        self.routes = routes  # the queue's broker address, for the answer observer
        self.telemetry = telemetry
        self.answered = answered

    def launch(
        self,
        send: Send,
        queue: MessageQueue,
        now: float,
        waiter: asyncio.Future[RemotingCommand | None] | None = None,
    ) -> Attempt:
        """An attempt of ``send`` to ``queue`` goes out at ``now`` (``waiter``: its
        connection's loop future, when it was written without a task)."""
        self.router.on_dispatch(queue.broker_name, int(now))
        send.attempt_out()
        return Attempt(self, send, queue, now, waiter)

    def start(
        self,
        connection: Connection,
        send: Send,
        queue: MessageQueue,
        step: Dispatch,
        now: float,
    ) -> Attempt:
        """``step``'s attempt written on ``connection`` without a task: the attempt out,
        its ``waiter`` the connection's loop future, for the caller to settle."""
        request = build_send_request(send.job.prepared, queue, self.clock.wall_ms())
        waiter = self.client.start(connection, request, step.timeout_ms)
        return self.launch(send, queue, now, waiter)

    async def send_and_settle(
        self,
        send: Send,
        queue: MessageQueue,
        addr: str,
        step: Dispatch,
        now: float,
    ) -> Attempt:
        """``step``'s attempt to ``queue`` at ``addr`` (its broker's master, ``""``: none in
        the route, a connect error), awaited here and settled: the plan holds its decision
        (its next step). Cancelled, it is abandoned and the cancellation goes on."""
        attempt = self.launch(send, queue, now)
        job, plan = send.job, send.plan
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
        attempt.settle(outcome)
        return attempt

    def record_fault(
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

    def tell_answered(
        self, job: SendJob, queue: MessageQueue, latency: float, result: SendResult | None
    ) -> None:
        """The answer observer learns of an answered attempt (one entry per message)."""
        assert self.answered is not None
        route = self.routes.cached(queue.topic)
        addr = "" if route is None else route.broker_addrs.get(queue.broker_name, "")
        self.answered(job.messages(), queue, addr, latency, result)


class Attempt(msgspec.Struct):
    """One attempt out: its send, the queue it went to and when (``started_ms``, where its
    latency starts). Settled once (:meth:`settle`, or :meth:`abandon` when cancelled);
    then ``ended_ms``, ``latency_ms`` and ``error`` (``None``: answered, or written for a
    oneway send) say how it went. A struct: made on every send's path, cheaply."""

    attempts: Attempts
    send: Send
    queue: MessageQueue
    started_ms: float
    #: Its connection's loop future, when it was started without a task.
    waiter: asyncio.Future[RemotingCommand | None] | None = None
    ended_ms: float = 0.0  # when it was settled (or abandoned)
    error: ProducerError | None = None

    @property
    def latency_ms(self) -> float:
        """How long it took, once settled."""
        return self.ended_ms - self.started_ms

    def settle(self, outcome: Outcome) -> Retry | Finish:
        """It came back: the router learns how (S8) and the plan decides."""
        answer = None
        if isinstance(outcome, RemotingCommand):
            error = None
            try:
                answer = parse_send_response(outcome)
            except ProducerError as exc:  # a broker's refusal, or a malformed answer
                error = exc
        else:
            error = outcome
        attempts, send, queue = self.attempts, self.send, self.queue
        plan, broker = send.plan, queue.broker_name
        attempts.router.on_complete(broker)
        now = self.ended_ms = attempts.clock.monotonic_ms()
        latency = now - self.started_ms
        if error is not None:
            self.error = error
            attempts.record_fault(broker, latency, error, now)
            decision = plan.on_error(queue, error, latency, now)
        elif answer is None:  # a oneway write is not an answer: no latency to learn
            decision = plan.on_written(queue, latency)
        else:  # record_fault's success case, inline: the common path, one call fewer
            if attempts.router.record(
                broker, latency, isolation=False, now_ms=int(now), reachable=True
            ):
                attempts.telemetry.ban(broker)
            decision = plan.on_answer(queue, *answer, send.job.prepared.msg_id, latency)
            if attempts.answered is not None:
                attempts.tell_answered(send.job, queue, latency, plan.last_result)
        if type(decision) is Retry:
            send.attempt_back()  # it goes on: the send holds its slot, no attempt out
        return decision

    def when_settled(self, settled: Settled) -> None:
        """Settle it from its loop future's callback, and hand ``settled`` the decision."""
        assert self.waiter is not None, "only an attempt started without a task has a waiter"
        self.waiter.add_done_callback(functools.partial(self._done, settled))

    def _done(self, settled: Settled, waiter: asyncio.Future[RemotingCommand | None]) -> None:
        outcome: Outcome
        try:
            outcome = waiter.result()  # raises the request's error
        except ProducerError as exc:
            outcome = exc
        except BaseException as exc:  # cancelled (nobody should) or a bug of ours
            self.abandon()
            error = ProducerError(f"internal error: {exc!r}", attempts=self.send.plan.attempts)
            settled(Finish(error=error))
            return
        settled(self.settle(outcome))

    def abandon(self) -> None:
        """It ended without an outcome (cancelled): a request still queued is never written
        (its connection skips it); the router is told it is over but learns no fault from
        it, and the plan records it as cancelled (S5, S8)."""
        if self.waiter is not None:
            self.waiter.cancel()
        attempts = self.attempts
        attempts.router.on_complete(self.queue.broker_name)
        self.ended_ms = attempts.clock.monotonic_ms()
        self.send.plan.on_cancelled(self.queue, self.latency_ms)
        self.send.attempt_back()

    def __repr__(self) -> str:
        queue = self.queue
        return (
            f"Attempt({queue.broker_name}:{queue.queue_id} at {self.started_ms:g} ms, "
            f"error={self.error!r}, {self.send.plan!r})"
        )
