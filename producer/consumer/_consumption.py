"""What concurrent and orderly consumption hold alike: the listener call, the broker API,
the offsets they move (one settle step), the options, the task group their tasks run in,
and counts."""

from __future__ import annotations

from collections.abc import Callable

from anyio.abc import TaskGroup

from producer._consume.decisions import settle_batch
from producer._consume.offsets import OffsetTable
from producer._consume.process_queue import ProcessQueue
from producer._lifecycle import Outstanding
from producer._types.consumer.received import ReceivedMessage
from producer.consumer._broker_api import BrokerApi
from producer.consumer._listener import ListenerCall
from producer.consumer._options import ConsumerOptions


class Consumption:
    """Base of :class:`ConcurrentConsumption` and :class:`OrderlyConsumption`."""

    def __init__(
        self,
        call: ListenerCall,
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
        self._call = call
        self._tasks = Outstanding()
        self.consumed = 0
        self.sent_back = 0  # sent back to the broker (orderly: dead letters via %RETRY%)

    @property
    def in_flight(self) -> int:
        return self._tasks.count

    async def wait_idle(self) -> None:
        await self._tasks.wait_idle()

    def submit(self, pq: ProcessQueue, messages: list[ReceivedMessage]) -> None:
        raise NotImplementedError

    def _commit(
        self, pq: ProcessQueue, settled: list[ReceivedMessage], *, increase_only: bool = True
    ) -> None:
        """``settled`` leave ``pq`` and its committable offset moves (:func:`settle_batch`);
        orderly consumption sets it (``increase_only=False``), as Java does."""
        offset = settle_batch(pq, settled)
        if offset is not None:
            self.offsets.update(pq.queue, offset, increase_only=increase_only)
