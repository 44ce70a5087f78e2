"""Closed-loop SDK loads for the throughput and memory benchmarks.

Each load runs until :meth:`stop` and updates a :class:`~benchmarks._meter.Counter`:

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
    def __init__(self, producer: Producer, message: Message, concurrency: int) -> None:
        self.producer = producer
        self.message = message
        self.concurrency = concurrency
        self.counter = Counter()
        self._running = False
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self._running = True
        self._tasks = [asyncio.create_task(self._worker()) for _ in range(self.concurrency)]

    async def stop(self) -> None:
        self._running = False
        await asyncio.gather(*self._tasks)
        self._tasks = []

    async def _worker(self) -> None:
        producer, message, counter = self.producer, self.message, self.counter
        perf = time.perf_counter
        while self._running:
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
        while self._running:
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

    def __init__(self, producer: Producer, message: Message, window: int) -> None:
        self.producer = producer
        self.message = message
        self.window = window
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
        if self._task is not None:
            await self._task
            self._task = None

    async def _feed(self) -> None:
        producer, message, window = self.producer, self.message, self.window
        perf = time.perf_counter
        ok, failed = self._ok, self._failed
        while self._running:
            while self.outstanding < window:
                callback = functools.partial(ok, perf())
                producer.send_async(message, on_success=callback, on_exception=failed)
                self.outstanding += 1
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
