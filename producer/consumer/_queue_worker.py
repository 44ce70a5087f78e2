"""One assigned queue's pull loop (``DefaultMQPushConsumerImpl.pullMessage``).

It keeps a PULL_MESSAGE in flight (long-polled by the broker), holds what arrives in
the queue's :class:`ProcessQueue`, and hands it to consumption (concurrent or orderly),
which settles messages and moves the offset - never past a message in flight
(docs/consuming.md 2.4-2.7). An orderly queue is pulled only while the broker's lock is ours.

The pull pipeline (docs/consuming.md 2.13): when a FOUND answer arrives, the next pull is
sent at once from its ``nextBeginOffset`` (:class:`PullAhead`), before the answer is
decoded, held and handed over - if flow control would let that pull go with the answer's
messages counted as held already (asyncio; on trio the pull follows the hand-over). So
the broker reads batch n+1 while the client decodes and consumes batch n, and the process
queue still holds no more than Java's flow control lets it (2.4). Each step takes one
answer, in offset order: a queue's messages are held and handed over in the order they
were stored. A queue dropped or stopped abandons the pull sent ahead, and an answer that
arrives for a dropped queue is not held.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

import anyio

from producer._consume.decisions import flow_blocked
from producer._consume.offsets import OffsetTable
from producer._consume.process_queue import ProcessQueue
from producer._remoting.consumer_requests import MessageModel, PullParams, PullResult, PullStatus
from producer._remoting.subscription import Subscription
from producer._types.consumer.received import ReceivedMessage
from producer.consumer._broker_api import BrokerApi
from producer.consumer._options import ConsumerOptions
from producer.consumer._pull_ahead import PullAhead
from producer.consumer._pull_step import (
    PULL_RPC_MARGIN_MS,
    Answer,
    PullRequest,
    pull_params,
    read_answer,
)
from producer.errors import ProducerError

log = logging.getLogger("producer.consumer")


class ConsumptionPort(Protocol):
    """What a queue's pull loop hands its messages to: concurrent or orderly."""

    def submit(self, pq: ProcessQueue, messages: list[ReceivedMessage]) -> None: ...


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
        consumption: ConsumptionPort,
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
        self._ask = PullRequest(
            group=api.group,
            max_messages=options.pull_batch_size,
            suspend_ms=options.suspend_timeout_ms,
            request_timeout_ms=options.suspend_timeout_ms + PULL_RPC_MARGIN_MS,
            suspend=True,  # always long-polled, as Java's push consumer
            namespace=api.namespace,
            codecs=options.body_codecs,
            carry_subscription=False,  # the one our heartbeats registered (sub_version)
            commit=options.model is MessageModel.CLUSTERING,
        )
        self.broker_max_offset = -1  # the queue's max offset, as of the last pull
        self.flow_waits = 0  # pulls held back by flow control (each waits its delay)
        self._needs_lock = options.orderly and options.model is MessageModel.CLUSTERING

    def lag(self) -> int:
        """Messages in the queue not consumed yet (0 before the first pull)."""
        if self.broker_max_offset < 0:
            return 0
        committed = self.offsets.read(self.pq.queue)
        return max(
            0, self.broker_max_offset - (self.next_offset if committed is None else committed)
        )

    def __repr__(self) -> str:
        return f"QueueWorker({self.pq!r}, next={self.next_offset})"

    def stop(self) -> None:
        self.scope.cancel()

    async def run(self) -> None:
        ahead: PullAhead | None = None
        with self.scope:
            try:
                while not self.pq.dropped:
                    ahead = await self._step(ahead)
            finally:
                if ahead is not None:  # dropped or stopped: its answer is not wanted
                    ahead.cancel()

    async def _step(self, ahead: PullAhead | None) -> PullAhead | None:
        """One answer taken (from the pull sent ahead, or from one sent now); returns the
        pull sent ahead of the next step, if any."""
        try:
            if ahead is not None:
                result = await ahead.result()
            elif await self._may_pull():
                result = await self.api.pull(self._params(self.next_offset), self._ask.timeout_ms)
            else:
                return None
        except ProducerError as exc:
            await self._pull_failed(exc)
            return None
        if self.pq.dropped:
            return None
        following = self._send_ahead(result) if result.status is PullStatus.FOUND else None
        try:
            answer = read_answer(self._ask, self.pq.queue, self.subscription, result)
        except ProducerError as exc:
            if following is not None:  # the offset stays: this answer is pulled again
                following.cancel()
            await self._pull_failed(exc)
            return None
        self._took(answer)
        return following

    async def _may_pull(self) -> bool:
        """Whether a pull may go now; if not, after the wait that says when to look again."""
        options = self.options
        if self._needs_lock and not self.pq.locked:
            log.debug("%s: not locked by the broker yet; pulling later", self.pq.queue)
            await anyio.sleep(options.pull_retry_delay_ms / 1000.0)
            return False
        blocked = flow_blocked(self.pq, options.flow, orderly=options.orderly)
        if blocked is not None:
            log.debug("%s: flow control (%s)", self.pq.queue, blocked)
            self.flow_waits += 1
            await anyio.sleep(options.flow_control_delay_ms / 1000.0)
            return False
        return True

    def _send_ahead(self, result: PullResult) -> PullAhead | None:
        """The next pull, sent before ``result`` is decoded if flow control would let it
        go with ``result``'s messages held already (docs/consuming.md 2.13)."""
        if self._needs_lock and not self.pq.locked:
            return None
        coming_last = result.next_begin_offset - 1
        if flow_blocked(
            self.pq,
            self.options.flow,
            orderly=self.options.orderly,
            coming=self._ask.max_messages,
            coming_bytes=len(result.body),
            coming_last=coming_last,
        ):
            return None  # the next step looks again once they are held
        try:
            params = self._params(result.next_begin_offset)
            return PullAhead.send(self.api, params, self._ask.timeout_ms)
        except ProducerError:  # no route to the broker now: the next step pulls as usual
            return None

    def _params(self, offset: int) -> PullParams:
        committed = self.offsets.read(self.pq.queue)
        return pull_params(
            self._ask,
            self.pq.queue,
            offset,
            self.subscription,
            commit_offset=committed or 0,
            sub_version=self._sub_version(),
        )

    async def _pull_failed(self, exc: ProducerError) -> None:
        if self.api.retry_at_once(self.pq.queue):  # its replica is down, another is not
            log.info("%s: pull failed (%s); pulling another replica now", self.pq.queue, exc)
            return
        log.debug("%s: pull failed (%s); retrying", self.pq.queue, exc)
        await anyio.sleep(self.options.pull_retry_delay_ms / 1000.0)

    def _took(self, answer: Answer) -> None:
        self.next_offset = answer.next_begin_offset
        self.broker_max_offset = answer.max_offset
        if answer.status is PullStatus.FOUND:
            self._found(answer.messages)
        elif answer.status is PullStatus.OFFSET_ILLEGAL:
            log.warning("%s: offset moved to %d", self.pq.queue, answer.next_begin_offset)
            self.offsets.update(self.pq.queue, answer.next_begin_offset, increase_only=False)
        elif not len(self.pq):
            # correctTagsOffset: nothing held, so skipped (filtered) offsets are consumed
            self.offsets.update(self.pq.queue, answer.next_begin_offset, increase_only=True)

    def _found(self, messages: list[ReceivedMessage]) -> None:
        """The user's topic and the subscription's tags only (the pull step saw to both,
        as Java's ``resetRetryAndNamespace`` and ``processPullResult``)."""
        for message in messages:
            if message.undecodable is not None:
                # Consumed as a failure (retried or dead-lettered), never as the message.
                log.error("%s: %s", self.pq.queue, message.undecodable)
        added = self.pq.put(messages)
        if added:
            self.consumption.submit(self.pq, added)
        elif not len(self.pq):
            self.offsets.update(self.pq.queue, self.next_offset, increase_only=True)
