"""One assigned queue: its pull loop, and the consumption of what it pulls.

The pull loop keeps one PULL_MESSAGE in flight (long-polled by the broker), holds what
arrives in the queue's :class:`ProcessQueue`, and hands batches to consumption. Each
batch's outcome settles its messages: successes and successfully sent-back failures
leave the process queue, and the queue's offset moves to the smallest offset still
held - never past a message in flight (CONSUMER.md 2.4-2.7).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import TaskGroup

from producer._consume.decisions import ConsumeStatus, flow_blocked, settle
from producer._consume.message import ReceivedMessage, received_message
from producer._consume.offsets import OffsetTable
from producer._consume.process_queue import ProcessQueue
from producer._remoting.consumer_requests import MessageModel, PullParams, PullStatus
from producer._remoting.message import MessageQueue
from producer._remoting.subscription import Subscription
from producer.consumer._broker_api import BrokerApi
from producer.consumer._options import ConsumerOptions
from producer.errors import ProducerError

log = logging.getLogger("producer.consumer")

MAX_BODY_BYTES = 64 * 1024 * 1024  # an inflated body larger than this is refused
PULL_RPC_MARGIN_MS = 15_000.0  # the RPC outlives the broker's hold by this much


@dataclass(slots=True)
class ConsumeContext:
    """Passed to a listener that takes two arguments; set fields to steer the outcome.

    ``ack_index``: with SUCCESS, messages ``0..ack_index`` succeeded and the rest are
    retried (default: all succeeded). ``delay_level``: for retried messages, 0 lets the
    broker choose (``3 + reconsume_times``), > 0 is that level, -1 sends them straight
    to the dead-letter queue.
    """

    queue: MessageQueue
    ack_index: int | None = None
    delay_level: int = 0


Listener = Callable[..., Any]


class Consumption:
    """Runs the listener with bounded concurrency and settles each batch."""

    def __init__(
        self,
        listener: Listener,
        *,
        api: BrokerApi,
        offsets: OffsetTable,
        options: ConsumerOptions,
        tg: TaskGroup,
        now_ms: Callable[[], float],
    ) -> None:
        self.api = api
        self.offsets = offsets
        self.options = options
        self.tg = tg
        self._now_ms = now_ms
        self._limiter = anyio.CapacityLimiter(options.max_concurrency)
        self._with_context = _takes_context(listener)
        self._is_async = inspect.iscoroutinefunction(listener)
        self._listener = listener
        self.in_flight = 0
        self._idle = anyio.Event()
        self._idle.set()
        self.consumed = 0
        self.sent_back = 0

    def submit(self, pq: ProcessQueue, messages: list[ReceivedMessage]) -> None:
        size = self.options.consume_batch_size
        for start in range(0, len(messages), size):
            self._start(pq, messages[start : start + size])

    def _start(self, pq: ProcessQueue, batch: list[ReceivedMessage], delay_ms: float = 0) -> None:
        if self.in_flight == 0:
            self._idle = anyio.Event()
        self.in_flight += 1
        self.tg.start_soon(self._run, pq, batch, delay_ms)

    async def wait_idle(self) -> None:
        await self._idle.wait()

    async def _run(self, pq: ProcessQueue, batch: list[ReceivedMessage], delay_ms: float) -> None:
        try:
            if delay_ms:
                await anyio.sleep(delay_ms / 1000.0)
            if not pq.dropped:
                await self._consume(pq, batch)
        finally:
            self.in_flight -= 1
            if self.in_flight == 0:
                self._idle.set()

    async def _consume(self, pq: ProcessQueue, batch: list[ReceivedMessage]) -> None:
        context = ConsumeContext(pq.queue)
        async with self._limiter:
            now = self._now_ms()
            for message in batch:
                message.consume_start_ms = now
            status = await self._call(batch, context)
        if pq.dropped:  # given up meanwhile: another member owns it now
            log.info("%s was dropped while consuming; its result is discarded", pq.queue)
            return
        outcome = settle(status, batch, context.ack_index)
        self.consumed += len(outcome.done)
        settled = list(outcome.done)
        unsent: list[ReceivedMessage] = []
        if self.options.model is MessageModel.BROADCASTING:
            settled += outcome.failed  # broadcasting never retries (as Java)
            for message in outcome.failed:
                log.warning("broadcast message %s failed and is dropped", message.msg_id)
        else:
            for message in outcome.failed:
                if await self._send_back(message, context.delay_level):
                    settled.append(message)
                else:
                    unsent.append(message)
        offset = pq.remove(settled)
        if offset >= 0 and not pq.dropped:
            self.offsets.update(pq.queue, offset, increase_only=True)
        if unsent:
            for message in unsent:
                message.reconsume_times += 1
            self._start(pq, unsent, self.options.local_retry_delay_ms)

    async def _call(self, batch: list[ReceivedMessage], context: ConsumeContext) -> ConsumeStatus:
        args: tuple[Any, ...] = (batch, context) if self._with_context else (batch,)
        try:
            if self._is_async:
                result = await self._listener(*args)
            else:
                result = await anyio.to_thread.run_sync(self._listener, *args)
        except Exception:
            log.exception("listener raised on %d message(s); they will be retried", len(batch))
            return ConsumeStatus.RECONSUME_LATER
        if isinstance(result, ConsumeStatus):
            return result
        log.warning("listener returned %r, not a ConsumeStatus: treated as RECONSUME_LATER", result)
        return ConsumeStatus.RECONSUME_LATER

    async def _send_back(self, message: ReceivedMessage, delay_level: int) -> bool:
        """CONSUMER_SEND_MSG_BACK; if that fails, the fallback send; ``False`` if both fail."""
        max_times = self.options.max_reconsume_times
        try:
            await self.api.send_back(message, delay_level, max_times)
            self.sent_back += 1
            return True
        except ProducerError as exc:
            log.warning(
                "send-back of %s failed (%s); trying %%RETRY%% directly", message.msg_id, exc
            )
        try:
            await self.api.send_to_retry_topic(
                message, max_times, reconsume_times=message.reconsume_times + 1
            )
            self.sent_back += 1
            return True
        except ProducerError as exc:
            log.warning(
                "could not send %s back (%s); consuming it again locally in %.0f ms",
                message.msg_id,
                exc,
                self.options.local_retry_delay_ms,
            )
            return False


def _takes_context(listener: Listener) -> bool:
    try:
        parameters = inspect.signature(listener).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in positional)


class QueueWorker:
    """The pull loop of one assigned queue."""

    def __init__(
        self,
        pq: ProcessQueue,
        next_offset: int,
        *,
        subscription: Subscription,
        sub_version: Callable[[], int],
        api: BrokerApi,
        offsets: OffsetTable,
        consumption: Consumption,
        options: ConsumerOptions,
    ) -> None:
        self.pq = pq
        self.next_offset = next_offset
        self.subscription = subscription
        self._sub_version = sub_version
        self.api = api
        self.offsets = offsets
        self.consumption = consumption
        self.options = options
        self.scope = anyio.CancelScope()

    def __repr__(self) -> str:
        return f"QueueWorker({self.pq!r}, next={self.next_offset})"

    def stop(self) -> None:
        self.scope.cancel()

    async def run(self) -> None:
        with self.scope:
            while not self.pq.dropped:
                await self._step()

    async def _step(self) -> None:
        options = self.options
        blocked = flow_blocked(self.pq, options.flow, orderly=False)
        if blocked is not None:
            log.debug("%s: flow control (%s)", self.pq.queue, blocked)
            await anyio.sleep(options.flow_control_delay_ms / 1000.0)
            return
        committed = self.offsets.read(self.pq.queue)
        params = PullParams(
            group=self.api.group,
            queue=self.pq.queue,
            offset=self.next_offset,
            max_messages=options.pull_batch_size,
            commit_offset=committed or 0,
            suspend_timeout_ms=options.suspend_timeout_ms,
            sub_version=self._sub_version(),
            commit=options.model is MessageModel.CLUSTERING,
        )
        try:
            result = await self.api.pull(params, options.suspend_timeout_ms + PULL_RPC_MARGIN_MS)
        except ProducerError as exc:
            log.debug("%s: pull failed (%s); retrying", self.pq.queue, exc)
            await anyio.sleep(options.pull_retry_delay_ms / 1000.0)
            return
        if self.pq.dropped:
            return
        self.next_offset = result.next_begin_offset
        if result.status is PullStatus.FOUND:
            self._found(result.records)
        elif result.status is PullStatus.OFFSET_ILLEGAL:
            log.warning("%s: offset moved to %d", self.pq.queue, result.next_begin_offset)
            self.offsets.update(self.pq.queue, result.next_begin_offset, increase_only=False)
        elif not len(self.pq):
            # correctTagsOffset: nothing held, so skipped (filtered) offsets are consumed
            self.offsets.update(self.pq.queue, result.next_begin_offset, increase_only=True)

    def _found(self, records: list[Any]) -> None:
        broker = self.pq.queue.broker_name
        messages = []
        for record in records:
            if not self.subscription.matches(record.properties.get("TAGS")):
                continue
            try:
                body = record.inflated_body(MAX_BODY_BYTES)
            except ProducerError as exc:
                log.error("%s: message at %d has a bad body: %s", broker, record.queue_offset, exc)
                body = record.body
            messages.append(received_message(record, broker, body))
        added = self.pq.put(messages)
        if added:
            self.consumption.submit(self.pq, added)
        elif not len(self.pq):
            self.offsets.update(self.pq.queue, self.next_offset, increase_only=True)
