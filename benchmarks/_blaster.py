"""The raw-frame blaster: how fast a broker answers when the client does nothing else.

SEND_MESSAGE_V2 (or SEND_BATCH_MESSAGE) frames are encoded up front with the producer's
own protocol code - the same bytes the SDK puts on the wire - then written over a plain
``asyncio.Protocol`` with a bounded window: ``window`` frames go out at once, and every
answer read lets one more go (all the frames one read frees go in one ``writelines``).
Answers are counted by their length prefix only; nothing is decoded.

Latency (``time.perf_counter``: loop clocks may tick in whole ms) is the time from a
frame's write to the read that completed its answer, matched
in order (a sink broker answers in order; a real broker mostly does).
"""

from __future__ import annotations

import asyncio
import functools
import struct
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import cycle

from benchmarks._meter import Counter
from benchmarks._raw_protocol import RawClientProtocol, stop_all
from producer._remoting.producer_requests import SendRequestFactory, build_send_request
from producer._remoting.uniq_key import UniqKeyGenerator
from producer._transport import parse_address
from producer._types.message import Message, MessageQueue

_INT32 = struct.Struct(">i")
DISTINCT_FRAMES = 4096


@dataclass(frozen=True)
class BlastTarget:
    """One broker: where it listens and which write queues of the topic it has."""

    address: str
    broker_name: str
    queue_ids: tuple[int, ...]


def build_frames(
    target: BlastTarget,
    *,
    topic: str,
    group: str,
    body_size: int,
    batch: int,
    wall_ms: int,
    count: int = DISTINCT_FRAMES,
) -> list[bytes]:
    """``count`` distinct frames (own opaque, own UNIQ_KEYs), cycling over the queues."""
    factory = SendRequestFactory(group)
    keys = UniqKeyGenerator("127.0.0.1", 4242, 0x5EED)
    body = b"x" * body_size
    frames = []
    for n in range(count):
        queue = MessageQueue(topic, target.broker_name, target.queue_ids[n % len(target.queue_ids)])
        if batch:
            messages = [Message(topic, body) for _ in range(batch)]
            prepared = factory.prepare_batch(messages, [keys.next_id(wall_ms) for _ in messages])
        else:
            prepared = factory.prepare(Message(topic, body), keys.next_id(wall_ms))
        request = build_send_request(prepared, queue, wall_ms)
        request.opaque = n + 1
        frames.append(b"".join(request.frame_parts()))
    return frames


class _BlastProtocol(RawClientProtocol):
    client = "blaster"

    def __init__(self, frames: Sequence[bytes], counter: Counter, per_frame: int) -> None:
        super().__init__()
        self._frames = cycle(frames)
        self._counter = counter
        self._per_frame = per_frame
        self._loop = asyncio.get_running_loop()
        self._buffer = bytearray()
        self._sent_at: deque[float] = deque()

    def in_flight(self) -> int:
        return len(self._sent_at)

    def send(self, n: int) -> None:
        assert self._transport is not None
        frames = self._frames
        self._transport.writelines([next(frames) for _ in range(n)])
        now = time.perf_counter()
        self._sent_at.extend([now] * n)

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        pos, size, replies = 0, len(buffer), 0
        while size - pos >= 4:
            (length,) = _INT32.unpack_from(buffer, pos)
            if size - pos - 4 < length:
                break
            pos += 4 + length
            replies += 1
        if pos:
            del buffer[:pos]
        if not replies:
            return
        now = time.perf_counter()
        sent_at = self._sent_at
        counter = self._counter
        if counter.recording:
            samples = counter.latencies
            for _ in range(replies):
                samples.append(now - sent_at.popleft())
        else:
            for _ in range(replies):
                sent_at.popleft()
        counter.done += replies * self._per_frame
        if self.running:
            self.send(replies)
        elif not sent_at and not self.drained.done():
            self.drained.set_result(None)


class Blaster:
    """``window`` frames in flight, split over one connection per target."""

    def __init__(
        self,
        targets: Sequence[BlastTarget],
        frames: dict[str, list[bytes]],
        *,
        window: int,
        per_frame: int = 1,
    ) -> None:
        if window < len(targets):
            targets = targets[:window]
        self.targets = list(targets)
        self.frames = frames
        self.window = window
        self.per_frame = per_frame
        self.counter = Counter()
        self._protocols: list[_BlastProtocol] = []

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        share, extra = divmod(self.window, len(self.targets))
        for i, target in enumerate(self.targets):
            host, port = parse_address(target.address)
            frames = self.frames[target.address]
            factory = functools.partial(_BlastProtocol, frames, self.counter, self.per_frame)
            _, protocol = await loop.create_connection(factory, host, port)
            self._protocols.append(protocol)
            protocol.running = True
            protocol.send(share + (1 if i < extra else 0))

    async def stop(self, timeout_s: float = 10.0) -> None:
        """Stop refilling, wait for the answers in flight, close."""
        await stop_all(self._protocols, timeout_s)
