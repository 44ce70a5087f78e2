"""The public :class:`Producer`: its life cycle, the four ways to send (``send``,
``send_async``, ``send_oneway``, ``send_batch``) and the three of request-reply
(``request``, ``request_async``, ``send_reply``)."""

from __future__ import annotations

import logging
import os
import random
import warnings
from collections.abc import Callable, Sequence
from ssl import SSLContext
from typing import Any, Literal

import anyio

from latency_fault import make_router
from producer._client.clock import UNSTARTED_CLOCK, Clock, LoopClock
from producer._client.host import local_ipv4, shared_uniq_key_generator
from producer._client.keywords import takes_options
from producer._client.routes import parse_namesrv
from producer._lifecycle import AsyncLifecycle
from producer._remoting.acl import signer_for
from producer._remoting.codecs import DEFAULT_CODECS
from producer._remoting.command import RemotingCommand
from producer._remoting.namespace import wrap
from producer._remoting.producer_requests import PreparedMessage
from producer._remoting.request_codes import RequestCode
from producer._remoting.request_table import RequestHandler, not_supported
from producer._request_reply import RequestReply
from producer._send.attempt import Outcome
from producer._send.future import OnException, OnSuccess, SendFuture, closed_error
from producer._send.hooks import HookRunner
from producer._send.job import SendJob
from producer._send.options import DEFAULT_OPTIONS as _D
from producer._send.options import CompressType, ProducerOptions, Routing
from producer._send.plan import Finish, SendMode
from producer._send.port import ProducerPort
from producer._send.running import Parts, Running, start_running
from producer._send.send import answer
from producer._send.telemetry import Telemetry
from producer._send.tracker import SendTracker
from producer._trace.publishing import publish_tracing
from producer._transport import Connector, current_runtime
from producer._transport.base import client_tls
from producer._types.consumer.received import ReceivedMessage
from producer._types.credentials import Credentials
from producer._types.lifecycle_state import LifecycleState
from producer._types.message import Message
from producer._types.reply import Reply
from producer._types.retry_policy import RetryPolicy
from producer._types.send_result import SendResult
from producer.errors import (
    LocalProtocolError,
    ProducerError,
)

log = logging.getLogger("producer")


class Producer(AsyncLifecycle):
    """A RocketMQ producer for one producer group. Use it as ``async with Producer(...)``.

    ``namesrv`` is ``"host:port"``, ``"a:9876;b:9876"`` or a list. Options mirror the Java
    ``DefaultMQProducer`` in snake_case with the same defaults (times in ms); see the
    README's semantics table. ``routing`` picks the fault-aware queue selection;
    ``retry_policy`` which failures are retried. ``credentials`` sign every request (ACL);
    ``ssl`` (``True`` or an ``SSLContext``) makes every connection TLS.
    ``hooks`` are objects with ``before_attempt(ctx)`` / ``after_attempt(ctx)``. ``trace``
    (``True``, or a topic name) writes a message trace record of every answered send to
    ``RMQ_SYS_TRACE_TOPIC`` (or that topic) as the Java client's ``enableMsgTrace`` does,
    in batches, never failing a send. ``clock``,
    ``rng`` and ``connector`` are for tests and embedding.
    """

    _kind = "producer"
    #: The settings, built from the keywords (and checked) before ``__init__``'s body.
    options: ProducerOptions

    @takes_options(
        ProducerOptions,
        wiring=("credentials", "ssl", "hooks", "trace", "clock", "rng", "connector"),
    )
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
        namespace: str | None = _D.namespace,
        credentials: Credentials | None = None,
        ssl: SSLContext | bool | None = None,
        hooks: Sequence[object] = (),
        trace: bool | str = False,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        connector: Connector | None = None,
    ) -> None:
        options = self.options  # built from the keywords above by @takes_options
        self.group = group = wrap(options.namespace, group)  # as Java's getProducerGroup()
        self.namesrv_addrs = parse_namesrv(namesrv)
        self._signer = signer_for(credentials)
        self._tls = client_tls(ssl)
        DEFAULT_CODECS.require(options.codec)  # a missing lz4/zstandard: say so now
        self._factory = options.request_factory(group)
        self._rng = rng or random.Random()
        self._given_clock = clock
        self._clock: Clock = clock or UNSTARTED_CLOCK
        self._connector = connector
        wall_ms = lambda: self._clock.wall_ms()  # noqa: E731 - the clock is set at start
        self._trace = publish_tracing(trace, group, wall_ms, namespace)
        self._hooks = HookRunner(hooks)
        self._uniq_keys = shared_uniq_key_generator()
        self.client_id = f"{local_ipv4()}@{os.getpid()}#{self._rng.getrandbits(32):08x}"
        self.router = make_router(options.routing, self._rng)
        self._limiter = options.in_flight_limiter()
        self._tracker = SendTracker()
        self._running: Running | None = None  # built by start(), kept after aclose()
        self._telemetry = Telemetry(self.group)
        #: Serves requests brokers start on our connections (a TransactionProducer's
        #: CHECK_TRANSACTION_STATE); set before start(). None: Java's "not supported".
        self.peer_handler: RequestHandler | None = None
        self._requests: RequestReply | None = None  # request-reply, built by start()

    # -- life cycle -------------------------------------------------------------------

    def __enter__(self) -> None:
        raise TypeError(
            "Producer is async: use `async with Producer(...)`; from synchronous code, "
            "use producer.blocking.Producer"
        )

    def __exit__(self, *exc_info: object) -> None: ...  # pragma: no cover - never entered

    def __del__(self, _warn: Any = warnings.warn) -> None:
        if getattr(self, "state", None) is LifecycleState.RUNNING:
            _warn(
                f"unclosed {self!r}: use `async with` or `await producer.aclose()`",
                ResourceWarning,
                source=self,
            )

    async def start(self) -> None:
        """Open the connection pool and start the background upkeep (call from one task
        that also calls :meth:`aclose`; ``async with`` does both)."""
        self._refuse_start()
        runtime = current_runtime()
        self._clock = self._given_clock or LoopClock(runtime.loop_time)
        connector = self._connector or runtime.connector(ssl=self._tls, handler=self._serve_peer)
        self._running = await start_running(self._parts(), runtime, connector, self._clock)
        self._now_running()
        self._requests = RequestReply(
            self._running,
            group=self.group,
            client_id=self.client_id,
            clock=self._clock,
            rng=self._rng,
            uniq_keys=self._uniq_keys,
            open_running=self._open,
            prepare=self._prepared,
        )
        if self._trace is not None:
            await self._trace.start(self._running.upkeep, self._uniq_keys)

    def _reply_ends(self) -> RequestReply:
        """The request-reply ends, if running on this loop; else why not."""
        self._open()
        assert self._requests is not None, "built by start()"
        return self._requests

    def _parts(self) -> Parts:
        return Parts(
            group=self.group,
            client_id=self.client_id,
            namesrv_addrs=self.namesrv_addrs,
            options=self.options,
            factory=self._factory,
            rng=self._rng,
            router=self.router,
            limiter=self._limiter,
            hooks=self._hooks,
            telemetry=self._telemetry,
            tracker=self._tracker,
            signer=self._signer,
            answered=None if self._trace is None else self._trace.answered,
        )

    async def aclose(self) -> None:
        """Stop taking sends, let in-flight ones finish within ``close_timeout_ms``, cancel the
        rest (their futures fail with ProducerClosedError), unregister, close connections."""
        # on the wrong loop _open raises, before anything is closed
        running = self._open() if self.state is LifecycleState.RUNNING else None
        if not self._close_begins() or running is None:  # closed already, or never started
            return
        with anyio.move_on_after(self.options.close_timeout_ms / 1000.0):
            await self._limiter.wait_idle()  # in-flight sends finish, or are cancelled below
        if self._trace is not None:  # the traces of what was sent, before the pool closes
            await self._trace.aclose(self.options.close_timeout_ms)
        await running.async_sends.cancel_all()  # before stop() cancels this task too
        if self._requests is not None:  # requests awaiting a reply fail, none is left
            self._requests.close()
        cancelled = await running.stop(self.options.close_timeout_ms)
        self._now_closed()
        if cancelled is not None:  # the caller is being cancelled: closed, now say so
            raise cancelled

    async def flush(self, *, timeout_ms: float | None = None) -> None:
        """Wait until every send begun before this call has finished (successfully or not).

        Sends begun meanwhile are not waited for. Raises ``TimeoutError`` (a
        :class:`SendTimeout`) if ``timeout_ms`` passes first; the sends carry on.
        """
        await self._tracker.flush(timeout_ms)

    @property
    def in_flight(self) -> int:
        """Sends holding an in-flight slot or waiting for one."""
        return self._limiter.in_flight + self._limiter.waiting

    # -- sending ----------------------------------------------------------------------
    # Each entry point takes the running state into a local once (``_open``) and hands
    # it down: a send pays one attribute hop for it, as it did for each part before.

    async def send(
        self, message: Message, *, timeout_ms: float | None = None, order_key: str | None = None
    ) -> SendResult:
        """Send and wait for the broker's answer (the sendDefaultImpl loop, S1-S11).

        With ``order_key`` the queue is chosen by the key's Java hash over the writable
        queues (the same queue a Java producer picks), in one attempt, never steered.
        """
        if order_key is not None and not isinstance(order_key, str):
            raise LocalProtocolError(f"order_key must be a str, got {type(order_key).__name__}")
        running = self._open()
        prepared = self._prepared(message)
        budget = running.planner.budget_ms(timeout_ms)
        if message.timed:
            await running.timer.check(message, budget, prepared.topic)
        plan = running.planner.plan(SendMode.SYNC, budget, keyed=order_key is not None)
        sender = running.sender
        send = sender.begin(SendJob(prepared, message, order_key), plan)
        batching = running.batching
        if batching is not None and order_key is None:
            joined = batching.send(send)
            if joined is not None:
                return await joined
        # The lone send runs in this one coroutine, straight to the connection's future
        # (Sender.start_first); a retry, or what needs a task, goes on in Sender.complete.
        # Planned a moment ago: the plan's start is the clock reading the first attempt uses.
        first = sender.start_first(send, plan.deadline_ms - budget) if send.try_admit() else None
        if first is None:
            return _answered(answer(await sender.complete(send)))
        assert first.waiter is not None, "a started attempt has its future"
        try:
            outcome: Outcome = await first.waiter
        except ProducerError as exc:
            outcome = exc
        except BaseException:  # cancelled: the attempt is over without an outcome
            first.abandon()
            send.finish(closed_error(plan))
            raise
        decision = first.settle(outcome)
        if type(decision) is not Finish:  # a Retry; no isinstance call: every send
            return _answered(answer(await sender.complete(send)))
        if decision.error is not None:
            return _answered(answer(send.finish(decision.error)))
        result = send.finish(decision.result)  # answered: nothing to raise (answer's test)
        assert type(result) is SendResult, "a result in, a result out"  # no call to check
        return result

    async def send_batch(
        self, messages: Sequence[Message], *, timeout_ms: float | None = None
    ) -> SendResult:
        """One SEND_BATCH_MESSAGE for messages of one topic; ``result.msg_ids`` lists them."""
        running = self._open()
        keys = [self._uniq_key(m) for m in messages]
        traced = [self._telemetry.carry_context(m) for m in messages]
        prepared = self._factory.prepare_batch(traced, keys)
        job = SendJob(prepared, messages[0])
        budget = running.planner.budget_ms(timeout_ms)
        return _answered(await running.run(job, SendMode.SYNC, budget))

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
        running = self._open()
        prepared = self._prepared(message)
        budget = running.planner.budget_ms(timeout_ms)
        future = SendFuture(
            on_success, on_exception, msg_id=prepared.msg_id, loop=running.runtime.asyncio_loop
        )
        runner = running.async_runner
        send = runner.begin(prepared, message, budget, future)
        if message.timed:
            runner.send_timed(running.timer, send)
            return future
        batching = running.batching
        if batching is None or not batching.send_async(send):
            runner.send(send)
        return future

    async def send_oneway(self, message: Message, *, timeout_ms: float | None = None) -> None:
        """One attempt, no answer, no retry; raises if the frame could not be written."""
        running = self._open()
        prepared = self._prepared(message)
        budget = running.planner.budget_ms(timeout_ms)
        if message.timed:
            await running.timer.check(message, budget, prepared.topic)
        await running.run(SendJob(prepared, message), SendMode.ONEWAY, budget)

    # -- request-reply ----------------------------------------------------------------

    async def request(self, message: Message, *, timeout_ms: float) -> ReceivedMessage:
        """Send ``message`` as a request and return the reply (Java's ``request(msg,
        timeout)`` as fixed upstream: the reply, never the request).

        The whole exchange has ``timeout_ms``, which also travels as the request's
        ``TTL``. Raises :class:`~producer.errors.ReplyTimeout` when no reply comes in
        time, :class:`~producer.errors.NoReplyTopicError` when the topic's cluster has
        no reply topic, or the send's own error.
        """
        return await self._reply_ends().ask(message, timeout_ms)

    def request_async(
        self,
        message: Message,
        on_reply: Callable[[ReceivedMessage], object],
        on_exception: Callable[[BaseException], object],
        *,
        timeout_ms: float,
    ) -> None:
        """:meth:`request` as a task of the producer: exactly one of the callbacks runs,
        once - ``on_reply(reply)``, or ``on_exception(error)`` (ProducerClosedError when
        the producer closes first). Java's callback form, without its ``onSuccess(null)``.
        """
        self._reply_ends().ask_soon(message, on_reply, on_exception, timeout_ms)

    async def send_reply(self, reply: Reply, *, timeout_ms: float | None = None) -> SendResult:
        """Send a reply made by :func:`producer.consumer.create_reply` (SEND_REPLY_MESSAGE_V2):
        the broker pushes it to the requester. One attempt; raises
        :class:`~producer.errors.ReplyRefusedError` when the broker could not deliver it.
        """
        ends = self._reply_ends()
        budget = self.options.send_timeout_ms if timeout_ms is None else timeout_ms
        return await ends.send_reply(reply, budget)

    # -- internals --------------------------------------------------------------------

    def _serve_peer(self, address: str, request: RemotingCommand) -> RemotingCommand | None:
        if request.code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT and self._requests:
            return self._requests.receive(address, request)
        handler = self.peer_handler
        return not_supported(address, request) if handler is None else handler(address, request)

    def _open(self) -> Running:
        """The running state, if this producer is running and on its own loop; else why not."""
        running = self._running
        if self.state is LifecycleState.RUNNING and running is not None:
            if not running.runtime.is_current():
                raise ProducerError(
                    f"producer {self.group!r} was started on another event loop: a producer "
                    "lives on the loop it started on; create one per loop (or per "
                    "asyncio.run), or use producer.blocking.Producer from threads"
                )
            return running
        raise self._not_running()

    def _prepared(self, message: Message) -> PreparedMessage:
        if not isinstance(message, Message):
            raise LocalProtocolError(f"expected a producer.Message, got {type(message).__name__}")
        return self._factory.prepare(
            self._telemetry.carry_context(message), self._uniq_key(message)
        )

    def _uniq_key(self, message: Message) -> str:
        """The message's own ``msg_id`` (a resend keeps it), else a fresh one."""
        return message.msg_id or self._uniq_keys.next_id(self._clock.wall_ms())

    def __repr__(self) -> str:
        return (
            f"Producer(group={self.group!r}, state={self.state.value}, "
            f"in_flight={self.in_flight}, routing={self.options.routing!r})"
        )


def sending_port(producer: Producer) -> ProducerPort:
    """The internal sending interface ``producer`` offers the clients built on it (the
    transactional producer), in place of its private members."""
    return ProducerPort(producer.group, open_running=producer._open, prepare=producer._prepared)


def _answered(result: SendResult | None) -> SendResult:
    assert result is not None, "only a oneway send ends without a result"
    return result
