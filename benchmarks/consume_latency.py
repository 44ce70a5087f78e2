"""Produce-to-consume latency at a steady rate: born timestamp to listener entry.

``python -m benchmarks.consume_latency [--rates 200,5000] [--seconds 10] [--rounds 2]``

A dev cluster (one broker, 4 queues, the ordinary broker that holds pulls) runs in its own
process, and so does a producer sending 200 B messages at a steady ``--rate`` (a send
every ``1/rate`` s, on a schedule that does not drift; ``send_async``). In this process a
consumer measures, for each message, the wall clock at arrival minus the message's
``bornTimestamp`` (both this machine's clock, ms resolution):

* ``sdk``  - a ``PushConsumer`` with an ``async def`` listener, ``consume_batch_size=1``
  (the time is taken on entering the listener);
* ``raw``  - one long-polled PULL_MESSAGE in flight per queue on a bare asyncio protocol,
  the time taken when the answer's bytes arrive (what a client that did nothing else
  could see: the broker's hold-and-wake plus the network).

The first second of each window is dropped (connections, routes, rebalance). Modes
alternate within each round; the table gives p50/p99/p999/max per rate and mode, with
the spread over rounds, and ``uptime``'s load average beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import struct
import subprocess
import sys
import time
from collections import deque

from benchmarks import _common as common
from benchmarks._cluster import ClusterProcess
from benchmarks._raw_protocol import RawClientProtocol, whole_frames
from producer import Message, Producer
from producer._remoting.consumer_requests import PullParams, pull_request
from producer._transport import parse_address
from producer._types.message import MessageQueue
from producer.consumer import ConsumeStatus, PullConsumer, PushConsumer, ReceivedMessage

TOPIC = "LatencyTopic"
QUEUES = 4
WARMUP_S = 1.0
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_QUEUE_OFFSET_AT = 20  # QUEUEOFFSET within a stored record
_BORN_AT = 40  # BORNTIMESTAMP: after size, magic, crc, queue, flag, 2 offsets, sysflag


def _now_ms() -> float:
    return time.time() * 1000.0


# -- the producer process ---------------------------------------------------------------


async def produce(namesrv: str, rate: float, seconds: float) -> None:
    body = b"x" * 200
    async with Producer("latency-producer", namesrv) as producer:
        await producer.send(Message(TOPIC, body))  # the route and connection, first
        start = time.perf_counter()
        for n in range(int(rate * seconds)):
            delay = start + n / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            producer.send_async(Message(TOPIC, body))
        await producer.flush()


# -- consumers ----------------------------------------------------------------------------


class _LongPoll(RawClientProtocol):
    client = "latency puller"

    def __init__(
        self, group: str, queue: MessageQueue, offset: int, out: list[float], ignore_before: float
    ) -> None:
        super().__init__()
        self.group, self.queue, self.offset, self.out = group, queue, offset, out
        self.ignore_before = ignore_before
        self._buffer = bytearray()
        self._opaque = 0
        self.outstanding: deque[int] = deque()

    def in_flight(self) -> int:
        return len(self.outstanding)

    def fill(self) -> None:
        assert self._transport is not None
        if self.running and not self.outstanding:
            params = PullParams(
                self.group,
                self.queue,
                self.offset,
                32,
                0,
                15_000,
                0,
                commit=False,
                suspend=True,
                expression="*",
            )
            request = pull_request(params)
            self._opaque += 1
            request.opaque = self._opaque
            self._transport.writelines(request.frame_parts())
            self.outstanding.append(self.offset)

    def data_received(self, data: bytes) -> None:
        now = _now_ms()
        buffer = self._buffer
        buffer += data
        spans, used = whole_frames(buffer)
        for start, end in spans:
            self._records(buffer, start, end, now)
            self.outstanding.popleft()
        if used:
            del buffer[:used]
        self.fill()

    def _records(self, payload: bytearray, start: int, end: int, now: float) -> None:
        pos = start
        while end - pos >= _BORN_AT + 8:
            (record_size,) = _INT32.unpack_from(payload, pos)
            if record_size <= 0:
                break
            (offset,) = _INT64.unpack_from(payload, pos + _QUEUE_OFFSET_AT)
            (born,) = _INT64.unpack_from(payload, pos + _BORN_AT)
            if born >= self.ignore_before:
                self.out.append(now - born)
            self.offset = offset + 1
            pos += record_size


async def raw_window(
    cluster: ClusterProcess, group: str, seconds: float, feed: subprocess.Popen[bytes]
) -> list[float]:
    latencies: list[float] = []
    ignore_before = _now_ms() + WARMUP_S * 1000
    loop = asyncio.get_running_loop()
    ((broker, addr),) = cluster.brokers.items()
    queues = [MessageQueue(TOPIC, broker, queue_id) for queue_id in range(QUEUES)]
    async with PullConsumer("latency-ends", cluster.namesrv) as ends_reader:
        ends = await ends_reader.end_offsets(queues)  # start at the end: no history
    protocols = []
    host, port = parse_address(addr)
    for queue, offset in ends.items():
        protocol = _LongPoll(group, queue, offset, latencies, ignore_before)
        await loop.create_connection(lambda p=protocol: p, host, port)  # type: ignore[misc]
        protocol.running = True
        protocol.fill()
        protocols.append(protocol)
    await _until_exit(feed, seconds)
    for protocol in protocols:  # a held pull is never answered: drop it with the socket
        protocol.running = False
        if not protocol.drained.done():
            protocol.drained.set_result(None)
        protocol.close()
    return latencies


async def _until_exit(feed: subprocess.Popen[bytes], seconds: float) -> None:
    # The feed is another process: wait for it on a thread, bounded.
    await asyncio.to_thread(feed.wait, seconds + 30)
    await asyncio.sleep(0.5)  # the last messages' way through


def _feed(namesrv: str, rate: float, seconds: float) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "benchmarks.consume_latency", "--produce", namesrv]
    command += ["--rate-one", str(rate), "--seconds", str(seconds)]
    return subprocess.Popen(command)


def _quantiles(values: list[float]) -> dict[str, float]:
    values = sorted(values)

    def q(p: float) -> float:
        return values[min(len(values) - 1, int(p * len(values)))]

    return {"n": len(values), "p50": q(0.5), "p99": q(0.99), "p999": q(0.999), "max": values[-1]}


def _fmt(rounds: list[dict[str, float]], key: str) -> str:
    values = [r[key] for r in rounds]
    return f"{statistics.median(values):.1f} ({min(values):.0f}-{max(values):.0f})"


async def run(args: argparse.Namespace) -> None:
    with ClusterProcess(brokers=1, topics={TOPIC: QUEUES}, sink=False) as cluster:
        for rate in args.rates:
            results: dict[str, list[dict[str, float]]] = {"sdk": [], "raw": []}
            for n in range(args.rounds):
                for mode in ("sdk", "raw") if n % 2 == 0 else ("raw", "sdk"):
                    group = f"latency-{mode}-{rate}-{n}-{os.getpid()}"
                    found = await _one(cluster, mode, group, rate, args.seconds)
                    results[mode].append(_quantiles(found))
            load = os.getloadavg()[0]
            print(f"{rate:g} msg/s, {args.seconds:g} s x {args.rounds} rounds, load {load:.1f}:")
            for mode, rounds in results.items():
                cells = "  ".join(f"{k} {_fmt(rounds, k)}" for k in ("p50", "p99", "p999", "max"))
                count = int(statistics.median(r["n"] for r in rounds))
                print(f"  {mode:<4} ms: {cells}   (n {count})")


async def _one(
    cluster: ClusterProcess, mode: str, group: str, rate: float, seconds: float
) -> list[float]:
    if mode == "sdk":
        # the consumer first (rebalanced, pulls held), then the feed
        latencies: list[float] = []
        ignore_before = _now_ms() + WARMUP_S * 1000

        async def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
            now = _now_ms()
            for m in messages:
                if m.born_timestamp >= ignore_before:
                    latencies.append(now - m.born_timestamp)
            return ConsumeStatus.SUCCESS

        consumer = PushConsumer(group, cluster.namesrv, listener=listener, consume_from="last")
        consumer.subscribe(TOPIC)
        async with consumer:
            await asyncio.sleep(1.0)
            await _until_exit(_feed(cluster.namesrv, rate, seconds), seconds)
        return latencies
    return await raw_window(cluster, group, seconds, _feed(cluster.namesrv, rate, seconds))


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.consume_latency", description=__doc__
    )
    parser.add_argument("--rates", type=common.int_list, default=[200, 5000])
    parser.add_argument("--seconds", type=common.positive_float, default=10.0)
    parser.add_argument("--rounds", type=common.positive_int, default=2)
    parser.add_argument("--quick", action="store_true", help="one round of 4 s")
    parser.add_argument("--produce", metavar="NAMESRV", help=argparse.SUPPRESS)
    parser.add_argument("--rate-one", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.produce:
        asyncio.run(produce(args.produce, args.rate_one, args.seconds))
        return
    if args.quick:
        args.rounds, args.seconds = 1, 4.0
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
