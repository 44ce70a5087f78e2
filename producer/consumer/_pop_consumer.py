"""``PopConsumer``: the push consumer's listener, fed by pop instead of by pulls from
assigned queues (5.x brokers; docs/consuming.md 6.4).

One loop pops (long polling) while fewer than ``max_cached_messages`` messages are in
flight and hands each batch of ``consume_batch_size`` to the listener, which may be plain
(run in a worker thread) or ``async`` and answers :class:`ConsumeStatus` as for
:class:`PushConsumer`. Each message's outcome is decided by
:func:`producer._consume.pop_retry.pop_step` and then carried out: ack; hide again for the
pop delay table's next step (RECONSUME_LATER or an exception); or, past
``max_reconsume_times``, the dead-letter queue. Nothing is rebalanced or locked and no
offset is kept: any number of consumers share every queue, and one that dies leaves
its messages to come back once their invisible time runs out.
"""

from __future__ import annotations

import inspect
import logging
import random
import ssl as ssl_module
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel

from producer._client.clock import Clock
from producer._client.keywords import takes_options
from producer._consume.pop_retry import PopAction, PopStep, pop_step
from producer._lifecycle import AsyncLifecycle, Outstanding, exit_noting_cancel
from producer._types.consumer.context import ConsumeContext
from producer._types.consumer.popped import PoppedMessage
from producer._types.consumer.status import ConsumeStatus
from producer._types.credentials import Credentials
from producer._types.lifecycle_state import LifecycleState
from producer.consumer._listener import Listener, _takes_context
from producer.consumer._options import AWAIT_DURATION_MS, PopConsumerOptions
from producer.consumer._simple_consumer import SimpleConsumer
from producer.errors import InvalidOptionError, LocalProtocolError, ProducerError

__all__ = ["PopConsumer"]

log = logging.getLogger("producer.consumer")
_O = PopConsumerOptions()  # the defaults, written once there


class PopConsumer(AsyncLifecycle):
    """A push-style consumer of one group over pop::

        async def handle(messages):
            ...
            return ConsumeStatus.SUCCESS          # or RECONSUME_LATER (or raise)

        consumer = PopConsumer("my-group", "127.0.0.1:9876", listener=handle)
        consumer.subscribe("Orders", "paid || refunded")
        async with consumer:
            ...

    ``invisible_duration_ms`` must cover the listener's time for a batch: a message not
    acked by then is delivered again (also to another consumer).
    """

    _kind = "consumer"
    #: The settings, built from the keywords (and checked) before ``__init__``'s body.
    options: PopConsumerOptions

    @takes_options(PopConsumerOptions, wiring=("listener", "credentials", "ssl", "clock", "rng"))
    def __init__(
        self,
        group: str,
        namesrv: str | list[str],
        *,
        listener: Listener,
        orderly: bool = _O.orderly,
        consume_batch_size: int = _O.consume_batch_size,
        pop_batch_size: int = _O.pop_batch_size,
        max_cached_messages: int = _O.max_cached_messages,
        invisible_duration_ms: int = _O.invisible_duration_ms,
        await_duration_ms: int = AWAIT_DURATION_MS,
        max_reconsume_times: int = _O.max_reconsume_times,
        close_timeout_ms: float = _O.close_timeout_ms,
        credentials: Credentials | None = None,
        ssl: bool | ssl_module.SSLContext | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if not callable(listener):
            raise InvalidOptionError("listener must be a function: PopConsumer(..., listener=fn)")
        o = self.options
        self.pop = SimpleConsumer(
            group, namesrv, await_duration_ms=o.await_duration_ms,
            invisible_duration_ms=o.invisible_duration_ms, receive_batch=o.pop_batch_size,
            orderly=o.orderly, credentials=credentials, ssl=ssl, clock=clock, rng=rng,
        )  # fmt: skip
        self.group = group
        self.listener = listener
        self.consume_batch_size = o.consume_batch_size
        self.max_cached_messages = o.max_cached_messages
        self.max_reconsume_times = o.max_reconsume_times
        self.close_timeout_ms = o.close_timeout_ms
        self._with_context = _takes_context(listener)
        self._is_async = inspect.iscoroutinefunction(listener) or (
            inspect.iscoroutinefunction(type(listener).__call__)
        )
        self._tg: anyio.abc.TaskGroup | None = None
        self._in_flight = Outstanding()
        self._cached = 0
        self._room = anyio.Event()
        self._ack_pending: list[PoppedMessage] = []
        self._ack_round: anyio.Event | None = None
        self.stats = {
            "consumed": 0,
            "acked": 0,
            "retried": 0,
            "dead_lettered": 0,
            "lost_handles": 0,
        }

    def __repr__(self) -> str:
        return (
            f"PopConsumer({self.group!r}, {self.state.value}, cached={self._cached}, {self.stats})"
        )

    def subscribe(self, topic: str, expression: str = "*") -> None:
        """Consume ``topic``'s messages whose tag is in ``expression`` (``*``: all)."""
        if self.state is not LifecycleState.NEW:
            raise LocalProtocolError("subscribe() before start()")
        self.pop.subscribe(topic, expression)

    async def start(self) -> None:
        """Check the brokers can pop (5.x), then pop and consume until :meth:`aclose`."""
        self._refuse_start()
        if not self.pop.subscriptions():
            raise InvalidOptionError("nothing subscribed: call subscribe(topic) before start()")
        await self.pop.start()
        try:
            await self.pop.check()  # a 4.x broker or a FIFO topic fails here, not later
        except BaseException:
            await self.pop.aclose()
            raise
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._now_running()
        self._tg.start_soon(self._pop_loop, self._tg)

    async def wait_idle(self) -> None:
        """Return once no batch is being consumed or settled (acked, hidden, dead-lettered)."""
        await self._in_flight.wait_idle()

    async def aclose(self) -> None:
        """Stop popping, let batches in flight settle (up to ``close_timeout_ms``), close.
        Messages popped and not settled come back once their invisible time runs out."""
        if not self._close_begins():
            return
        tg, self._tg = self._tg, None
        cancelled = None
        if tg is not None:
            with anyio.move_on_after(self.close_timeout_ms / 1000.0, shield=True):
                await self.wait_idle()
            tg.cancel_scope.cancel()
            cancelled = await exit_noting_cancel(tg)
        await self.pop.aclose()
        self._now_closed()
        if cancelled is not None:
            raise cancelled

    # -- the loop ------------------------------------------------------------------------

    async def _pop_loop(self, tg: anyio.abc.TaskGroup) -> None:
        while self.state is LifecycleState.RUNNING:
            room = self.max_cached_messages - self._cached
            if room <= 0:
                self._room = anyio.Event()
                await self._room.wait()
                continue
            try:
                popped = await self.pop.receive(min(room, self.pop.receive_batch))
            except LocalProtocolError as exc:  # cannot get better by trying again
                log.error("%s: popping stopped: %s", self.group, exc)
                return
            except ProducerError as exc:
                log.warning("%s: pop failed: %s", self.group, exc)
                await anyio.sleep(1.0)  # a broker refusing pops: not in a tight loop
                continue
            self._cached += len(popped)
            if self.pop.orderly:  # each queue's messages in order, one batch after another
                by_queue: dict[tuple[str, int], list[PoppedMessage]] = {}
                for message in popped:
                    handle = message.receipt.handle
                    by_queue.setdefault((handle.broker_name, handle.queue_id), []).append(message)
                for messages in by_queue.values():
                    self._in_flight.enter()
                    tg.start_soon(self._consume_in_order, messages)
                continue
            if popped:  # one task per pop: its batches in turn (pops run side by side)
                self._in_flight.enter()
                tg.start_soon(self._consume_all, popped)

    async def _consume_all(self, messages: list[PoppedMessage]) -> None:
        try:
            for start in range(0, len(messages), self.consume_batch_size):
                self._in_flight.enter()
                await self._consume(messages[start : start + self.consume_batch_size])
        finally:
            self._in_flight.leave()

    async def _consume_in_order(self, messages: list[PoppedMessage]) -> None:
        """An orderly pop of one queue: batch after batch; after a batch that is not all
        acked, the rest are left un-consumed (the broker holds the queue, then hands them
        out again after the failed ones)."""
        try:
            for start in range(0, len(messages), self.consume_batch_size):
                batch = messages[start : start + self.consume_batch_size]
                self._in_flight.enter()
                if not await self._consume(batch):
                    remaining = len(messages) - start - len(batch)
                    self._cached -= remaining
                    self._room.set()
                    return
        finally:
            self._in_flight.leave()

    async def _consume(self, batch: list[PoppedMessage]) -> bool:
        """Consume one batch and settle it; True when every message was acked."""
        try:
            context = ConsumeContext(batch[0].queue)
            status = await self._call(batch, context)
            self.stats["consumed"] += len(batch)
            steps = [
                pop_step(
                    status,
                    i,
                    context.ack_index,
                    m.reconsume_times,
                    self.max_reconsume_times,
                    context.delay_level,
                )
                for i, m in enumerate(batch)
            ]
            acks = [m for m, step in zip(batch, steps, strict=True) if step.action is PopAction.ACK]
            await self._ack(acks)
            for message, step in zip(batch, steps, strict=True):
                if step.action is not PopAction.ACK:
                    await self._settle(message, step)
            return len(acks) == len(batch)
        finally:
            self._cached -= len(batch)
            self._room.set()
            self._in_flight.leave()

    async def _call(self, batch: list[PoppedMessage], context: ConsumeContext) -> ConsumeStatus:
        args: tuple[Any, ...] = (batch, context) if self._with_context else (batch,)
        try:
            if self._is_async:
                result = await self.listener(*args)
            else:
                result = await anyio.to_thread.run_sync(self.listener, *args)
        except Exception as exc:  # the listener's failure is a RECONSUME_LATER
            log.info("%s: listener raised %r: consumed again later", self.group, exc)
            return ConsumeStatus.RECONSUME_LATER
        return result if isinstance(result, ConsumeStatus) else ConsumeStatus.RECONSUME_LATER

    async def _ack(self, messages: list[PoppedMessage]) -> None:
        """Ack with the other batches settling in the same loop turn: the first to come
        waits one turn, then sends every ack gathered (one batch ack per broker)."""
        if not messages:
            return
        self._ack_pending.extend(messages)
        if self._ack_round is not None:
            await self._ack_round.wait()
            return
        done = self._ack_round = anyio.Event()
        try:
            await anyio.lowlevel.checkpoint()
            taken, self._ack_pending = self._ack_pending, []
            self._ack_round = None
            await self._ack_now(taken)
        finally:
            done.set()

    async def _ack_now(self, messages: list[PoppedMessage]) -> None:
        try:
            await self.pop.ack_batch(messages)
            self.stats["acked"] += len(messages)
            return
        except ProducerError:
            pass  # one expired or refused: ack them one by one
        for message in messages:
            try:
                await self.pop.ack(message)
                self.stats["acked"] += 1
            except ProducerError as exc:  # it comes back when its invisible time runs out
                self.stats["lost_handles"] += 1
                log.warning("%s: ack of %s failed: %s", self.group, message.msg_id, exc)

    async def _settle(self, message: PoppedMessage, step: PopStep) -> None:
        try:
            if step.action is PopAction.RETRY:
                await self.pop.change_invisible_duration(message, step.delay_ms)
                self.stats["retried"] += 1
            else:
                await self.pop.dead_letter(message, self.max_reconsume_times)
                self.stats["dead_lettered"] += 1
        except ProducerError as exc:  # it comes back when its invisible time runs out
            self.stats["lost_handles"] += 1
            log.warning(
                "%s: %s of %s failed: %s", self.group, step.action.value, message.msg_id, exc
            )
