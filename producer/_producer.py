"""The public :class:`Producer`: life cycle and the four ways to send."""

from __future__ import annotations

import enum
import logging
import os
import random
import warnings
from collections.abc import Sequence
from ssl import SSLContext
from types import TracebackType
from typing import Any, Literal

import anyio
from anyio.abc import TaskGroup

from latency_fault import make_router
from producer._client.clock import UNSTARTED_CLOCK, Clock, LoopClock
from producer._client.host import local_ipv4, shared_uniq_key_generator
from producer._client.keywords import known_keywords
from producer._client.remoting import RemotingClient
from producer._client.routes import RouteTable, parse_namesrv
from producer._client.upkeep import Maintenance
from producer._remoting.acl import Credentials, signer_for
from producer._remoting.codecs import DEFAULT_CODECS
from producer._remoting.command import RemotingCommand
from producer._remoting.message import Message
from producer._remoting.request_table import RequestHandler, not_supported
from producer._remoting.requests import PreparedMessage, SendRequestFactory
from producer._send.async_runner import AsyncSendRunner
from producer._send.async_sends import AsyncSends
from producer._send.backpressure import InFlightLimiter
from producer._send.batch_sends import BatchSends, batchable
from producer._send.future import OnException, OnSuccess, SendFuture
from producer._send.hooks import HookRunner
from producer._send.options import DEFAULT_OPTIONS as _D
from producer._send.options import CompressType, ProducerOptions, Routing
from producer._send.plan import SendMode
from producer._send.planner import Planner
from producer._send.result import SendResult
from producer._send.retry_policy import RetryPolicy
from producer._send.sender import Sender, SendJob
from producer._send.telemetry import Telemetry
from producer._send.timed import TimerGate
from producer._send.tracker import SendTracker
from producer._transport import ConnectionPool, Connector, Runtime, current_runtime
from producer._transport.base import client_tls
from producer.errors import (
    LocalProtocolError,
    ProducerClosedError,
    ProducerError,
    SendTimeout,
)

log = logging.getLogger("producer")


_RUNS_ONCE = (
    "a Producer is started once and closed once (closing again is a no-op); "
    "create a new Producer to send again"
)


class ProducerState(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    CLOSING = "closing"
    CLOSED = "closed"


class Producer:
    """A RocketMQ producer for one producer group. Use it as ``async with Producer(...)``.

    ``namesrv`` is ``"host:port"``, ``"a:9876;b:9876"`` or a list. Options mirror the Java
    ``DefaultMQProducer`` in snake_case with the same defaults (times in ms); see the
    README's semantics table. ``routing`` picks the fault-aware queue selection;
    ``retry_policy`` which failures are retried. ``credentials`` sign every request (ACL);
    ``ssl`` (``True`` or an ``SSLContext``) makes every connection TLS.
    ``hooks`` are objects with ``before_attempt(ctx)`` / ``after_attempt(ctx)``. ``clock``,
    ``rng`` and ``connector`` are for tests and embedding.
    """

    @known_keywords
    def __init__(
        self,
        group: str,
        namesrv: str | Sequence[str],
        *,
        send_timeout_ms: float = _D.send_timeout_ms,
        retry_times_when_send_failed: int = _D.retry_times_when_send_failed,
        retry_times_when_send_async_failed: int = _D.retry_times_when_send_async_failed,
        retry_another_broker_when_not_store_ok: bool = _D.retry_another_broker_when_not_store_ok,
        max_message_size: int = _D.max_message_size,
        compress_over: int = _D.compress_over,
        compress_level: int = _D.compress_level,
        compress_type: CompressType = _D.compress_type,
        timer_max_delay_ms: int = _D.timer_max_delay_ms,
        retry_policy: RetryPolicy = _D.retry_policy,
        routing: Routing = _D.routing,
        route_refresh_interval_ms: float = _D.route_refresh_interval_ms,
        heartbeat_interval_ms: float = _D.heartbeat_interval_ms,
        probe_interval_ms: float = _D.probe_interval_ms,
        connect_timeout_ms: float = _D.connect_timeout_ms,
        max_in_flight: int = _D.max_in_flight,
        max_in_flight_bytes: int = _D.max_in_flight_bytes,
        backpressure: Literal["wait", "fail"] = _D.backpressure,
        close_timeout_ms: float = _D.close_timeout_ms,
        auto_create_topic: bool = _D.auto_create_topic,
        batching: bool = _D.batching,
        batch_max_messages: int = _D.batch_max_messages,
        batch_max_bytes: int = _D.batch_max_bytes,
        batch_linger_ms: float = _D.batch_linger_ms,
        credentials: Credentials | None = None,
        ssl: SSLContext | bool | None = None,
        hooks: Sequence[object] = (),
        clock: Clock | None = None,
        rng: random.Random | None = None,
        connector: Connector | None = None,
    ) -> None:
        self.options = ProducerOptions(
            send_timeout_ms=send_timeout_ms,
            retry_times_when_send_failed=retry_times_when_send_failed,
            retry_times_when_send_async_failed=retry_times_when_send_async_failed,
            retry_another_broker_when_not_store_ok=retry_another_broker_when_not_store_ok,
            max_message_size=max_message_size,
            compress_over=compress_over,
            compress_level=compress_level,
            compress_type=compress_type,
            timer_max_delay_ms=timer_max_delay_ms,
            retry_policy=retry_policy,
            routing=routing,
            route_refresh_interval_ms=route_refresh_interval_ms,
            heartbeat_interval_ms=heartbeat_interval_ms,
            probe_interval_ms=probe_interval_ms,
            connect_timeout_ms=connect_timeout_ms,
            max_in_flight=max_in_flight,
            max_in_flight_bytes=max_in_flight_bytes,
            backpressure=backpressure,
            close_timeout_ms=close_timeout_ms,
            auto_create_topic=auto_create_topic,
            batching=batching,
            batch_max_messages=batch_max_messages,
            batch_max_bytes=batch_max_bytes,
            batch_linger_ms=batch_linger_ms,
        )
        self.group = group
        self.namesrv_addrs = parse_namesrv(namesrv)
        self._signer = signer_for(credentials)
        self._tls = client_tls(ssl)
        DEFAULT_CODECS.require(self.options.codec)  # a missing lz4/zstandard: say so now
        self._factory = SendRequestFactory(
            group,
            compress_threshold=compress_over,
            compress_level=compress_level,
            compress_codec=self.options.codec,
            max_message_size=max_message_size,
        )
        self._rng = rng or random.Random()
        self._given_clock = clock
        self._clock: Clock = clock or UNSTARTED_CLOCK
        self._connector = connector
        self._hooks = HookRunner(hooks)
        self._uniq_keys = shared_uniq_key_generator()
        self.client_id = f"{local_ipv4()}@{os.getpid()}#{self._rng.getrandbits(32):08x}"
        self.router = make_router(self.options.routing, self._rng)
        self._limiter = InFlightLimiter(
            max_in_flight, max_in_flight_bytes, fail_fast=backpressure == "fail"
        )
        self._tracker = SendTracker()
        self._runtime: Runtime | None = None
        self.state = ProducerState.NEW
        self._tg: TaskGroup | None = None
        self._async_sends: AsyncSends | None = None
        self._async_runner: AsyncSendRunner | None = None
        self._pool: ConnectionPool | None = None
        self._sender: Sender | None = None
        self._planner: Planner | None = None
        self._batching: BatchSends | None = None
        self._timer: TimerGate | None = None
        self._maintenance: Maintenance | None = None
        self._telemetry = Telemetry(self.group)
        #: Serves requests brokers start on our connections (a TransactionProducer's
        #: CHECK_TRANSACTION_STATE); set before start(). None: Java's "not supported".
        self.peer_handler: RequestHandler | None = None

    # -- life cycle -------------------------------------------------------------------

    def __enter__(self) -> None:
        raise TypeError(
            "Producer is async: use `async with Producer(...)`; from synchronous code, "
            "use producer.blocking.Producer"
        )

    def __exit__(self, *exc_info: object) -> None: ...  # pragma: no cover - never entered

    def __del__(self, _warn: Any = warnings.warn) -> None:
        if getattr(self, "state", None) is ProducerState.RUNNING:
            _warn(
                f"unclosed {self!r}: use `async with` or `await producer.aclose()`",
                ResourceWarning,
                source=self,
            )

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self.aclose()
        except anyio.get_cancelled_exc_class():
            if not isinstance(exc, anyio.get_cancelled_exc_class()):
                raise
            # The body was cancelled (Ctrl-C in asyncio.run): its own cancellation goes on,
            # without a second traceback chained onto it; aclose finished all the same.

    async def start(self) -> None:
        """Open the connection pool and start the background upkeep (call from one task
        that also calls :meth:`aclose`; ``async with`` does both)."""
        if self.state is not ProducerState.NEW:
            raise LocalProtocolError(f"start() on a {self.state.value} producer: {_RUNS_ONCE}")
        runtime = current_runtime()
        self._runtime = runtime  # its loop is the only one this producer can run on
        self._clock = self._given_clock or LoopClock(runtime.loop_time)
        options = self.options
        pool = ConnectionPool(
            self._connector or runtime.connector(ssl=self._tls, handler=self._serve_peer),
            connect_timeout_ms=options.connect_timeout_ms,
        )
        await pool.__aenter__()
        self._pool = pool
        client = RemotingClient(
            pool,
            self._clock,
            connect_timeout_ms=options.connect_timeout_ms,
            outgoing=() if self._signer is None else (self._signer,),
        )
        routes = RouteTable(
            self.namesrv_addrs,
            client,
            self._clock,
            self._rng,
            auto_create_topic=options.auto_create_topic,
        )
        self._sender = Sender(
            group=self.group,
            routes=routes,
            client=client,
            router=self.router,
            limiter=self._limiter,
            hooks=self._hooks,
            telemetry=self._telemetry,
            clock=self._clock,
        )
        self._timer = TimerGate(routes, client, self._clock, options.timer_max_delay_ms)
        self._maintenance = Maintenance(
            group=self.group,
            client_id=self.client_id,
            routes=routes,
            client=client,
            router=self.router,
            clock=self._clock,
            refresh_interval_ms=options.route_refresh_interval_ms,
            heartbeat_interval_ms=options.heartbeat_interval_ms,
            probe_interval_ms=options.probe_interval_ms,
        )
        self._planner = Planner(options, self._clock, self._rng)
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._async_sends = AsyncSends(self._tg, loop=runtime.asyncio_loop)
        self._async_runner = AsyncSendRunner(
            sender=self._sender,
            spawn=self._async_sends.spawn,
            limiter=self._limiter,
            tracker=self._tracker,
        )
        self._maintenance.start(self._tg)
        if options.batching:
            self._batching = BatchSends(
                options,
                sender=self._sender,
                factory=self._factory,
                planner=self._planner,
                limiter=self._limiter,
                tracker=self._tracker,
                clock=self._clock,
                spawn=self._async_sends.spawn,
                runner=self._async_runner,
                loop=runtime.asyncio_loop,
            )
            if self._batching.accumulator.needs_task:  # trio; asyncio flushes by callback
                self._tg.start_soon(self._batching.accumulator.run)
        self.state = ProducerState.RUNNING

    async def aclose(self) -> None:
        """Stop taking sends, let in-flight ones finish within ``close_timeout_ms``, cancel the
        rest (their futures fail with ProducerClosedError), unregister, close connections."""
        if self.state in (ProducerState.CLOSING, ProducerState.CLOSED):
            return
        if self.state is ProducerState.NEW:
            self.state = ProducerState.CLOSED
            return
        self._check_loop()
        self.state = ProducerState.CLOSING
        await self._drain()
        assert self._tg is not None and self._maintenance is not None and self._pool is not None
        assert self._async_sends is not None
        await self._async_sends.cancel_all()  # before the scope below cancels this task too
        self._tg.cancel_scope.cancel()
        cancelled = await _exit_noting_cancel(self._tg)
        if self._batching is not None:
            self._batching.fail_pending()
        with anyio.move_on_after(self.options.close_timeout_ms / 1000.0, shield=True):
            await self._maintenance.unregister_all()
        # Not wrapped in a scope of ours: the pool exits the connector's task group, which
        # was entered before any scope opened here (trio insists on that order).
        cancelled = await _exit_noting_cancel(self._pool) or cancelled
        self.state = ProducerState.CLOSED
        if cancelled is not None:  # the caller is being cancelled: closed, now say so
            raise cancelled

    async def _drain(self) -> None:
        with anyio.move_on_after(self.options.close_timeout_ms / 1000.0):
            await self._limiter.wait_idle()

    async def flush(self, *, timeout_ms: float | None = None) -> None:
        """Wait until every send begun before this call has finished (successfully or not).

        Sends begun meanwhile are not waited for. Raises ``TimeoutError`` (a
        :class:`SendTimeout`) if ``timeout_ms`` passes first; the sends carry on.
        """
        ticket = self._tracker.last_ticket
        if timeout_ms is None:
            await self._tracker.wait_through(ticket)
            return
        with anyio.move_on_after(timeout_ms / 1000.0):
            await self._tracker.wait_through(ticket)
        if not self._tracker.done_through(ticket):
            open_sends = self._tracker.open_count
            raise SendTimeout(f"flush timed out after {timeout_ms:g} ms, {open_sends} open")

    @property
    def in_flight(self) -> int:
        """Sends holding an in-flight slot or waiting for one."""
        return self._limiter.in_flight + self._limiter.waiting

    # -- sending ----------------------------------------------------------------------

    async def send(
        self, message: Message, *, timeout_ms: float | None = None, order_key: str | None = None
    ) -> SendResult:
        """Send and wait for the broker's answer (the sendDefaultImpl loop, S1-S11).

        With ``order_key`` the queue is chosen by the key's Java hash over the writable
        queues (the same queue a Java producer picks), in one attempt, never steered.
        """
        if order_key is not None and not isinstance(order_key, str):
            raise LocalProtocolError(f"order_key must be a str, got {type(order_key).__name__}")
        prepared = self._prepare(message)
        budget = self._budget_ms(timeout_ms)
        if message.timed:
            await self._check_timed(message, budget)
        batching = self._batching
        if batching is not None and order_key is None and batchable(prepared, message):
            joined = batching.send(prepared, message, budget)
            if joined is not None:
                return await joined
        job = SendJob(prepared, message, order_key)
        return _answered(await self._run(job, SendMode.SYNC, budget))

    async def send_batch(
        self, messages: Sequence[Message], *, timeout_ms: float | None = None
    ) -> SendResult:
        """One SEND_BATCH_MESSAGE for messages of one topic; ``result.msg_ids`` lists them."""
        self._check_open()
        keys = [self._uniq_key(m) for m in messages]
        traced = [self._telemetry.carry_context(m) for m in messages]
        prepared = self._factory.prepare_batch(traced, keys)
        job = SendJob(prepared, messages[0])
        return _answered(await self._run(job, SendMode.SYNC, self._budget_ms(timeout_ms)))

    def send_async(
        self,
        message: Message,
        on_success: OnSuccess | None = None,
        on_exception: OnException | None = None,
        *,
        timeout_ms: float | None = None,
    ) -> SendFuture:
        """Validate, then return at once; the send runs as a task of the producer (A1-A7).

        Exactly one of the callbacks runs, exactly once; the future resolves the same way.
        """
        prepared = self._prepare(message)
        budget = self._budget_ms(timeout_ms)
        assert self._planner is not None
        assert self._runtime is not None
        future = SendFuture(
            on_success, on_exception, msg_id=prepared.msg_id, loop=self._runtime.asyncio_loop
        )
        if message.timed:
            assert self._timer is not None and self._async_sends is not None
            self._timer.then_send_async(
                message,
                budget,
                future,
                lambda: self._start_async(message, prepared, budget, future),
                spawn=self._async_sends.spawn,
                tracker=self._tracker,
            )
            return future
        batching = self._batching
        if (
            batching is not None
            and batchable(prepared, message)
            and batching.send_async(prepared, message, budget, future)
        ):
            return future
        self._start_async(message, prepared, budget, future)
        return future

    def _start_async(
        self, message: Message, prepared: PreparedMessage, budget: float, future: SendFuture
    ) -> None:
        assert self._planner is not None
        plan = self._planner.plan(SendMode.ASYNC, budget)
        # Take the in-flight slot now when there is room, so that close() drains this
        # send even if its task has not started yet.
        holds_slot = self._limiter.try_acquire(len(prepared.body))
        job = SendJob(prepared, message, holds_slot=holds_slot, ticket=self._tracker.begin())
        assert self._async_runner is not None
        self._async_runner.start(job, plan, future)

    async def _check_timed(self, message: Message, budget_ms: float) -> None:
        assert self._timer is not None
        await self._timer.check(message, budget_ms)

    async def send_oneway(self, message: Message, *, timeout_ms: float | None = None) -> None:
        """One attempt, no answer, no retry; raises if the frame could not be written."""
        prepared = self._prepare(message)
        budget = self._budget_ms(timeout_ms)
        if message.timed:
            await self._check_timed(message, budget)
        await self._run(SendJob(prepared, message), SendMode.ONEWAY, budget)

    # -- internals --------------------------------------------------------------------

    def _serve_peer(self, address: str, request: RemotingCommand) -> RemotingCommand | None:
        handler = self.peer_handler
        return not_supported(address, request) if handler is None else handler(address, request)

    def _check_open(self) -> None:
        if self.state is ProducerState.RUNNING:
            self._check_loop()
            return
        if self.state is ProducerState.NEW:
            raise ProducerClosedError(
                f"producer {self.group!r} is not started: use `async with Producer(...)` "
                "or `await producer.start()` first"
            )
        raise ProducerClosedError(f"producer {self.group!r} is {self.state.value}: {_RUNS_ONCE}")

    def _check_loop(self) -> None:
        runtime = self._runtime
        assert runtime is not None
        if not runtime.is_current():
            raise ProducerError(
                f"producer {self.group!r} was started on another event loop: a producer "
                "lives on the loop it started on; create one per loop (or per asyncio.run), "
                "or use producer.blocking.Producer from threads"
            )

    def _prepare(self, message: Message) -> PreparedMessage:
        self._check_open()
        if not isinstance(message, Message):
            raise LocalProtocolError(f"expected a producer.Message, got {type(message).__name__}")
        return self._factory.prepare(
            self._telemetry.carry_context(message), self._uniq_key(message)
        )

    def _uniq_key(self, message: Message) -> str:
        """The message's own ``msg_id`` (a resend keeps it), else a fresh one."""
        return message.msg_id or self._uniq_keys.next_id(self._clock.wall_ms())

    def _budget_ms(self, timeout_ms: float | None) -> float:
        assert self._planner is not None
        return self._planner.budget_ms(timeout_ms)

    async def _run(
        self,
        job: SendJob,
        mode: SendMode,
        budget_ms: float,
        *,
        certain_retries_only: bool = False,
    ) -> SendResult | None:
        assert self._sender is not None and self._planner is not None
        plan = self._planner.plan(
            mode,
            budget_ms,
            keyed=job.order_key is not None,
            certain_retries_only=certain_retries_only,
        )
        ticket = self._tracker.begin()
        try:
            return await self._sender.run(job, plan)
        finally:
            self._tracker.end(ticket)

    def __repr__(self) -> str:
        return (
            f"Producer(group={self.group!r}, state={self.state.value}, "
            f"in_flight={self.in_flight}, routing={self.options.routing!r})"
        )


def _answered(result: SendResult | None) -> SendResult:
    assert result is not None, "only a oneway send ends without a result"
    return result


async def _exit_noting_cancel(context: Any) -> BaseException | None:
    """Exit an async context entered at start; a cancellation of the closing task is
    returned, not raised, so that closing goes on to the end before it propagates."""
    try:
        await context.__aexit__(None, None, None)
    except anyio.get_cancelled_exc_class() as exc:
        return exc
    return None
