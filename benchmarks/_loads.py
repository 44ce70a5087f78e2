"""Closed-loop SDK loads for the throughput and memory benchmarks.

Each load runs until :meth:`stop` (or, given ``limit``, until it has issued that many
sends: :meth:`finished` waits for them) and updates a :class:`~benchmarks._meter.Counter`:

* :class:`AwaitLoad` - ``concurrency`` tasks, each ``await producer.send(...)`` in a loop;
* :class:`PipelineLoad` - one task keeps ``window`` ``send_async`` futures outstanding;
* :class:`BatchLoad` - ``concurrency`` tasks, each ``await producer.send_batch(...)``.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Sequence

from benchmarks._meter import Counter
from producer import Message, Producer, SendResult
from producer.errors import ProducerError


class AwaitLoad:
    def __init__(
        self, producer: Producer, message: Message, concurrency: int, limit: int | None = None
    ) -> None:
        self.producer = producer
        self.message = message
        self.concurrency = concurrency
        self.counter = Counter()
        self.left = -1 if limit is None else limit  # sends still to issue; -1 = no limit
        self._running = False
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self._running = True
        self._tasks = [asyncio.create_task(self._worker()) for _ in range(self.concurrency)]

    async def stop(self) -> None:
        self._running = False
        await self.finished()

    async def finished(self) -> None:
        await asyncio.gather(*self._tasks)
        self._tasks = []

    def _take(self) -> bool:
        """Whether to issue one more send (and count it)."""
        if not self._running or self.left == 0:
            return False
        self.left -= 1
        return True

    async def _worker(self) -> None:
        producer, message, counter = self.producer, self.message, self.counter
        perf = time.perf_counter
        while self._take():
            started = perf()
            try:
                await producer.send(message)
            except ProducerError:
                counter.failed += 1
                continue
            if counter.recording:
                counter.latencies.append(perf() - started)
            counter.done += 1


class BatchLoad(AwaitLoad):
    def __init__(self, producer: Producer, messages: Sequence[Message], concurrency: int) -> None:
        super().__init__(producer, messages[0], concurrency)
        self.messages = list(messages)

    async def _worker(self) -> None:
        producer, messages, counter = self.producer, self.messages, self.counter
        size = len(messages)
        perf = time.perf_counter
        while self._take():
            started = perf()
            try:
                await producer.send_batch(messages)
            except ProducerError:
                counter.failed += size
                continue
            if counter.recording:
                counter.latencies.append(perf() - started)
            counter.done += size


class PipelineLoad:
    """``send_async`` with at most ``window`` outstanding; refills as answers arrive."""

    def __init__(
        self, producer: Producer, message: Message, window: int, limit: int | None = None
    ) -> None:
        self.producer = producer
        self.message = message
        self.window = window
        self.left = -1 if limit is None else limit  # sends still to issue; -1 = no limit
        self.counter = Counter()
        self.outstanding = 0
        self._running = False
        self._room = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._running = True
        self._task = asyncio.create_task(self._feed())

    async def stop(self) -> None:
        self._running = False
        self._room.set()
        await self.finished()

    async def finished(self) -> None:
        """Wait until the feeder is done and every send it issued has finished."""
        if self._task is not None:
            await self._task
            self._task = None

    async def _feed(self) -> None:
        producer, message, window = self.producer, self.message, self.window
        perf = time.perf_counter
        ok, failed = self._ok, self._failed
        while self._running and self.left:
            while self.outstanding < window and self.left:
                callback = functools.partial(ok, perf())
                producer.send_async(message, on_success=callback, on_exception=failed)
                self.outstanding += 1
                self.left -= 1
            self._room.clear()
            await self._room.wait()
        while self.outstanding:
            self._room.clear()
            await self._room.wait()

    def _ok(self, started: float, result: SendResult) -> None:
        counter = self.counter
        if counter.recording:
            counter.latencies.append(time.perf_counter() - started)
        counter.done += 1
        self.outstanding -= 1
        self._room.set()

    def _failed(self, error: ProducerError) -> None:
        self.counter.failed += 1
        self.outstanding -= 1
        self._room.set()
