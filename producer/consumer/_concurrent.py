"""Concurrent consumption (``ConsumeMessageConcurrentlyService``): batches of a queue
run in parallel; each batch's outcome settles its messages, and failures are sent back to
the broker for a delayed retry through ``%RETRY%<group>`` (docs/consuming.md 2.6, 2.7).

Batches wait in one queue for workers: tasks that each hold one of the listener's
``max_concurrency`` slots and take batches until none is left. A worker is started only
when every worker is inside a listener call, so a listener that never blocks is served by
one or two tasks, not a task per batch, and one that blocks gets up to
``max_concurrency`` calls at once. A worker takes a run of batches at a time, as many as
take about ``RUN_BUDGET_S`` of the listener's time (judged by its recent calls; a plain
function gets the whole run in one worker-thread hop), and settles the run's successes
once per queue: one removal from the process queue, one offset update, one count.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Iterable
from typing import Any

import anyio
import anyio.lowlevel

from producer._consume.decisions import DeliveryFate, NextStep, expired, sent_back_fate, settle
from producer._consume.process_queue import ProcessQueue
from producer._remoting.consumer_requests import MessageModel
from producer._types.consumer.context import ConsumeContext
from producer._types.consumer.received import ReceivedMessage
from producer._types.consumer.status import ConsumeStatus
from producer.consumer._consumption import Consumption
from producer.consumer._failure_log import log_failed
from producer.consumer._listener import ListenerCall, Verdict
from producer.errors import ProducerError

log = logging.getLogger("producer.consumer")
SUCCESS = ConsumeStatus.SUCCESS
EXPIRED_DELAY_LEVEL = 3  # cleanExpiredMsg's sendMessageBack(msg, 3)
YIELD_EVERY = 32  # batches a worker consumes before it lets other tasks run
NOT_CALLED = Verdict(SUCCESS)  # a batch the guard held back whole: nothing to consume
AGAIN_HERE = NextStep.AGAIN_HERE

Work = tuple[ProcessQueue, list[ReceivedMessage]]
# One batch of a run: its queue, what the listener got, what the guard held back, context.
Called = tuple[ProcessQueue, list[ReceivedMessage], list[ReceivedMessage], ConsumeContext]


class Successes:
    """Batches of a run that succeeded whole, settled together per queue: one removal
    from the process queue, one offset update, one count (docs/consuming.md 2.5: the
    offset is still the smallest held, so it never passes a message in flight)."""

    __slots__ = ("_by_queue",)

    def __init__(self) -> None:
        self._by_queue: dict[ProcessQueue, tuple[list[ReceivedMessage], list[ReceivedMessage]]]
        self._by_queue = {}

    def add(
        self,
        pq: ProcessQueue,
        fresh: list[ReceivedMessage],
        repeated: list[ReceivedMessage],
        verdict: Verdict,
        context: ConsumeContext,
    ) -> bool:
        """Held for :meth:`settle` if the batch succeeded whole; ``False`` if it needs
        settling of its own (a failure, an ``ack_index``, a queue dropped meanwhile)."""
        if verdict.status is not SUCCESS or context.ack_index is not None or pq.dropped:
            return False
        consumed, settled = self._by_queue.setdefault(pq, ([], []))
        consumed += fresh
        settled += fresh
        settled += repeated
        return True

    def take(self) -> list[tuple[ProcessQueue, list[ReceivedMessage], list[ReceivedMessage]]]:
        """Per queue: the messages consumed, and those to settle (the guard's too); then
        nothing is held here."""
        taken = [(pq, consumed, settled) for pq, (consumed, settled) in self._by_queue.items()]
        self._by_queue.clear()
        return taken


class ConcurrentConsumption(Consumption):
    """Runs the listener with bounded concurrency and settles each batch."""

    def __init__(self, call: ListenerCall, **parts: Any) -> None:
        super().__init__(call, **parts)
        self._pending: deque[Work] = deque()
        self._workers = 0
        self._busy = 0  # workers inside a listener call

    def submit(self, pq: ProcessQueue, messages: list[ReceivedMessage]) -> None:
        size = self.options.consume_batch_size
        good: list[ReceivedMessage] = []
        batches: list[list[ReceivedMessage]] = []
        for message in messages:  # one pass; the undecodable go alone, so that their
            if message.undecodable is None:  # failure drags no neighbour along
                good.append(message)
            else:
                batches.append([message])
        if size == 1:
            batches += [[message] for message in good]
        else:
            batches += [good[start : start + size] for start in range(0, len(good), size)]
        self._tasks.enter(len(batches))
        self._pending.extend([(pq, batch) for batch in batches])
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
                    self._call.telemetry.look()
                    if self._call.is_async or self._call.telemetry.tracing:
                        since_yield += await self._consume_each()
                    else:
                        since_yield += await self._consume_run(self._take())
                    if since_yield >= YIELD_EVERY:  # pulls and timers run in between
                        since_yield = 0
                        await anyio.lowlevel.checkpoint()
        finally:
            self._workers -= 1

    def _take(self) -> list[Work]:
        pending = self._pending
        count = self._call.run_length()
        return [pending.popleft() for _ in range(min(count, len(pending)))]

    async def _consume_run(self, run: list[Work]) -> int:
        """A plain listener's run of batches, marked busy (the listener may block: another
        worker takes the rest); returns how many."""
        self._busy += 1
        self._staff()
        try:
            await self._consume_plain(run)
        finally:
            self._busy -= 1
            for _ in run:
                self._tasks.leave()
        return len(run)

    async def _consume_plain(self, run: list[Work]) -> None:
        """One worker-thread hop for the run's calls, then their settlement."""
        now = self._now_ms()
        calls: list[Called] = []
        for pq, batch in run:
            if not pq.dropped:
                fresh, repeated = self._call.split(batch, now)
                calls.append((pq, fresh, repeated, ConsumeContext(pq.queue)))
        made = [(fresh, context) for _, fresh, _, context in calls if fresh]
        answers = iter(await self._call.run_plain(made, now) if made else [])
        done = Successes()
        for pq, fresh, repeated, context in calls:
            verdict = next(answers) if fresh else NOT_CALLED
            if not done.add(pq, fresh, repeated, verdict, context):
                await self._settle(pq, fresh, repeated, verdict, context)
        self._succeeded(done, now)

    async def _consume_each(self) -> int:
        """Batches taken one at a time while they last (up to ``YIELD_EVERY``): an async
        listener's call runs up to its first suspension, a traced one is awaited whole,
        and the successes of calls that did not suspend are settled together - before the
        worker waits on anything, so nothing finished stays held while it waits. Returns
        how many."""
        call, pending, done = self._call, self._pending, Successes()
        now, count = self._now_ms(), 0
        while pending and count < YIELD_EVERY:
            pq, batch = pending.popleft()
            count += 1
            try:
                if pq.dropped:
                    continue
                fresh, repeated = call.split(batch, now)
                context = ConsumeContext(pq.queue)
                verdict = call.call(fresh, context, now) if fresh else NOT_CALLED
                if not isinstance(verdict, Verdict):  # it waits: so does this worker
                    self._succeeded(done, now)
                    verdict = await self._busy_with(verdict)
                    now = self._now_ms()
                if not done.add(pq, fresh, repeated, verdict, context):
                    self._succeeded(done, now)
                    await self._settle(pq, fresh, repeated, verdict, context)
            finally:
                # out of flight now, though maybe not settled yet: close's wait_idle
                # wakes only once this task yields, and it settles before it yields
                self._tasks.leave()
        self._succeeded(done, now)
        return count

    def _succeeded(self, done: Successes, now: float) -> None:
        for pq, consumed, settled in done.take():
            self._call.remember(consumed, now)
            self.consumed += len(consumed)
            self._commit(pq, settled)

    async def _busy_with(self, rest: Awaitable[Verdict]) -> Verdict:
        self._busy += 1
        self._staff()  # another worker takes the batches waiting meanwhile
        try:
            return await rest
        finally:
            self._busy -= 1

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
        failed = outcome.failed
        fates = await self._fates(pq, failed, verdict, context)
        log_failed(self.api.group, failed, verdict.error, fates)
        settled, unsent = [*outcome.done, *repeated], list[ReceivedMessage]()
        for message, fate in zip(failed, fates, strict=True):
            (unsent if fate.step is AGAIN_HERE else settled).append(message)
        self._commit(pq, settled)
        if unsent:
            for message in unsent:
                message.reconsume_times += 1
            self._tasks.enter()
            self.tg.start_soon(self._again, pq, unsent, self.options.local_retry_delay_ms)

    async def _fates(
        self,
        pq: ProcessQueue,
        failed: list[ReceivedMessage],
        verdict: Verdict,
        context: ConsumeContext,
    ) -> list[DeliveryFate]:
        """What becomes of each failed message: broadcasting drops it (never retries, as
        Java); clustering sends it back at the listener's level, else the policy's."""
        if self.options.model is MessageModel.BROADCASTING:
            self._call.telemetry.count(pq.queue.topic, "dropped", len(failed))
            return [DeliveryFate(NextStep.DROPPED, m.reconsume_times + 1, None) for m in failed]
        policy = self.options.retry_policy
        fates = []
        for message in failed:
            level = context.delay_level or policy.delay_level(
                verdict.error, message.reconsume_times
            )
            fates.append(await self._send_back(message, level))
        return fates

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
                if pq.dropped:
                    continue
                if (await self._send_back(message, EXPIRED_DELAY_LEVEL)).step is not AGAIN_HERE:
                    self._commit(pq, [message])

    async def _send_back(self, message: ReceivedMessage, delay_level: int) -> DeliveryFate:
        """CONSUMER_SEND_MSG_BACK; if that fails, the fallback send; the message's fate:
        retried or dead-lettered by the broker, or (both failed) consumed again here."""
        max_times, count = self.options.max_reconsume_times, message.reconsume_times
        try:
            await self.api.send_back(message, delay_level, max_times)
            return self._sent(message, sent_back_fate(count, delay_level, max_times))
        except ProducerError as exc:
            log.warning(
                "send-back of %s failed (%s); trying %%RETRY%% directly", message.msg_id, exc
            )
        try:
            await self.api.send_to_retry_topic(message, max_times, reconsume_times=count + 1)
            fate = sent_back_fate(count, delay_level, max_times, resent=True)
            return self._sent(message, fate)
        except ProducerError as exc:
            log.warning("could not send %s to %%RETRY%% either (%s)", message.msg_id, exc)
        delay_ms = self.options.local_retry_delay_ms
        return DeliveryFate(AGAIN_HERE, count + 1, max_times + 1, delay_ms=delay_ms)

    def _sent(self, message: ReceivedMessage, fate: DeliveryFate) -> DeliveryFate:
        """Counted as the broker will treat it: a retry, or a dead letter."""
        self.sent_back += 1
        telemetry = self._call.telemetry
        if fate.step is NextStep.DEAD_LETTER:
            telemetry.dead_letter(message.topic)
        else:
            telemetry.sent_back(message.topic)
            telemetry.count(message.topic, "retried", 1)
        return fate
