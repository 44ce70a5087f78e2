"""What a started producer runs on: built in one piece by ``start``, never half there.

Before ``start`` none of it exists, and ``start`` either builds all of it or fails; so
the producer holds one :class:`Running` (or None, before ``start``) where it would
otherwise hold ten attributes that may each be None.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import anyio
from anyio.abc import TaskGroup

from latency_fault import Router
from producer._client.clock import Clock
from producer._client.remoting import RemotingClient
from producer._client.routes import RouteTable
from producer._client.upkeep import Upkeep
from producer._lifecycle import exit_noting_cancel
from producer._remoting.acl import RequestSigner
from producer._remoting.producer_requests import SendRequestFactory
from producer._send.async_runner import AsyncSendRunner
from producer._send.attempt import AnswerObserver
from producer._send.backpressure import InFlightLimiter
from producer._send.batch_sends import BatchSends
from producer._send.hooks import HookRunner
from producer._send.job import SendJob
from producer._send.options import ProducerOptions
from producer._send.owned_tasks import OwnedTasks
from producer._send.plan import SendMode
from producer._send.planner import Planner
from producer._send.send import answer
from producer._send.sender import Sender
from producer._send.telemetry import Telemetry
from producer._send.timed import TimerGate
from producer._send.tracker import SendTracker
from producer._transport import ConnectionPool, Connector, Runtime
from producer._types.send_result import SendResult


@dataclass(frozen=True, slots=True)
class Parts:
    """The producer's own pieces, made once in its ``__init__``, that the running ones share."""

    group: str
    client_id: str
    namesrv_addrs: list[str]
    options: ProducerOptions
    factory: SendRequestFactory
    rng: random.Random
    router: Router
    limiter: InFlightLimiter
    hooks: HookRunner
    telemetry: Telemetry
    tracker: SendTracker
    signer: RequestSigner | None
    answered: AnswerObserver | None = None  # message trace


@dataclass(frozen=True, slots=True)
class Running:
    """A started producer's connections, tasks and send machinery."""

    runtime: Runtime  # its loop is the only one the producer can run on
    pool: ConnectionPool
    tg: TaskGroup
    sender: Sender
    planner: Planner
    timer: TimerGate
    upkeep: Upkeep
    async_sends: OwnedTasks
    async_runner: AsyncSendRunner
    batching: BatchSends | None  # None: options.batching is off

    async def run(
        self,
        job: SendJob,
        mode: SendMode,
        budget_ms: float,
        *,
        certain_retries_only: bool = False,
    ) -> SendResult | None:
        """Run one job start to end as a send of its own (a fresh plan, a flush ticket),
        in this coroutine (:meth:`Sender.complete`). ``certain_retries_only``: retry only
        failures that prove nothing was stored."""
        plan = self.planner.plan(
            mode,
            budget_ms,
            keyed=job.order_key is not None,
            certain_retries_only=certain_retries_only,
        )
        return answer(await self.sender.complete(self.sender.begin(job, plan)))

    async def stop(self, close_timeout_ms: float) -> BaseException | None:
        """Take it all down (its send tasks cancelled already: ``async_sends.cancel_all``),
        in this order: the task group (upkeep and what runs in it), the sends still
        waiting for a batch (ProducerClosedError), the brokers told we leave (within
        ``close_timeout_ms``), the pool. Returns the cancellation its caller received
        meanwhile, if any, for it to raise once closed."""
        self.tg.cancel_scope.cancel()
        cancelled = await exit_noting_cancel(self.tg)
        if self.batching is not None:
            self.batching.fail_pending()
        with anyio.move_on_after(close_timeout_ms / 1000.0, shield=True):
            await self.upkeep.unregister_all()
        # Not wrapped in a scope of ours: the pool exits the connector's task group, which
        # was entered before any scope opened here (trio insists on that order).
        return await exit_noting_cancel(self.pool) or cancelled


async def start_running(
    parts: Parts, runtime: Runtime, connector: Connector, clock: Clock
) -> Running:
    """Open the pool, start the upkeep and (with batching) the accumulator."""
    options = parts.options
    pool = ConnectionPool(connector, connect_timeout_ms=options.connect_timeout_ms)
    await pool.__aenter__()
    outgoing = () if parts.signer is None else (parts.signer,)
    client = RemotingClient(
        pool, clock, connect_timeout_ms=options.connect_timeout_ms, outgoing=outgoing
    )
    routes = RouteTable(
        parts.namesrv_addrs, client, clock, parts.rng, auto_create_topic=options.auto_create_topic
    )
    sender = Sender(
        group=parts.group,
        routes=routes,
        client=client,
        router=parts.router,
        limiter=parts.limiter,
        tracker=parts.tracker,
        hooks=parts.hooks,
        telemetry=parts.telemetry,
        clock=clock,
        answered=parts.answered,
    )
    timer = TimerGate(routes, client, clock, options.timer_max_delay_ms)
    upkeep = _upkeep(parts, routes, client, clock)
    planner = Planner(options, clock, parts.rng)
    tg = anyio.create_task_group()
    await tg.__aenter__()
    async_sends = OwnedTasks(tg, loop=runtime.asyncio_loop)
    runner = AsyncSendRunner(sender=sender, planner=planner, spawn=async_sends.spawn)
    upkeep.start(tg)
    batching = _batching(parts, sender, planner, clock, async_sends, runner, runtime)
    if batching is not None and batching.accumulator.needs_task:  # trio; asyncio: callbacks
        tg.start_soon(batching.accumulator.run)
    return Running(
        runtime,
        pool,
        tg,
        sender,
        planner,
        timer,
        upkeep,
        async_sends,
        runner,
        batching,
    )


def _upkeep(parts: Parts, routes: RouteTable, client: RemotingClient, clock: Clock) -> Upkeep:
    options = parts.options
    return Upkeep(
        group=parts.group,
        client_id=parts.client_id,
        routes=routes,
        client=client,
        router=parts.router,
        clock=clock,
        refresh_interval_ms=options.route_refresh_interval_ms,
        heartbeat_interval_ms=options.heartbeat_interval_ms,
        probe_interval_ms=options.probe_interval_ms,
    )


def _batching(
    parts: Parts,
    sender: Sender,
    planner: Planner,
    clock: Clock,
    async_sends: OwnedTasks,
    runner: AsyncSendRunner,
    runtime: Runtime,
) -> BatchSends | None:
    if not parts.options.batching:
        return None
    return BatchSends(
        parts.options,
        sender=sender,
        factory=parts.factory,
        planner=planner,
        limiter=parts.limiter,
        clock=clock,
        spawn=async_sends.spawn,
        runner=runner,
        loop=runtime.asyncio_loop,
    )
