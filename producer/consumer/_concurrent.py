"""Concurrent consumption (``ConsumeMessageConcurrentlyService``): batches of a queue
run in parallel; each batch's outcome settles its messages, and failures are sent back to
the broker for a delayed retry through ``%RETRY%<group>`` (CONSUMER.md 2.6, 2.7)."""

from __future__ import annotations

import logging
from collections.abc import Iterable

import anyio

from producer._consume.decisions import ConsumeStatus, expired, settle
from producer._consume.message import ReceivedMessage
from producer._consume.process_queue import ProcessQueue
from producer._remoting.consumer_requests import MessageModel
from producer.consumer._consumption import Consumption
from producer.consumer._listener import ConsumeContext, Verdict
from producer.errors import ProducerError

log = logging.getLogger("producer.consumer")
SUCCESS = ConsumeStatus.SUCCESS
EXPIRED_DELAY_LEVEL = 3  # cleanExpiredMsg's sendMessageBack(msg, 3)


class ConcurrentConsumption(Consumption):
    """Runs the listener with bounded concurrency and settles each batch."""

    def submit(self, pq: ProcessQueue, messages: list[ReceivedMessage]) -> None:
        size = self.options.consume_batch_size
        good = [m for m in messages if m.undecodable is None]
        for start in range(0, len(good), size):
            self._start(pq, good[start : start + size])
        for message in messages:  # alone: its failure must not drag its neighbours along
            if message.undecodable is not None:
                self._start(pq, [message])

    def _start(self, pq: ProcessQueue, batch: list[ReceivedMessage], delay_ms: float = 0) -> None:
        self._tasks.enter()
        self.tg.start_soon(self._run, pq, batch, delay_ms)

    async def _run(self, pq: ProcessQueue, batch: list[ReceivedMessage], delay_ms: float) -> None:
        try:
            if delay_ms:
                await anyio.sleep(delay_ms / 1000.0)
            if not pq.dropped:
                await self._consume(pq, batch)
        finally:
            self._tasks.leave()

    async def _consume(self, pq: ProcessQueue, batch: list[ReceivedMessage]) -> None:
        fresh, repeated = self._call.split(batch, self._now_ms())
        context = ConsumeContext(pq.queue)
        verdict = await self._call(fresh, context, self._now_ms()) if fresh else Verdict(SUCCESS)
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
            self._start(pq, unsent, self.options.local_retry_delay_ms)

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
        if delay_level < 0 or message.reconsume_times >= self.options.max_reconsume_times:
            telemetry.dead_letter(message.topic)
        else:
            telemetry.sent_back(message.topic)
            telemetry.count(message.topic, "retried", 1)
