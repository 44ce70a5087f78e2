"""Floors for one send at a time: what the rest of a lone send's cost is measured against.

Two measurements, each client CPU (``time.process_time()``) per send over ``--sends``
sends, one at a time (uvloop unless ``--loop asyncio``), against a sink broker in its own
process, each side's windows alternating with the other's:

* **await floor** (over the socket): a raw ``asyncio.Protocol`` that writes one
  pre-encoded SEND_MESSAGE_V2 frame and awaits a loop future its answer resolves - the
  blaster plus what ``await`` needs, nothing of the SDK - and the same with one
  ``call_soon`` more per send (what one more loop turn costs).
* **lone-send floor** (network out, :mod:`benchmarks._loopback`): the essential work of a
  lone send in one coroutine on the SDK's own pieces - prepare, router, request encoder,
  in-flight table, decoder, response parse, router record, ``SendResult`` - with no plan
  object, limiter, tracker or layers (not a correct send: no retries, no deadline, no
  cancellation rules), beside ``Producer.send`` in the same process, in alternating
  windows. The difference is what the layers and the retry state cost; the floor is what
  a rewrite of the path in Python could at best reach.
"""

from __future__ import annotations

import argparse
import asyncio
import struct
import time
from collections.abc import Awaitable, Callable
from typing import Any

from benchmarks import _common as common
from benchmarks import _loopback
from benchmarks._blaster import build_frames
from benchmarks._cluster import ClusterProcess
from benchmarks._raw_protocol import RawClientProtocol, stop_all
from benchmarks.throughput import fetch_targets
from latency_fault import choose_queue
from producer import Message, Producer, SendResult
from producer._remoting.producer_requests import build_send_request
from producer._remoting.send_header import parse_send_response
from producer._transport import parse_address

TOPIC = "BenchTopic"
GROUP = "bench-send-floor"
_INT32 = struct.Struct(">i")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.send_floor", description=__doc__)
    parser.add_argument(
        "--sends", type=common.positive_int, help="per window (20000; --quick: 5000)"
    )
    parser.add_argument("--windows", type=common.positive_int, help="per side (2; --quick: 1)")
    parser.add_argument("--quick", action="store_true", help="a short run (under a minute)")
    parser.add_argument("--body", type=common.positive_int, default=1024)
    parser.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop")
    return parser


class _AwaitingProtocol(RawClientProtocol):
    """One frame out, one loop future resolved by its answer."""

    client = "await floor"

    def __init__(self, extra_callback: bool) -> None:
        super().__init__()
        self._buffer = bytearray()
        self._waiter: asyncio.Future[None] | None = None
        self._extra_callback = extra_callback

    def in_flight(self) -> int:
        return 0 if self._waiter is None or self._waiter.done() else 1

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        (length,) = _INT32.unpack_from(self._buffer, 0)
        if len(self._buffer) >= 4 + length:
            del self._buffer[: 4 + length]
            assert self._waiter is not None
            self._waiter.set_result(None)

    def send(self, frame: bytes) -> asyncio.Future[None]:
        assert self._transport is not None
        loop = asyncio.get_running_loop()
        self._waiter = loop.create_future()
        self._transport.write(frame)
        if self._extra_callback:
            loop.call_soon(_nothing)
        return self._waiter


def _nothing() -> None:
    return None


def _cpu_us(sends: int, started: float) -> float:
    return round((time.process_time() - started) * 1e6 / sends, 1)


async def await_floor(namesrv: str, args: argparse.Namespace) -> dict[str, list[float]]:
    target = (await fetch_targets(namesrv, TOPIC))[0]
    frames = build_frames(
        target, topic=TOPIC, group=GROUP, body_size=args.body, batch=0, wall_ms=0, count=64
    )
    host, port = parse_address(target.address)
    loop = asyncio.get_running_loop()
    out: dict[str, list[float]] = {"await floor": [], "await floor + 1 callback": []}
    for _ in range(args.windows):
        for label, extra in (("await floor", False), ("await floor + 1 callback", True)):
            _, protocol = await loop.create_connection(
                lambda extra=extra: _AwaitingProtocol(extra), host, port
            )
            for n in range(args.sends // 5):  # warm-up
                await protocol.send(frames[n % len(frames)])
            started = time.process_time()
            for n in range(args.sends):
                await protocol.send(frames[n % len(frames)])
            out[label].append(_cpu_us(args.sends, started))
            await stop_all([protocol], 10.0)
    return out


def lone_send_floor(producer: Producer) -> Callable[[Message], Awaitable[SendResult]]:
    """The lone send's essential work on the producer's own pieces (see the module doc)."""
    running: Any = producer._running  # a benchmark of the internals
    sender = running.sender
    router, routes, clock, pool = sender.router, sender.routes, sender.clock, running.pool

    async def send(message: Message) -> SendResult:
        prepared = producer._prepared(message)
        route = routes.cached(prepared.topic)
        now = clock.monotonic_ms()
        queue = choose_queue(router, route.snapshot, last_broker=None, now_ms=int(now))
        connection = pool.open_connection(route.broker_addrs[queue.broker_name])
        request = build_send_request(prepared, queue, clock.wall_ms())
        router.on_dispatch(queue.broker_name, int(now))
        status, header = parse_send_response(await connection.start_request(request, 3000.0))
        router.on_complete(queue.broker_name)
        end = clock.monotonic_ms()
        router.record(queue.broker_name, end - now, isolation=False, now_ms=int(end))
        return SendResult(
            status, prepared.msg_id, header.msg_id, queue, header.queue_offset,
            header.region_id, header.trace_on, header.transaction_id, (),
            header.recall_handle,
        )  # fmt: skip

    return send


async def lone_floor(namesrv: str, args: argparse.Namespace) -> dict[str, list[float]]:
    message = Message(TOPIC, b"x" * args.body)
    out: dict[str, list[float]] = {"lone-send floor": [], "Producer.send": []}
    async with Producer(GROUP, namesrv=namesrv, batching=False) as producer:
        await producer.send(message)  # the route and a connection
        swapped = _loopback.short_circuit(producer)
        sides = (("lone-send floor", lone_send_floor(producer)), ("Producer.send", producer.send))
        for _ in range(args.windows):
            for label, send in sides:
                for _ in range(args.sends // 5):
                    await send(message)
                started = time.process_time()
                for _ in range(args.sends):
                    await send(message)
                out[label].append(_cpu_us(args.sends, started))
        _loopback.restore(swapped)
    return out


async def measure(namesrv: str, args: argparse.Namespace) -> dict[str, list[float]]:
    return {**await await_floor(namesrv, args), **await lone_floor(namesrv, args)}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.sends = args.sends or (5_000 if args.quick else 20_000)
    args.windows = args.windows or (1 if args.quick else 2)
    with ClusterProcess(brokers=1, topics={TOPIC: 4}, sink=True) as cluster:
        result = common.run(lambda: measure(cluster.namesrv, args), args.loop)
    print(f"client CPU us per send, one at a time, {args.windows} window(s) of {args.sends}")
    for label, values in result.items():
        print(f"{label:<26} {' '.join(f'{v:.1f}' for v in values)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
