"""Orderly consumption (``ConsumeMessageOrderlyService``, docs/consuming.md 2.9).

One task per queue consumes its messages strictly in offset order, one batch at a time,
only while the broker's lock on the queue is ours (clustering). A failed batch is not
sent back: it is consumed again locally after the queue's suspension, and a message
that has used ``max_reconsume_times`` goes to ``%RETRY%<group>`` with its count, which
the broker turns into a dead letter. The offset moves only past a settled head.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import anyio

from producer._consume.decisions import (
    DeliveryFate,
    NextStep,
    OrderlyRetry,
    lock_valid,
    orderly_retry,
    suspend_ms,
)
from producer._consume.process_queue import ProcessQueue
from producer._remoting.consumer_requests import MessageModel
from producer._types.consumer.context import ConsumeContext
from producer._types.consumer.received import ReceivedMessage
from producer._types.consumer.status import ConsumeStatus
from producer._types.message import MessageQueue
from producer.consumer._broker_api import BrokerApi
from producer.consumer._consumption import Consumption
from producer.consumer._failure_log import log_failed
from producer.consumer._listener import RUN_MAX, ListenerCall, Verdict
from producer.consumer._options import ORDERLY_MAX_RECONSUME_TIMES
from producer.errors import ProducerError, UndecodableBodyError

log = logging.getLogger("producer.consumer")

RELOCK_DELAY_MS = 10.0  # tryLockLaterAndReconsume: try the lock again this soon ...
UNLOCKED_DELAY_MS = 3000.0  # ... and, refused, consume again after this long
HAND_OVER_WAIT_MS = 1000.0  # a queue given up waits this long for its batch to end


async def lock_queues(
    api: BrokerApi, broker_name: str, pqs: Iterable[ProcessQueue], now_ms: float
) -> None:
    """LOCK_BATCH_MQ for ``pqs`` (all on ``broker_name``): each is marked locked or not."""
    by_queue = {pq.queue: pq for pq in pqs}
    granted = await api.lock(broker_name, list(by_queue))
    for queue, pq in by_queue.items():
        pq.locked = queue in granted
        if pq.locked:
            pq.last_lock_ms = now_ms
        else:
            log.info("%s: the broker did not lock %s for us", api.group, queue)


class OrderlyConsumption(Consumption):
    """Per queue, one task that takes the head of the queue in order."""

    def __init__(self, call: ListenerCall, **parts: Any) -> None:
        super().__init__(call, **parts)
        self._draining: set[MessageQueue] = set()
        self._consuming: dict[MessageQueue, anyio.Lock] = {}
        self._closing = anyio.Event()

    async def wait_idle(self) -> None:
        """Until the batches in flight settle. A queue pausing before it retries a failed
        batch (or waiting for its lock) has none in flight: it stops now, its messages
        left uncommitted for the next owner, so a held queue never delays a close by
        ``close_timeout_ms``."""
        self._closing.set()
        await super().wait_idle()

    @property
    def _locks_needed(self) -> bool:
        return self.options.model is MessageModel.CLUSTERING

    def submit(self, pq: ProcessQueue, messages: list[ReceivedMessage]) -> None:
        if pq.queue in self._draining:
            return  # the queue's task takes them in turn
        self._draining.add(pq.queue)
        self._tasks.enter()
        self.tg.start_soon(self._drain, pq)

    async def hand_over(self, pq: ProcessQueue) -> bool:
        """Stop consuming ``pq`` after the batch in flight settles (its offset with it);
        ``False`` if that batch did not end within a second (keep the queue for now)."""
        lock = self._consuming.setdefault(pq.queue, anyio.Lock())
        with anyio.move_on_after(HAND_OVER_WAIT_MS / 1000.0):
            async with lock:
                pq.dropped = True
                self._consuming.pop(pq.queue, None)
                return True
        return False

    async def _drain(self, pq: ProcessQueue) -> None:
        lock = self._consuming.setdefault(pq.queue, anyio.Lock())
        try:
            while not pq.dropped and not self._closing.is_set():
                if self._locks_needed and not lock_valid(pq, self._now_ms()):
                    await self._relock_later(pq)
                    continue
                async with lock:  # held for a run: hand_over waits for its end
                    run = self._next_run(pq)  # empty also once handed over meanwhile
                    if not run:
                        return
                    pause_ms = await self._consume_run(pq, run)
                if pause_ms:
                    await self._pause(pause_ms)
        finally:
            self._draining.discard(pq.queue)
            self._tasks.leave()

    def _next_run(self, pq: ProcessQueue) -> list[list[ReceivedMessage]]:
        """The next batches from the head of the queue, in order: as many as a run takes
        (one while tracing, or with an idempotency guard: it must remember each success
        before the next batch is split), cut before an undecodable message (which goes
        alone)."""
        if pq.dropped:
            return []
        call, size = self._call, self.options.consume_batch_size
        call.telemetry.look()
        if call.guarded:
            count = 1
        else:  # an async call that waits is awaited alone, so its run can be long
            count = RUN_MAX if call.is_async and not call.telemetry.tracing else call.run_length()
        head = pq.head(size * count)
        for index, message in enumerate(head):
            if message.undecodable is not None:
                head = head[:index] or [message]
                break
        return [head[start : start + size] for start in range(0, len(head), size)]

    async def _consume_run(self, pq: ProcessQueue, run: list[list[ReceivedMessage]]) -> float:
        """The run's batches in order, up to the first that fails (orderly: nothing after
        it is consumed before it is); returns how long the queue pauses next (ms)."""
        call, now = self._call, self._now_ms()
        async with call.slot:
            if call.is_async or call.telemetry.tracing or call.guarded:
                return await self._consume_each(pq, run, now)
            return await self._consume_plain(pq, run, now)

    async def _consume_plain(
        self, pq: ProcessQueue, run: list[list[ReceivedMessage]], now: float
    ) -> float:
        """One worker-thread hop for the run (the thread stops at the first failure, and
        once the run took ``ORDERLY_RUN_S``: the queue's lock is looked at between runs)."""
        calls = [(batch, ConsumeContext(pq.queue)) for batch in run]
        verdicts = await self._call.run_plain(calls, now, orderly=True)
        last = verdicts[-1]
        called = len(verdicts) - (last.status is not ConsumeStatus.SUCCESS)
        self._succeeded(pq, [m for batch, _ in calls[:called] for m in batch], now)
        if called == len(verdicts):
            return 0.0
        batch, context = calls[called]
        return await self._failed(pq, batch, last, context)

    async def _consume_each(
        self, pq: ProcessQueue, run: list[list[ReceivedMessage]], now: float
    ) -> float:
        """One call per batch (an async one runs to its first suspension); the successes
        so far are settled before a call that waits is awaited, and at the end. With a
        guard (a run of one batch) what it held back settles first."""
        done: list[ReceivedMessage] = []
        for batch in run:
            fresh, repeated = self._call.split(batch, now)
            if repeated:
                self._commit(pq, repeated, increase_only=False)
            if not fresh:
                continue
            context = ConsumeContext(pq.queue)
            verdict = self._call.call(fresh, context, now)
            waited = not isinstance(verdict, Verdict)
            if not isinstance(verdict, Verdict):
                self._succeeded(pq, done, now)
                done = []
                verdict = await verdict
                now = self._now_ms()
            if verdict.status is not ConsumeStatus.SUCCESS:
                self._succeeded(pq, done, now)
                return await self._failed(pq, fresh, verdict, context)
            done += fresh
            if waited or pq.dropped:  # the queue's lock is looked at again before more
                break
        self._succeeded(pq, done, now)
        return 0.0

    def _succeeded(self, pq: ProcessQueue, done: list[ReceivedMessage], now: float) -> None:
        if done:
            self._call.remember(done, now)
            self.consumed += len(done)
            self._commit(pq, done, increase_only=False)

    async def _pause(self, ms: float) -> None:
        """Sleep ``ms``, or less when the consumer closes meanwhile."""
        with anyio.move_on_after(ms / 1000.0):
            await self._closing.wait()

    async def _relock_later(self, pq: ProcessQueue) -> None:
        await self._pause(RELOCK_DELAY_MS)
        try:
            await lock_queues(self.api, pq.queue.broker_name, [pq], self._now_ms())
        except ProducerError as exc:
            log.info("%s: locking %s failed: %s", self.api.group, pq.queue, exc)
            pq.locked = False
        if not pq.locked:
            await self._pause(UNLOCKED_DELAY_MS)

    async def _failed(
        self,
        pq: ProcessQueue,
        fresh: list[ReceivedMessage],
        verdict: Verdict,
        context: ConsumeContext,
    ) -> float:
        """A batch that failed: retried here after a pause, or dead-lettered (a message
        whose dead letter could not be sent is retried); returns the pause (ms)."""
        error = verdict.error
        hopeless = not self.options.retry_policy.retries(error) or (
            isinstance(error, UndecodableBodyError) and error.permanent
        )
        if hopeless:  # the policy says this failure is final: every message of it is dead
            retry = OrderlyRetry(dead=fresh, again=[])
        else:
            retry = orderly_retry(fresh, self.options.max_reconsume_times)
        buried = [m for m in retry.dead if await self._dead_letter(m, now=hopeless)]
        requested = context.suspend_current_queue_time_ms
        pause = float(suspend_ms(requested, self.options.suspend_current_queue_time_ms))
        log_failed(self.api.group, fresh, error, self._fates(fresh, buried, pause))
        self._commit(pq, buried, increase_only=False)
        again = [m for m in fresh if m not in buried]
        for message in again:
            message.reconsume_times += 1
        self._call.telemetry.count(pq.queue.topic, "retried", len(again))
        return pause if again else 0.0

    def _fates(
        self, fresh: list[ReceivedMessage], buried: list[ReceivedMessage], pause: float
    ) -> list[DeliveryFate]:
        most = self.options.max_reconsume_times
        attempts = None if most >= ORDERLY_MAX_RECONSUME_TIMES else most + 1
        return [
            DeliveryFate(NextStep.DEAD_LETTER, m.reconsume_times + 1, attempts)
            if m in buried
            else DeliveryFate(NextStep.AGAIN_HERE, m.reconsume_times + 1, attempts, delay_ms=pause)
            for m in fresh
        ]

    async def _dead_letter(self, message: ReceivedMessage, *, now: bool) -> bool:
        """SEND_MESSAGE_V2 to ``%RETRY%`` with ``reconsume_times >= max``: the broker stores
        it in ``%DLQ%<group>``. ``now``: before its attempts are used up (the retry policy
        gave up on it), so the count it is sent with is the max. ``False`` (consume it
        again) if that send fails."""
        times = message.reconsume_times
        max_times = times if now else self.options.max_reconsume_times
        try:
            await self.api.send_to_retry_topic(message, max_times, reconsume_times=times)
        except ProducerError as exc:
            log.warning("could not dead-letter %s (%s); consuming it again", message.msg_id, exc)
            return False
        self.sent_back += 1
        self._call.telemetry.dead_letter(message.topic)
        return True
