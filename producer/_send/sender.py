"""Carries out send plans: the I/O shell around :mod:`producer._send.plan`.

For each attempt it selects a queue (or takes the selector's), gets a connection, sends
the request rebuilt for that queue, feeds the outcome to the fault-aware router (S8),
runs hooks and telemetry, and asks the plan what to do next.

The clock is read once per step that can take time: at the start, after each wait
(backpressure, route lookup, connect, hooks, back-off) and after each attempt. Code
between two awaits that cannot suspend reuses the last reading (``now``), so a plain
send reads it four times rather than once per decision.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import anyio
from opentelemetry.trace import Span

from latency_fault import Router
from producer._client.clock import Clock
from producer._client.routes import RouteTable, TopicRoute
from producer._remoting.message import Message, MessageQueue
from producer._remoting.requests import PreparedMessage, build_send_request
from producer._remoting.send_header import parse_send_response
from producer._send.backpressure import InFlightLimiter
from producer._send.hooks import AttemptContext, HookRunner
from producer._send.plan import Dispatch, Finish, Retry, SendPlan, outcome_of
from producer._send.result import SendResult
from producer._send.telemetry import Telemetry
from producer._transport import ConnectionPool
from producer.errors import AttemptRecord, BrokerError, ConnectError, ProducerError, RequestTimeout

QueueSelector = Callable[[TopicRoute], MessageQueue]


@dataclass(frozen=True, slots=True)
class SendJob:
    """One send's request; its budget, attempts and mode live in its :class:`SendPlan`."""

    prepared: PreparedMessage
    message: Message
    selector: QueueSelector | None = None  # keyed / ordered: the queue is final (F5)


@dataclass(frozen=True, slots=True)
class _Send:
    job: SendJob
    plan: SendPlan
    span: Span


class Sender:
    def __init__(
        self,
        *,
        group: str,
        routes: RouteTable,
        pool: ConnectionPool,
        router: Router,
        limiter: InFlightLimiter,
        hooks: HookRunner,
        telemetry: Telemetry,
        clock: Clock,
        connect_timeout_ms: float,
        retry_not_store_ok: bool,
    ) -> None:
        self.group = group
        self.routes = routes
        self.pool = pool
        self.router = router
        self.limiter = limiter
        self.hooks = hooks
        self.telemetry = telemetry
        self.clock = clock
        self.connect_timeout_ms = connect_timeout_ms
        self.retry_not_store_ok = retry_not_store_ok

    async def run(self, job: SendJob, plan: SendPlan) -> SendResult:
        """The whole send: backpressure, route, attempts; raises the final error."""
        topic = job.prepared.topic
        span = self.telemetry.start_send(topic, plan.mode.value)
        started = self.clock.monotonic_ms()
        try:
            result = await self._run_limited(_Send(job, plan, span), started)
        except ProducerError as exc:
            self.telemetry.finish_error(span, topic, exc, self._seconds_since(started))
            raise
        except BaseException:
            span.end()
            raise
        self.telemetry.finish_ok(span, topic, result, self._seconds_since(started))
        return result

    async def _run_limited(self, send: _Send, now: float) -> SendResult:
        job = send.job
        size = len(job.prepared.body)
        if not self.limiter.try_acquire(size):
            await self.limiter.acquire(size, send.plan.deadline_ms - now)
            now = self.clock.monotonic_ms()
        try:
            route = self.routes.cached(job.prepared.topic)
            if route is None:
                route = await self.routes.get(job.prepared.topic, send.plan.deadline_ms)
                now = self.clock.monotonic_ms()
            finish = await self._attempts(send, route, now)
        finally:
            self.limiter.release(size)
        if finish.error is not None:
            raise finish.error
        assert finish.result is not None
        return finish.result

    async def _attempts(self, send: _Send, route: TopicRoute, now: float) -> Finish:
        plan = send.plan
        step = plan.next_attempt(now)
        while isinstance(step, Dispatch):
            route = self.routes.cached(route.topic) or route  # a refresh may have landed
            queue = self._select(send.job, plan, route, now)
            decision, now = await self._attempt(send, route, queue, step, now)
            if isinstance(decision, Finish):
                return decision
            if decision.backoff_ms > 0:
                await self._back_off(decision, plan, now)
                now = self.clock.monotonic_ms()
            step = plan.next_attempt(now)
        return step

    def _select(self, job: SendJob, plan: SendPlan, route: TopicRoute, now: float) -> MessageQueue:
        if job.selector is not None:
            return job.selector(route)
        return self.router.select_queue(route.snapshot, plan.last_broker, int(now))

    async def _back_off(self, decision: Retry, plan: SendPlan, now: float) -> None:
        remaining = plan.deadline_ms - now
        await anyio.sleep(max(min(decision.backoff_ms, remaining), 0.0) / 1000.0)

    async def _attempt(
        self, send: _Send, route: TopicRoute, queue: MessageQueue, step: Dispatch, now: float
    ) -> tuple[Retry | Finish, float]:
        """One attempt; returns the decision and the clock reading it ended at."""
        job, plan = send.job, send.plan
        addr = route.broker_addrs.get(queue.broker_name, "")
        ctx = None
        if self.hooks.active:
            ctx = AttemptContext(
                self.group, job.message, queue, addr, step.number, job.prepared.msg_id
            )
            await self.hooks.before(ctx)
            now = self.clock.monotonic_ms()
        start = now
        broker = queue.broker_name
        self.router.on_dispatch(broker, int(start))  # an unanswered attempt is evidence too
        try:
            result = await self._exchange(job.prepared, queue, addr, start + step.timeout_ms, start)
        except ProducerError as exc:
            self.router.on_complete(broker)
            now = self.clock.monotonic_ms()
            latency = now - start
            self._record_fault(queue.broker_name, latency, exc, now)
            decision: Retry | Finish = plan.on_error(queue, exc, latency, now)
            if ctx is not None:
                ctx.error, ctx.latency_ms = exc, latency
        except BaseException:
            self.router.on_complete(broker)
            plan.on_cancelled(queue, self.clock.monotonic_ms() - start)  # S8: no fault
            raise
        else:
            self.router.on_complete(broker)
            now = self.clock.monotonic_ms()
            latency = now - start
            self._record_fault(queue.broker_name, latency, None, now)
            decision = plan.on_result(queue, result, latency)
            if ctx is not None:
                ctx.result, ctx.latency_ms = result, latency
        self.telemetry.attempt(send.span, route.topic, plan.attempts[-1], step.number)
        if ctx is not None:
            await self.hooks.after(ctx)
            now = self.clock.monotonic_ms()
        return decision, now

    async def _exchange(
        self,
        prepared: PreparedMessage,
        queue: MessageQueue,
        addr: str,
        deadline_ms: float,
        now: float,
    ) -> SendResult:
        if not addr:
            raise ConnectError(f"no master address for broker {queue.broker_name!r} in the route")
        connection = self.pool.open_connection(addr)
        if connection is None:
            connect_budget = min(deadline_ms - now, self.connect_timeout_ms)
            connection = await self.pool.get(addr, timeout_ms=connect_budget)
            now = self.clock.monotonic_ms()
        remaining = deadline_ms - now
        if remaining <= 0:
            raise RequestTimeout(f"no time left to send to {addr} after connecting")
        request = build_send_request(prepared, queue, self.clock.wall_ms())
        response = await connection.request(request, remaining)
        status, header = parse_send_response(response)
        return SendResult(
            status=status,
            msg_id=prepared.msg_id,
            offset_msg_id=header.msg_id,
            queue=queue,
            queue_offset=header.queue_offset,
            region_id=header.region_id,
            trace_on=header.trace_on,
            transaction_id=header.transaction_id,
            attempts=(),
        )

    async def run_oneway(self, prepared: PreparedMessage, deadline_ms: float) -> None:
        """One attempt, no response awaited; a failure is recorded and raised, never retried."""
        route = await self.routes.get(prepared.topic, deadline_ms)
        queue = self.router.select_queue(route.snapshot, None, int(self.clock.monotonic_ms()))
        addr = route.broker_addrs.get(queue.broker_name, "")
        start = self.clock.monotonic_ms()
        try:
            if not addr:
                raise ConnectError(f"no master address for broker {queue.broker_name!r}")
            budget = deadline_ms - start
            connection = await self.pool.get(addr, timeout_ms=min(budget, self.connect_timeout_ms))
            request = build_send_request(prepared, queue, self.clock.wall_ms(), oneway=True)
            await connection.send_oneway(request, deadline_ms - self.clock.monotonic_ms())
        except ProducerError as exc:
            now = self.clock.monotonic_ms()
            latency = now - start
            self._record_fault(queue.broker_name, latency, exc, now)
            record = AttemptRecord(
                queue.broker_name, queue.queue_id, outcome_of(exc), exc.code, latency
            )
            raise exc.with_attempts([record]) from None

    def _record_fault(
        self, broker: str, latency_ms: float, error: ProducerError | None, now_ms: float
    ) -> None:
        """S8: success -> latency; any error -> isolation (5.x marks broker codes unreachable)."""
        bans_before = self.router.ban_count
        self.router.record(
            broker,
            latency_ms,
            isolation=error is not None,
            now_ms=int(now_ms),
            reachable=not isinstance(error, BrokerError),
        )
        if self.router.ban_count > bans_before:
            self.telemetry.ban(broker)

    def _seconds_since(self, started_ms: float) -> float:
        return (self.clock.monotonic_ms() - started_ms) / 1000.0
