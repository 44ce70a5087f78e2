"""The public :class:`Producer`: life cycle and the four ways to send."""

from __future__ import annotations

import asyncio
import enum
import logging
import os
import random
from collections.abc import Callable, Coroutine, Sequence
from types import TracebackType
from typing import Any, Literal

import anyio
import sniffio
from anyio.abc import TaskGroup

from latency_fault import make_router
from producer._client.clock import Clock, LoopClock
from producer._client.host import local_ipv4, shared_uniq_key_generator
from producer._client.routes import RouteTable, parse_namesrv
from producer._client.upkeep import Maintenance
from producer._ordering import queue_for_key
from producer._remoting.message import Message
from producer._remoting.requests import PreparedMessage, SendRequestFactory
from producer._remoting.validation import check_send_topic
from producer._send.backpressure import InFlightLimiter
from producer._send.future import OnException, OnSuccess, SendFuture
from producer._send.hooks import HookRunner
from producer._send.options import DEFAULT_ROUTING, ProducerOptions, Routing
from producer._send.plan import SendMode, SendPlan
from producer._send.result import SendResult
from producer._send.retry_policy import RetryPolicy
from producer._send.sender import QueueSelector, Sender, SendJob
from producer._send.telemetry import Telemetry
from producer._transport import ConnectionPool, Connector, default_connector
from producer.errors import Fate, LocalProtocolError, ProducerClosedError, ProducerError

log = logging.getLogger("producer")


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
    ``retry_policy`` which failures are retried. ``hooks`` are objects with
    ``before_attempt(ctx)`` / ``after_attempt(ctx)``. ``clock``, ``rng`` and ``connector``
    are for tests and embedding.
    """

    def __init__(
        self,
        group: str,
        namesrv: str | Sequence[str],
        *,
        send_timeout: float = 3000.0,
        retry_times_when_send_failed: int = 2,
        retry_times_when_send_async_failed: int = 2,
        retry_another_broker_when_not_store_ok: bool = False,
        max_message_size: int = 4 * 1024 * 1024,
        compress_over: int = 4096,
        retry_policy: RetryPolicy | None = None,
        routing: Routing = DEFAULT_ROUTING,
        route_refresh_interval: float = 30_000.0,
        heartbeat_interval: float = 30_000.0,
        connect_timeout: float = 3000.0,
        max_in_flight: int = 10_000,
        max_in_flight_bytes: int = 256 * 1024 * 1024,
        backpressure: Literal["wait", "fail"] = "wait",
        close_timeout: float = 5000.0,
        hooks: Sequence[object] = (),
        clock: Clock | None = None,
        rng: random.Random | None = None,
        connector: Connector | None = None,
    ) -> None:
        self.options = ProducerOptions(
            send_timeout=send_timeout,
            retry_times_when_send_failed=retry_times_when_send_failed,
            retry_times_when_send_async_failed=retry_times_when_send_async_failed,
            retry_another_broker_when_not_store_ok=retry_another_broker_when_not_store_ok,
            max_message_size=max_message_size,
            compress_over=compress_over,
            retry_policy=retry_policy or RetryPolicy.default(),
            routing=routing,
            route_refresh_interval=route_refresh_interval,
            heartbeat_interval=heartbeat_interval,
            connect_timeout=connect_timeout,
            max_in_flight=max_in_flight,
            max_in_flight_bytes=max_in_flight_bytes,
            backpressure=backpressure,
            close_timeout=close_timeout,
        )
        self.group = group
        self.namesrv_addrs = parse_namesrv(namesrv)
        self._factory = SendRequestFactory(
            group, compress_threshold=compress_over, max_message_size=max_message_size
        )
        self._rng = rng or random.Random()
        self._clock = clock or LoopClock()
        self._connector = connector
        self._hooks = HookRunner(hooks)
        self._uniq_keys = shared_uniq_key_generator()
        self.client_id = f"{local_ipv4()}@{os.getpid()}#{self._rng.getrandbits(32):08x}"
        self.router = make_router(self.options.routing, self._rng)
        self.state = ProducerState.NEW
        self._in_flight = 0
        self._drained: anyio.Event | None = None
        self._tg: TaskGroup | None = None
        self._async_sends: _AsyncSends | None = None
        self._pool: ConnectionPool | None = None
        self._sender: Sender | None = None
        self._maintenance: Maintenance | None = None

    # -- life cycle -------------------------------------------------------------------

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Open the connection pool and start the background upkeep (call from one task
        that also calls :meth:`aclose`; ``async with`` does both)."""
        if self.state is not ProducerState.NEW:
            raise LocalProtocolError(f"start() on a {self.state.value} producer")
        pool = ConnectionPool(
            self._connector or default_connector(), connect_timeout_ms=self.options.connect_timeout
        )
        await pool.__aenter__()
        self._pool = pool
        routes = RouteTable(self.namesrv_addrs, pool, self._clock, self._rng)
        self._sender = self._build_sender(routes, pool)
        self._maintenance = self._build_maintenance(routes, pool)
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._async_sends = _AsyncSends(self._tg)
        self._maintenance.start(self._tg)
        self.state = ProducerState.RUNNING

    def _build_sender(self, routes: RouteTable, pool: ConnectionPool) -> Sender:
        options = self.options
        limiter = InFlightLimiter(
            options.max_in_flight,
            options.max_in_flight_bytes,
            fail_fast=options.backpressure == "fail",
        )
        return Sender(
            group=self.group,
            routes=routes,
            pool=pool,
            router=self.router,
            limiter=limiter,
            hooks=self._hooks,
            telemetry=Telemetry(self.group),
            clock=self._clock,
            connect_timeout_ms=options.connect_timeout,
            retry_not_store_ok=options.retry_another_broker_when_not_store_ok,
        )

    def _build_maintenance(self, routes: RouteTable, pool: ConnectionPool) -> Maintenance:
        return Maintenance(
            group=self.group,
            client_id=self.client_id,
            routes=routes,
            pool=pool,
            router=self.router,
            clock=self._clock,
            refresh_interval_ms=self.options.route_refresh_interval,
            heartbeat_interval_ms=self.options.heartbeat_interval,
            probe_interval_ms=self.options.probe_interval,
        )

    async def aclose(self) -> None:
        """Stop taking sends, let in-flight ones finish within ``close_timeout``, cancel the
        rest (their futures fail with ProducerClosedError), unregister, close connections."""
        if self.state in (ProducerState.CLOSING, ProducerState.CLOSED):
            return
        if self.state is ProducerState.NEW:
            self.state = ProducerState.CLOSED
            return
        self.state = ProducerState.CLOSING
        await self._drain()
        assert self._tg is not None and self._maintenance is not None and self._pool is not None
        assert self._async_sends is not None
        await self._async_sends.cancel_all()  # before the scope below cancels this task too
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)
        with anyio.move_on_after(self.options.close_timeout / 1000.0, shield=True):
            await self._maintenance.unregister_all()
        # Not wrapped in a scope of ours: the pool exits the connector's task group, which
        # was entered before any scope opened here (trio insists on that order).
        await self._pool.__aexit__(None, None, None)
        self.state = ProducerState.CLOSED

    async def _drain(self) -> None:
        if self._in_flight == 0:
            return
        self._drained = anyio.Event()
        with anyio.move_on_after(self.options.close_timeout / 1000.0):
            await self._drained.wait()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    # -- sending ----------------------------------------------------------------------

    async def send(
        self, message: Message, *, timeout: float | None = None, order_key: str | None = None
    ) -> SendResult:
        """Send and wait for the broker's answer (the sendDefaultImpl loop, S1-S11).

        With ``order_key`` the queue is chosen by the key's Java hash over the writable
        queues (the same queue a Java producer picks), in one attempt, never steered.
        """
        prepared = self._prepare(message)
        selector = None if order_key is None else _key_selector(order_key)
        job, plan = self._job(prepared, message, SendMode.SYNC, timeout, selector)
        return await self._tracked(job, plan)

    async def send_batch(
        self, messages: Sequence[Message], *, timeout: float | None = None
    ) -> SendResult:
        """One SEND_BATCH_MESSAGE for messages of one topic; ``result.msg_ids`` lists them."""
        self._check_open()
        keys = [self._next_uniq_key() for _ in messages]
        prepared = self._factory.prepare_batch(list(messages), keys)
        job, plan = self._job(prepared, messages[0], SendMode.SYNC, timeout, None)
        return await self._tracked(job, plan)

    def send_async(
        self,
        message: Message,
        on_success: OnSuccess | None = None,
        on_exception: OnException | None = None,
        *,
        timeout: float | None = None,
    ) -> SendFuture:
        """Validate, then return at once; the send runs as a task of the producer (A1-A7).

        Exactly one of the callbacks runs, exactly once; the future resolves the same way.
        """
        prepared = self._prepare(message)
        job, plan = self._job(prepared, message, SendMode.ASYNC, timeout, None)
        future = SendFuture(on_success, on_exception, msg_id=prepared.msg_id)
        assert self._async_sends is not None
        self._in_flight += 1
        self._async_sends.spawn(self._run_async, job, plan, future)
        return future

    async def send_oneway(self, message: Message, *, timeout: float | None = None) -> None:
        """One attempt, no answer, no retry; raises if the frame could not be written."""
        prepared = self._prepare(message)
        assert self._sender is not None
        deadline = self._clock.monotonic_ms() + (timeout or self.options.send_timeout)
        self._in_flight += 1
        try:
            await self._sender.run_oneway(prepared, deadline)
        finally:
            self._finished_one()

    # -- internals --------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.state is not ProducerState.RUNNING:
            raise ProducerClosedError(f"producer {self.group!r} is {self.state.value}")

    def _next_uniq_key(self) -> str:
        return self._uniq_keys.next_id(self._clock.wall_ms())

    def _prepare(self, message: Message) -> PreparedMessage:
        self._check_open()
        if not isinstance(message, Message):
            raise LocalProtocolError(f"expected a producer.Message, got {type(message).__name__}")
        check_send_topic(message.topic)
        return self._factory.prepare(message, self._next_uniq_key())

    def _job(
        self,
        prepared: PreparedMessage,
        message: Message,
        mode: SendMode,
        timeout: float | None,
        selector: QueueSelector | None,
    ) -> tuple[SendJob, SendPlan]:
        budget = self.options.send_timeout if timeout is None else timeout
        if budget <= 0:
            raise LocalProtocolError(f"timeout must be positive, got {timeout!r}")
        deadline = self._clock.monotonic_ms() + budget
        if selector is not None:
            attempts = 1
        elif mode is SendMode.SYNC:
            attempts = 1 + self.options.retry_times_when_send_failed
        else:
            attempts = 1 + self.options.retry_times_when_send_async_failed
        plan = SendPlan(
            mode=mode,
            policy=self.options.retry_policy,
            max_attempts=attempts,
            deadline_ms=deadline,
            retry_not_store_ok=self.options.retry_another_broker_when_not_store_ok,
            rng=self._rng,
        )
        return SendJob(prepared, message, selector), plan

    async def _tracked(self, job: SendJob, plan: SendPlan) -> SendResult:
        assert self._sender is not None
        self._in_flight += 1
        try:
            return await self._sender.run(job, plan)
        finally:
            self._finished_one()

    async def _run_async(self, job: SendJob, plan: SendPlan, future: SendFuture) -> None:
        assert self._sender is not None
        try:
            result = await self._sender.run(job, plan)
        except ProducerError as exc:
            future.set_error(exc)
        except anyio.get_cancelled_exc_class():
            fate = Fate.UNKNOWN if plan.attempts else Fate.NOT_STORED
            future.set_error(
                ProducerClosedError(
                    "producer closed before the send finished", fate=fate, attempts=plan.attempts
                )
            )
            raise
        except Exception as exc:  # a bug of ours: never let it kill the task group
            log.exception("send_async failed unexpectedly")
            future.set_error(ProducerError(f"internal error: {exc!r}", attempts=plan.attempts))
        else:
            future.set_result(result)
        finally:
            self._finished_one()

    def _finished_one(self) -> None:
        self._in_flight -= 1
        if self._in_flight == 0 and self._drained is not None:
            self._drained.set()

    def __repr__(self) -> str:
        return (
            f"Producer(group={self.group!r}, state={self.state.value}, "
            f"in_flight={self._in_flight}, routing={self.options.routing!r})"
        )


def _key_selector(key: str) -> QueueSelector:
    if not isinstance(key, str):
        raise LocalProtocolError(f"order_key must be a str, got {type(key).__name__}")
    return lambda route: queue_for_key(route.queues, key)


class _AsyncSends:
    """Runs the producer's ``send_async`` tasks and cancels the ones left at close.

    On asyncio (uvloop included) they are plain ``asyncio`` tasks kept in a set: anyio's
    ``start_soon`` costs tens of microseconds per task there, more than the rest of a
    send. Elsewhere (trio) they go to the producer's task group. Either way the producer
    owns them and :meth:`cancel_all` ends them the way closing the task group would.
    """

    __slots__ = ("_tasks", "_tg")

    def __init__(self, tg: TaskGroup) -> None:
        self._tg = tg
        native = sniffio.current_async_library() == "asyncio"
        self._tasks: set[asyncio.Task[None]] | None = set() if native else None

    def spawn(self, func: Callable[..., Coroutine[Any, Any, None]], *args: object) -> None:
        tasks = self._tasks
        if tasks is None:
            self._tg.start_soon(func, *args)
            return
        task = asyncio.get_running_loop().create_task(func(*args))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def cancel_all(self) -> None:
        """Cancel the native tasks still running and wait until they have finished."""
        if not self._tasks:
            return
        pending = list(self._tasks)
        for task in pending:
            task.cancel()
        await asyncio.wait(pending)
