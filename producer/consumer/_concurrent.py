"""Concurrent consumption (``ConsumeMessageConcurrentlyService``): batches of a queue
run in parallel; each batch's outcome settles its messages, and failures are sent back to
the broker for a delayed retry through ``%RETRY%<group>`` (docs/consuming.md 2.6, 2.7).

Batches wait in one queue for workers: tasks that each hold one of the listener's
``max_concurrency`` slots and take batches until none is left. A worker is started only
when every worker is inside a listener call, so a listener that never blocks is served by
one or two tasks, not a task per batch, and one that blocks gets up to
``max_concurrency`` calls at once. A plain function is handed a run of batches per
worker-thread hop, as many as take about ``PLAIN_RUN_BUDGET_S`` of its time (judged by
its recent calls): a call that blocks holds up the rest of its run, a few ms' worth.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable
from typing import Any

import anyio
import anyio.lowlevel

from producer._consume.decisions import ConsumeStatus, expired, settle
from producer._consume.message import ReceivedMessage
from producer._consume.process_queue import ProcessQueue
from producer._remoting.consumer_requests import MessageModel
from producer._remoting.retry_topics import is_dead_letter
from producer.consumer._consumption import Consumption
from producer.consumer._listener import ConsumeContext, ListenerCall, Verdict
from producer.consumer._telemetry import tracing
from producer.errors import ProducerError

log = logging.getLogger("producer.consumer")
SUCCESS = ConsumeStatus.SUCCESS
EXPIRED_DELAY_LEVEL = 3  # cleanExpiredMsg's sendMessageBack(msg, 3)
YIELD_EVERY = 32  # batches a worker consumes before it lets other tasks run
PLAIN_RUN_MAX = 64  # batches of one worker-thread hop, at most ...
PLAIN_RUN_BUDGET_S = 0.002  # ... and about this much listener time (one call: unknown)

Work = tuple[ProcessQueue, list[ReceivedMessage]]


class ConcurrentConsumption(Consumption):
    """Runs the listener with bounded concurrency and settles each batch."""

    def __init__(self, call: ListenerCall, **parts: Any) -> None:
        super().__init__(call, **parts)
        self._pending: deque[Work] = deque()
        self._workers = 0
        self._busy = 0  # workers inside a listener call

    def submit(self, pq: ProcessQueue, messages: list[ReceivedMessage]) -> None:
        size = self.options.consume_batch_size
        good = [m for m in messages if m.undecodable is None]
        batches = [good[start : start + size] for start in range(0, len(good), size)]
        # alone: an undecodable message's failure must not drag its neighbours along
        batches += [[m] for m in messages if m.undecodable is not None]
        for batch in batches:
            self._tasks.enter()
            self._pending.append((pq, batch))
        self._staff()

    def _staff(self) -> None:
        """A worker more, if batches wait and every worker is inside a listener call."""
        if (
            self._pending
            and self._workers == self._busy
            and self._workers < self.options.max_concurrency
        ):
            self._workers += 1
            self.tg.start_soon(self._work)

    async def _work(self) -> None:
        try:
            async with self._call.slot:
                since_yield = 0
                while self._pending:
                    run = self._take()
                    self._busy += 1
                    self._staff()  # the listener may block: another worker takes the rest
                    try:
                        await self._consume_run(run)
                    finally:
                        self._busy -= 1
                    since_yield += len(run)
                    if since_yield >= YIELD_EVERY:  # pulls and timers run in between
                        since_yield = 0
                        await anyio.lowlevel.checkpoint()
        finally:
            self._workers -= 1

    def _take(self) -> list[Work]:
        if self._call.is_async or tracing():
            count = 1  # one at a time: a call that blocks holds up no other batch
        else:
            # before any call is timed, a run of one
            seconds = self._call.plain_call_s or PLAIN_RUN_BUDGET_S
            count = max(1, min(PLAIN_RUN_MAX, int(PLAIN_RUN_BUDGET_S / max(seconds, 1e-7))))
        pending = self._pending
        return [pending.popleft() for _ in range(min(count, len(pending)))]

    async def _consume_run(self, run: list[Work]) -> None:
        if self._call.is_async or tracing():
            for pq, batch in run:
                try:
                    if not pq.dropped:
                        await self._consume(pq, batch)
                finally:
                    self._tasks.leave()
            return
        try:
            await self._consume_plain(run)
        finally:
            for _ in run:
                self._tasks.leave()

    async def _consume_plain(self, run: list[Work]) -> None:
        """One worker-thread hop for the run's batches, then each is settled in turn."""
        calls = []
        for pq, batch in run:
            if not pq.dropped:
                fresh, repeated = self._call.split(batch, self._now_ms())
                calls.append((pq, fresh, repeated, ConsumeContext(pq.queue)))
        called = [(fresh, context) for _, fresh, _, context in calls if fresh]
        verdicts = await self._call.run_plain(called, self._now_ms()) if called else []
        answers = iter(verdicts)
        for pq, fresh, repeated, context in calls:
            verdict = next(answers) if fresh else Verdict(SUCCESS)
            await self._settle(pq, fresh, repeated, verdict, context)

    async def _consume(self, pq: ProcessQueue, batch: list[ReceivedMessage]) -> None:
        fresh, repeated = self._call.split(batch, self._now_ms())
        context = ConsumeContext(pq.queue)
        if fresh:
            verdict = await self._call.held(fresh, context, self._now_ms())
        else:
            verdict = Verdict(SUCCESS)
        await self._settle(pq, fresh, repeated, verdict, context)

    async def _settle(
        self,
        pq: ProcessQueue,
        fresh: list[ReceivedMessage],
        repeated: list[ReceivedMessage],
        verdict: Verdict,
        context: ConsumeContext,
    ) -> None:
        if pq.dropped:  # given up meanwhile: another member owns it now
            log.info("%s was dropped while consuming; its result is discarded", pq.queue)
            return
        outcome = settle(verdict.status, fresh, context.ack_index)
        self._call.remember(outcome.done, self._now_ms())
        self.consumed += len(outcome.done)
        settled = [*outcome.done, *repeated]
        unsent: list[ReceivedMessage] = []
        if self.options.model is MessageModel.BROADCASTING:
            settled += outcome.failed  # broadcasting never retries (as Java)
            for message in outcome.failed:
                log.warning("broadcast message %s failed and is dropped", message.msg_id)
            self._call.telemetry.count(pq.queue.topic, "dropped", len(outcome.failed))
        else:
            policy = self.options.retry_policy
            for message in outcome.failed:
                level = context.delay_level or policy.delay_level(
                    verdict.error, message.reconsume_times
                )
                if await self._send_back(message, level):
                    settled.append(message)
                else:
                    unsent.append(message)
        offset = pq.remove(settled)
        if offset >= 0 and not pq.dropped:
            self.offsets.update(pq.queue, offset, increase_only=True)
        if unsent:
            for message in unsent:
                message.reconsume_times += 1
            self._tasks.enter()
            self.tg.start_soon(self._again, pq, unsent, self.options.local_retry_delay_ms)

    async def _again(self, pq: ProcessQueue, batch: list[ReceivedMessage], delay_ms: float) -> None:
        """Neither send-back worked: the batch is consumed here again after a pause."""
        try:
            await anyio.sleep(delay_ms / 1000.0)
            if not pq.dropped:
                self.submit(pq, batch)
        finally:
            self._tasks.leave()

    async def sweep_expired(self, pqs: Iterable[ProcessQueue]) -> None:
        """Send back messages whose listener call has run longer than ``consume_timeout_ms``
        (level 3, as Java): the queue's offset can move on. The call may still finish, and
        its message then arrives twice."""
        now, timeout = self._now_ms(), self.options.consume_timeout_ms
        for pq in list(pqs):
            for message in expired(pq, now, timeout):
                log.warning("%s: consumed for over %.0f ms; sent back", message.msg_id, timeout)
                if pq.dropped or not await self._send_back(message, EXPIRED_DELAY_LEVEL):
                    continue
                offset = pq.remove([message])
                if offset >= 0:
                    self.offsets.update(pq.queue, offset, increase_only=True)

    async def _send_back(self, message: ReceivedMessage, delay_level: int) -> bool:
        """CONSUMER_SEND_MSG_BACK; if that fails, the fallback send; ``False`` if both fail."""
        max_times = self.options.max_reconsume_times
        try:
            await self.api.send_back(message, delay_level, max_times)
            self._sent(message, delay_level)
            return True
        except ProducerError as exc:
            log.warning(
                "send-back of %s failed (%s); trying %%RETRY%% directly", message.msg_id, exc
            )
        try:
            await self.api.send_to_retry_topic(
                message, max_times, reconsume_times=message.reconsume_times + 1
            )
            self._sent(message, delay_level)
            return True
        except ProducerError as exc:
            log.warning(
                "could not send %s back (%s); consuming it again locally in %.0f ms",
                message.msg_id,
                exc,
                self.options.local_retry_delay_ms,
            )
            return False

    def _sent(self, message: ReceivedMessage, delay_level: int) -> None:
        """Counted as the broker will treat it: a retry, or (level -1, or out of attempts)
        a dead letter."""
        self.sent_back += 1
        telemetry = self._call.telemetry
        if is_dead_letter(message.reconsume_times, self.options.max_reconsume_times, delay_level):
            telemetry.dead_letter(message.topic)
        else:
            telemetry.sent_back(message.topic)
            telemetry.count(message.topic, "retried", 1)
