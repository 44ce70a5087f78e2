"""What the consume benchmark runs: one window (or one drain) of the raw puller or of a
``PushConsumer`` in one mode, with this process's CPU time per message.

CPU is ``time.process_time()`` (every thread of this process, the plain listeners'
worker threads included) over the messages counted in the same interval; the broker's
CPU is read from ``/proc`` when it is our child.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchmarks._common import CpuMeter
from benchmarks._puller import Puller
from producer._remoting.producer_requests import parse_route_response, route_request
from producer._remoting.route import master_addresses
from producer._transport import AsyncioConnector
from producer._types.message import MessageQueue
from producer.consumer import ConsumeStatus, PushConsumer, ReceivedMessage

_GROUPS = itertools.count(1)
POLL_S = 0.01  # how often a drain looks at the consumed count


@dataclass(frozen=True)
class Mode:
    """One way of consuming: the raw puller, or the SDK with a listener kind and batch."""

    listener: str  # "raw" | "plain" | "async"
    batch: int = 1
    orderly: bool = False

    @property
    def name(self) -> str:
        if self.listener == "raw":
            return "raw pull"
        return f"{'orderly' if self.orderly else 'concurrent'} {self.listener} b{self.batch}"


def fresh_group(tag: str) -> str:
    """A group no broker has an offset for, so it starts at offset 0."""
    return f"bench-consume-{os.getpid()}-{tag}-{next(_GROUPS)}"


def listener_of(kind: str) -> Callable[..., Any]:
    """A listener that touches each body and succeeds (the SDK's cost, not the user's)."""
    if kind == "async":

        async def async_listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
            for message in messages:
                len(message.body)
            return ConsumeStatus.SUCCESS

        return async_listener

    def plain_listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        for message in messages:
            len(message.body)
        return ConsumeStatus.SUCCESS

    return plain_listener


async def topic_queues(namesrv: str, topic: str) -> tuple[dict[str, str], list[MessageQueue]]:
    """The topic's master addresses and read queues, asked of the name server."""
    async with AsyncioConnector() as connector:
        connection = await connector.connect(namesrv.split(";")[0], 3000)
        route = parse_route_response(await connection.request(route_request(topic), 3000))
    queues = [
        MessageQueue(topic, data.broker_name, qid)
        for data in route.queue_datas
        for qid in range(data.read_queue_nums)
    ]
    return master_addresses(route), queues


def _reading(messages: int, seconds: float, cpu: float, server: CpuMeter | None) -> dict[str, Any]:
    return {
        "msgs_per_s": round(messages / seconds, 1) if seconds > 0 else 0.0,
        "messages": messages,
        "seconds": round(seconds, 3),
        "cpu_us_per_msg": round(cpu * 1e6 / messages, 2) if messages else None,
        "client_cpu": round(cpu / seconds, 3) if seconds > 0 else None,
        "server_cpu": server.read() if server is not None else None,
    }


async def window(
    count: Callable[[], int], warmup_s: float, duration_s: float, server_pid: int | None
) -> dict[str, Any]:
    """After ``warmup_s``, messages counted and CPU spent over ``duration_s``."""
    await asyncio.sleep(warmup_s)
    server = CpuMeter(server_pid) if server_pid else None
    n0, cpu0, t0 = count(), time.process_time(), time.perf_counter()
    await asyncio.sleep(duration_s)
    n1, cpu1, t1 = count(), time.process_time(), time.perf_counter()
    return _reading(n1 - n0, t1 - t0, cpu1 - cpu0, server)


async def drain(
    count: Callable[[], int], total: int, server_pid: int | None, timeout_s: float
) -> dict[str, Any]:
    """From now until ``total`` messages were counted (or the timeout)."""
    server = CpuMeter(server_pid) if server_pid else None
    cpu0, t0 = time.process_time(), time.perf_counter()
    deadline = t0 + timeout_s
    while count() < total and time.perf_counter() < deadline:  # noqa: ASYNC110 - a count
        await asyncio.sleep(POLL_S)
    return _reading(count(), time.perf_counter() - t0, time.process_time() - cpu0, server)


class Runs:
    """Everything one benchmark run measures against one broker side."""

    def __init__(self, args: Any, namesrv: str, server_pid: int | None) -> None:
        self.args, self.namesrv, self.server_pid = args, namesrv, server_pid
        self.addresses: dict[str, str] = {}
        self.queues: list[MessageQueue] = []
        self.total = 0  # drain mode: the backlog, as the raw puller found it

    async def prepare(self) -> None:
        self.addresses, self.queues = await topic_queues(self.namesrv, self.args.topic)

    async def raw(self, drained: bool) -> dict[str, Any]:
        puller = Puller(
            self.addresses,
            self.queues,
            group=fresh_group("raw"),
            depth=1 if drained else self.args.depth,
            until_empty=drained,
        )
        if drained:
            return await self._raw_drain(puller)
        await puller.start()
        try:
            return await window(
                lambda: puller.counter.done, self.args.warmup, self.args.duration, self.server_pid
            )
        finally:
            await puller.stop()

    async def _raw_drain(self, puller: Puller) -> dict[str, Any]:
        """Every queue pulled until empty; what it found is the backlog the SDK drains."""
        server = CpuMeter(self.server_pid) if self.server_pid else None
        cpu0, t0 = time.process_time(), time.perf_counter()
        await puller.start()
        try:
            await asyncio.wait_for(puller.drained(), self.args.drain_timeout)
        finally:
            await puller.stop()
        seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        self.total = puller.counter.done
        return _reading(puller.counter.done, seconds, cpu, server)

    def consumer(self, mode: Mode) -> PushConsumer:
        consumer = PushConsumer(
            fresh_group(mode.listener),
            self.namesrv,
            listener=listener_of(mode.listener),
            consume_from="first",
            orderly=mode.orderly,
            consume_batch_size=mode.batch,
        )
        consumer.subscribe(self.args.topic)
        return consumer

    async def sdk(self, mode: Mode, drained: bool) -> dict[str, Any]:
        consumer = self.consumer(mode)
        async with consumer:
            if drained:
                return await drain(
                    lambda: consumer.stats["consumed"],
                    self.total,
                    self.server_pid,
                    self.args.drain_timeout,
                )
            return await window(
                lambda: consumer.stats["consumed"],
                self.args.warmup,
                self.args.duration,
                self.server_pid,
            )
