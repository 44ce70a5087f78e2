"""A blocking producer for synchronous code: scripts, WSGI apps, Spark executors.

:class:`Producer` runs the async :class:`producer.Producer` on an event loop of its own,
in a daemon thread, and waits for it. Every method may be called from any thread::

    from producer import Message
    from producer.blocking import Producer

    with Producer("my-group", namesrv="127.0.0.1:9876") as p:
        result = p.send(Message("Orders", b"..."))            # blocks until the broker answers
        future = p.send_async(Message("Orders", b"..."))     # a concurrent.futures.Future
        p.flush()                                            # every send so far has finished

        async def many(producer):                            # runs on the producer's loop
            return await asyncio.gather(*(producer.send(m) for m in messages))
        results = p.submit(many).result()

It takes the same keyword options as the async producer (the same names, types and
defaults).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import anyio

from producer._client.keywords import same_parameters
from producer._lifecycle import AsyncLifecycle
from producer._producer import Producer as AsyncProducer
from producer._send.future import OnException, OnSuccess
from producer._transactions.options import TransactionOptions
from producer._transactions.producer import TransactionProducer as AsyncTransactionProducer
from producer._transport.loop_thread import ClosesOnExit, LoopThread
from producer._types.consumer.received import ReceivedMessage
from producer._types.lifecycle_state import LifecycleState
from producer._types.message import Message, MessageQueue
from producer._types.send_result import SendResult
from producer._types.send_status import SendStatus
from producer._types.transaction_result import TransactionResult
from producer._types.transaction_state import TransactionState
from producer.consumer import PullConsumer as AsyncPullConsumer
from producer.errors import ProducerClosedError, ProducerError

__all__ = ["Producer", "PullConsumer", "TransactionProducer"]

T = TypeVar("T")
log = logging.getLogger("producer.transactions")
_T = TransactionOptions()  # the transaction options' defaults, written once there


class _OnLoopThread(ClosesOnExit):
    """An async object driven from other threads through its own :class:`LoopThread`."""

    _thread: LoopThread

    def _described(self) -> str:
        raise NotImplementedError

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self._submit(coroutine).result()

    @property
    def state(self) -> LifecycleState:
        """Where the async client behind this facade is in its life cycle."""
        return self._life_owner.state

    def _live_on_loop(self, owner: AsyncLifecycle) -> None:
        """Start ``owner`` in one task of the loop that also closes it (its task group
        insists on that); returns once started, raising what start() raised."""
        self._life_owner = owner
        self._closing: asyncio.Event | None = None
        started: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._life = self._thread.submit(self._live(owner, started))
        try:
            started.result()
        except BaseException:
            self._thread.stop()
            raise

    async def _live(self, owner: AsyncLifecycle, started: concurrent.futures.Future[None]) -> None:
        self._closing = asyncio.Event()
        try:
            await owner.start()
        except BaseException as exc:
            started.set_exception(exc)
            return
        started.set_result(None)
        try:
            await self._closing.wait()
        finally:
            await owner.aclose()

    def _close_on_loop(self) -> None:
        """Have the owning task close the owner, wait for it, then stop the loop."""
        if not self._thread.is_alive():
            return
        try:
            assert self._closing is not None
            self._thread.call_soon(self._closing.set)
            self._life.result()
        finally:
            self._thread.stop()

    def _submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Refused once closed, and from the loop's own thread (waiting there deadlocks)."""
        if not self._thread.is_alive():
            coroutine.close()
            raise ProducerClosedError(f"{self._described()} is closed")
        if self._thread.is_current():
            coroutine.close()
            raise RuntimeError(f"{self._described()} called from its own loop thread (a callback?)")
        return self._thread.submit(coroutine)


class Producer(_OnLoopThread):
    """The async producer behind a blocking API, on its own loop thread."""

    # The async producer's parameters, one for one (the type checker, help() and IDEs see
    # them; each option's default is written once, in ProducerOptions).
    @same_parameters(AsyncProducer.__init__)
    def __init__(self, group: str, namesrv: str | Sequence[str], **options: Any) -> None:
        # Built here, in the caller's thread, so bad options raise here; started on the loop.
        self._producer = AsyncProducer(group, namesrv, **options)
        self._thread = LoopThread(f"rocketmq-producer-{group}")
        # One task owns the producer from start to close: its task group insists on that.
        self._live_on_loop(self._owner())

    def _owner(self) -> AsyncProducer | AsyncTransactionProducer:
        """What this facade starts and closes on its loop (a subclass wraps the producer)."""
        return self._producer

    @property
    def group(self) -> str:
        """The producer group."""
        return self._producer.group

    def send(
        self, message: Message, *, timeout_ms: float | None = None, order_key: str | None = None
    ) -> SendResult:
        """Blocking :meth:`producer.Producer.send`: send and wait for the broker's answer (with
        the same retries); with ``order_key`` the key's queue, one attempt."""
        return self._call(self._producer.send(message, timeout_ms=timeout_ms, order_key=order_key))

    def send_batch(
        self, messages: Sequence[Message], *, timeout_ms: float | None = None
    ) -> SendResult:
        """Blocking :meth:`producer.Producer.send_batch`: one request for messages of one topic."""
        return self._call(self._producer.send_batch(messages, timeout_ms=timeout_ms))

    def send_oneway(self, message: Message, *, timeout_ms: float | None = None) -> None:
        """Blocking :meth:`producer.Producer.send_oneway`: one attempt, no answer, no retry."""
        self._call(self._producer.send_oneway(message, timeout_ms=timeout_ms))

    def send_async(
        self,
        message: Message,
        on_success: OnSuccess | None = None,
        on_exception: OnException | None = None,
        *,
        timeout_ms: float | None = None,
    ) -> concurrent.futures.Future[SendResult]:
        """Start a send and return at once; a bad message raises here, like ``send``.

        As with the async producer, exactly one callback runs, exactly once, before the
        future resolves; they run on the producer's loop thread, so they must not call
        this blocking producer (that raises ``RuntimeError``)."""
        result: concurrent.futures.Future[SendResult] = concurrent.futures.Future()
        result.set_running_or_notify_cancel()

        def succeeded(value: SendResult) -> None:
            try:
                if on_success is not None:
                    on_success(value)
            finally:  # a callback that raises is logged by the producer (A6)
                result.set_result(value)

        def failed(error: ProducerError) -> None:
            try:
                if on_exception is not None:
                    on_exception(error)
            finally:
                result.set_exception(error)

        async def start() -> None:
            self._producer.send_async(message, succeeded, failed, timeout_ms=timeout_ms)

        self._call(start())
        return result

    def submit(
        self, work: Callable[[AsyncProducer], Coroutine[Any, Any, T]]
    ) -> concurrent.futures.Future[T]:
        """Run ``work(async_producer)`` on the producer's loop; its future at once.

        For many concurrent sends from one blocking caller (a Spark partition does this):
        ``work`` awaits the async producer's methods with whatever concurrency it likes."""
        return self._submit(work(self._producer))

    def flush(self, *, timeout_ms: float | None = None) -> None:
        """Block until every send begun before this call has finished."""
        self._call(self._producer.flush(timeout_ms=timeout_ms))

    def close(self) -> None:
        """Let in-flight sends finish (within ``close_timeout_ms``), then stop the loop."""
        self._close_on_loop()

    def _described(self) -> str:
        return f"blocking producer {self.group!r}"

    def __repr__(self) -> str:
        return f"blocking.{self._producer!r}"


class TransactionProducer(Producer):
    """:class:`producer.TransactionProducer` behind a blocking API.

    ``execute`` runs in the caller's thread, between the half send and END_TRANSACTION;
    ``check`` is a plain function run in a worker thread (it may block on a database).
    The producer options are those of :class:`producer.Producer`.
    """

    def __init__(
        self,
        group: str,
        namesrv: str | Sequence[str],
        *,
        check: Callable[[ReceivedMessage], TransactionState],
        check_timeout_ms: float = _T.check_timeout_ms,
        topics: Sequence[str] = (),
        **options: Any,
    ) -> None:
        async def threaded_check(message: ReceivedMessage) -> TransactionState:
            return await anyio.to_thread.run_sync(check, message, abandon_on_cancel=True)

        self._tx_settings = (threaded_check, check_timeout_ms, tuple(topics))
        super().__init__(group, namesrv, **options)

    def _owner(self) -> AsyncTransactionProducer:
        check, timeout_ms, topics = self._tx_settings
        self._tx = AsyncTransactionProducer(
            self._producer, check=check, check_timeout_ms=timeout_ms, topics=topics
        )
        return self._tx

    def send_in_transaction(
        self,
        message: Message,
        execute: Callable[[Message], TransactionState],
        *,
        timeout_ms: float | None = None,
    ) -> TransactionResult:
        """Half message, ``execute`` here (an exception counts as UNKNOWN), then END."""
        half = self.send_half(message, timeout_ms=timeout_ms)
        if half.status is not SendStatus.SEND_OK:
            return self.rollback(half)
        try:
            state = execute(dataclasses.replace(message, msg_id=half.msg_id))
        except Exception as exc:  # as the async producer: logged, reported UNKNOWN
            log.exception("local transaction of %s raised; reported UNKNOWN", half.msg_id)
            return self._call(self._tx.end_half(half, TransactionState.UNKNOWN, exc))
        return self._call(self._tx.end_half(half, state, None))

    def send_half(self, message: Message, *, timeout_ms: float | None = None) -> SendResult:
        """Blocking :meth:`producer.TransactionProducer.send_half`: store a half message."""
        return self._call(self._tx.send_half(message, timeout_ms=timeout_ms))

    def commit(self, half: SendResult) -> TransactionResult:
        """Blocking :meth:`producer.TransactionProducer.commit`: make the half message visible."""
        return self._call(self._tx.commit(half))

    def rollback(self, half: SendResult) -> TransactionResult:
        """Blocking :meth:`producer.TransactionProducer.rollback`: drop the half message."""
        return self._call(self._tx.rollback(half))


class PullConsumer(_OnLoopThread):
    """The async :class:`producer.consumer.PullConsumer` behind a blocking API, on its own
    loop thread (as :class:`Producer`); Spark's executors read with it::

        with PullConsumer("my-group", "127.0.0.1:9876") as consumer:
            consumer.assign(consumer.queues("Orders"))
            consumer.seek_to_beginning()
            batches = consumer.getmany(timeout_ms=1000)

    It takes the async consumer's options; :meth:`submit` runs any coroutine function of
    the async consumer on its loop."""

    @same_parameters(AsyncPullConsumer.__init__)
    def __init__(self, group: str, namesrv: str | list[str], **options: Any) -> None:
        # The async consumer's parameters, one for one (each option written once, there).
        self._consumer = AsyncPullConsumer(group, namesrv, **options)
        self._thread = LoopThread(f"rocketmq-pull-{group}")
        # One task owns it from start to close: its heartbeat task group insists on that.
        self._live_on_loop(self._consumer)

    def queues(self, topic: str) -> list[MessageQueue]:
        """The topic's readable queues, fresh from a name server."""
        return self._call(self._consumer.queues(topic))

    def assign(
        self, queues: Iterable[MessageQueue], expression: str = "*", *, sql: str | None = None
    ) -> None:
        """Pull exactly these queues from now on; ``expression`` filters by tag (``*``:
        all), ``sql`` by properties (SQL92)."""
        self._consumer.assign(list(queues), expression, sql=sql)  # no I/O: safe from any thread

    def seek(self, queue: MessageQueue, offset: int) -> None:
        """Pull ``queue`` from ``offset`` next."""
        self._consumer.seek(queue, offset)

    def seek_to_beginning(self, *queues: MessageQueue) -> None:
        """To each queue's first stored offset (all assigned queues by default)."""
        self._call(self._consumer.seek_to_beginning(*queues))

    def seek_to_end(self, *queues: MessageQueue) -> None:
        """Past each queue's last message (all assigned by default): only new messages come."""
        self._call(self._consumer.seek_to_end(*queues))

    def position(self, queue: MessageQueue) -> int:
        """The offset the next pull of ``queue`` starts at."""
        return self._call(self._consumer.position(queue))

    def getmany(
        self, *queues: MessageQueue, timeout_ms: float = 0, max_records: int | None = None
    ) -> dict[MessageQueue, list[ReceivedMessage]]:
        """Blocking :meth:`producer.consumer.PullConsumer.getmany`: one pull of each queue;
        when none has anything, the broker holds the pulls up to ``timeout_ms``."""
        return self._call(
            self._consumer.getmany(*queues, timeout_ms=timeout_ms, max_records=max_records)
        )

    def commit(self, offsets: Mapping[MessageQueue, int] | None = None) -> None:
        """Commit ``offsets`` (default: every known position) for the group."""
        self._call(self._consumer.commit(offsets))

    def submit(
        self, work: Callable[[AsyncPullConsumer], Coroutine[Any, Any, T]]
    ) -> concurrent.futures.Future[T]:
        """Run ``work(async_consumer)`` on the consumer's loop; its future at once."""
        return self._submit(work(self._consumer))

    def close(self) -> None:
        """Unregister, close the connections and stop the loop thread (nothing is
        committed)."""
        self._close_on_loop()

    def _described(self) -> str:
        return f"blocking pull consumer {self._consumer.group!r}"

    def __repr__(self) -> str:
        return f"blocking.{self._consumer!r}"
