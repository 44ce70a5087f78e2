"""One assigned queue's pull loop (``DefaultMQPushConsumerImpl.pullMessage``).

It keeps one PULL_MESSAGE in flight (long-polled by the broker), holds what arrives in
the queue's :class:`ProcessQueue`, and hands it to consumption (concurrent or orderly),
which settles messages and moves the offset - never past a message in flight
(docs/consuming.md 2.4-2.7). An orderly queue is pulled only while the broker's lock is ours.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

import anyio

from producer._consume.decisions import flow_blocked
from producer._consume.message import ReceivedMessage
from producer._consume.offsets import OffsetTable
from producer._consume.process_queue import ProcessQueue
from producer._remoting.consumer_requests import MessageModel, PullStatus
from producer._remoting.subscription import Subscription
from producer.consumer._broker_api import BrokerApi
from producer.consumer._options import ConsumerOptions
from producer.consumer._pull_step import PULL_RPC_MARGIN_MS, PullRequest, pull
from producer.errors import ProducerError

log = logging.getLogger("producer.consumer")


class Consumption(Protocol):
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
        with self.scope:
            while not self.pq.dropped:
                await self._step()

    async def _step(self) -> None:
        options = self.options
        if options.orderly and options.model is MessageModel.CLUSTERING and not self.pq.locked:
            log.debug("%s: not locked by the broker yet; pulling later", self.pq.queue)
            await anyio.sleep(options.pull_retry_delay_ms / 1000.0)
            return
        blocked = flow_blocked(self.pq, options.flow, orderly=options.orderly)
        if blocked is not None:
            log.debug("%s: flow control (%s)", self.pq.queue, blocked)
            await anyio.sleep(options.flow_control_delay_ms / 1000.0)
            return
        committed = self.offsets.read(self.pq.queue)
        try:
            answer = await pull(
                self.api,
                self._ask,
                self.pq.queue,
                self.next_offset,
                self.subscription,
                commit_offset=committed or 0,
                sub_version=self._sub_version(),
            )
        except ProducerError as exc:
            log.debug("%s: pull failed (%s); retrying", self.pq.queue, exc)
            await anyio.sleep(options.pull_retry_delay_ms / 1000.0)
            return
        if self.pq.dropped:
            return
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
