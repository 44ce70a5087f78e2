"""The queues a push consumer holds, each with its pull worker: taking one (locked first
when orderly, then started from the offset ``consume_from`` picks), giving one up (the
batch in flight settled, the offset persisted, the lock released), and renewing or
releasing the broker's locks on all of them.

The consumer's rebalance decides *which* queues are its own; this module does what
holding or letting go of one takes (``RebalanceImpl.updateProcessQueueTableInRebalance``,
``removeUnnecessaryMessageQueue`` and ``computePullFromWhere`` in the Java client).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from producer._consume.decisions import StartFrom, start_from
from producer._consume.offsets import OffsetTable
from producer._consume.process_queue import ProcessQueue
from producer._remoting.consumer_requests import MessageModel
from producer._remoting.subscription import Subscription
from producer._types.message import MessageQueue
from producer.consumer._offset_stores import BrokerOffsets
from producer.consumer._options import ConsumerOptions
from producer.consumer._orderly import OrderlyConsumption, lock_queues
from producer.consumer._queue_worker import QueueWorker
from producer.consumer._running import StartedPush
from producer.errors import ProducerError

log = logging.getLogger("producer.consumer")


class HeldQueues:
    """A push consumer's queues and their workers (``workers``); ``starting`` are those
    taken whose pulls start after the broker learns the new subscription version."""

    def __init__(
        self,
        group: str,
        options: Callable[[], ConsumerOptions],
        offsets: OffsetTable,
        subscriptions: dict[str, Subscription],
        version: Callable[[str], int],
    ) -> None:
        self.group, self.offsets = group, offsets
        self._options = options  # read at each use: a consumer's options may be replaced
        self.subscriptions, self.version = subscriptions, version
        self.workers: dict[MessageQueue, QueueWorker] = {}
        self.starting: list[QueueWorker] = []

    @property
    def options(self) -> ConsumerOptions:
        """The consumer's options, as they are now."""
        return self._options()

    @property
    def needs_locks(self) -> bool:
        """Orderly clustering consumption holds a broker lock on each of its queues."""
        return self.options.orderly and self.options.model is MessageModel.CLUSTERING

    async def take(self, r: StartedPush, queue: MessageQueue) -> bool:
        """Hold ``queue`` (its worker starts later); False if it cannot be held yet."""
        pq = ProcessQueue(queue)
        try:
            if self.needs_locks:  # lock first: the offset is the last owner's final one
                await lock_queues(r.api, queue.broker_name, [pq], r.clock.monotonic_ms())
                if not pq.locked:
                    return False  # another member still holds it; the next rebalance retries
            offset = await self._start_offset(r, queue)
        except ProducerError as exc:
            log.info("%s: cannot start %s yet: %s", self.group, queue, exc)
            return False
        self.offsets.update(queue, offset, increase_only=False)
        worker = QueueWorker(
            pq,
            offset,
            subscription=self.subscriptions[queue.topic],
            sub_version=lambda: self.version(queue.topic),
            api=r.api,
            offsets=self.offsets,
            consumption=r.consumption,
            options=self.options,
        )
        self.workers[queue] = worker
        self.starting.append(worker)
        return True

    async def _start_offset(self, r: StartedPush, queue: MessageQueue) -> int:
        stored = await r.store.read(queue)
        where = start_from(stored, self.options.consume_from, queue.topic)
        if where is StartFrom.STORED:
            assert stored is not None
            return stored
        if where is StartFrom.ZERO:
            return 0
        if where is StartFrom.MAX_OFFSET:
            return await r.api.max_offset(queue)
        timestamp = self.options.consume_timestamp_ms or 0
        return await r.api.search_offset(queue, timestamp)

    async def give_up(self, r: StartedPush, queue: MessageQueue) -> None:
        """Stop pulling ``queue``; persist its offset once (another member takes it next).

        Orderly: first let the batch in flight settle (or keep the queue until the next
        rebalance), persist the offset with an answer, then release the broker's lock."""
        worker = self.workers[queue]
        consumption = r.consumption
        orderly = isinstance(consumption, OrderlyConsumption)
        if isinstance(consumption, OrderlyConsumption) and not await consumption.hand_over(
            worker.pq
        ):
            log.info("%s: %s is still consuming; handed over later", self.group, queue)
            return
        del self.workers[queue]
        worker.pq.dropped = True
        worker.stop()
        r.api.nodes.forget(queue)  # no longer ours: it does not keep us degraded
        offset = self.offsets.remove(queue)
        try:
            if offset is not None and isinstance(r.store, BrokerOffsets):
                await r.api.persist(queue, offset, oneway=not orderly)
            if self.needs_locks:
                await r.api.unlock(queue.broker_name, [queue])
        except ProducerError as exc:
            log.info("%s: hand-over of %s incomplete: %s", self.group, queue, exc)

    def _by_broker(self) -> dict[str, list[ProcessQueue]]:
        held: dict[str, list[ProcessQueue]] = {}
        for queue, worker in sorted(self.workers.items(), key=lambda item: str(item[0])):
            held.setdefault(queue.broker_name, []).append(worker.pq)
        return held

    async def lock_all(self, r: StartedPush) -> None:
        """``lockAll``: renew the lock of every held queue, broker by broker."""
        for broker, pqs in self._by_broker().items():
            try:
                await lock_queues(r.api, broker, pqs, r.clock.monotonic_ms())
            except ProducerError as exc:
                log.info("%s: locking queues on %s failed: %s", self.group, broker, exc)

    async def unlock_all(self, r: StartedPush) -> None:
        """``unlockAll`` at close: release every held queue's lock, waiting for answers."""
        for broker, pqs in self._by_broker().items():
            try:
                await r.api.unlock(broker, [pq.queue for pq in pqs], oneway=False)
            except ProducerError as exc:
                log.info("%s: unlocking queues on %s failed: %s", self.group, broker, exc)
