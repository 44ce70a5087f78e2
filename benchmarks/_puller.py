"""The raw-pull baseline: how fast a broker's records arrive when the client does nothing
else with them (the consume benchmark's limit, as the blaster is the send benchmark's).

One plain ``asyncio.Protocol`` connection per queue keeps ``depth`` PULL_MESSAGE frames in
flight (encoded with the consumer's own request code, so the bytes are the SDK's). A
broker answers one connection in order, so the n-th answer is the n-th pull. Records are
counted by walking their TOTALSIZE words; the last record's QUEUEOFFSET gives the next
offset. With ``depth > 1`` the next pulls are sent ahead at ``offset + max_messages``,
which is exact for the pull sink's endless backlog (a gap or overlap elsewhere only
re-counts or skips, so use ``depth=1`` against a real broker).
"""

from __future__ import annotations

import asyncio
import struct
from collections import deque
from collections.abc import Sequence

from benchmarks._raw_protocol import RawClientProtocol, stop_all, whole_frames
from producer._remoting.consumer_requests import PullParams, pull_request
from producer._transport import parse_address
from producer._types.message import MessageQueue

_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_QUEUE_OFFSET_AT = 20  # QUEUEOFFSET's byte within a record


class PullCount:
    """Records counted so far (all connections)."""

    __slots__ = ("done", "empty", "pulls")

    def __init__(self) -> None:
        self.done = 0
        self.pulls = 0
        self.empty = 0


def count_records(payload: bytes | bytearray | memoryview, start: int, end: int) -> tuple[int, int]:
    """(records, last QUEUEOFFSET or -1) of the pull body in ``payload[start:end]``."""
    count, last, pos = 0, -1, start
    while end - pos >= 28:
        (size,) = _INT32.unpack_from(payload, pos)
        if size <= 0:
            break
        (last,) = _INT64.unpack_from(payload, pos + _QUEUE_OFFSET_AT)
        pos += size
        count += 1
    return count, last


class _PullProtocol(RawClientProtocol):
    client = "puller"

    def __init__(
        self,
        group: str,
        queue: MessageQueue,
        offset: int,
        depth: int,
        counter: PullCount,
        until_empty: bool,
    ) -> None:
        super().__init__()
        self.group, self.queue, self.depth, self.counter = group, queue, depth, counter
        self.until_empty = until_empty  # drain mode: an empty answer ends this queue
        self.next_offset = offset  # the offset the next pull asks for
        self.outstanding: deque[int] = deque()  # offsets asked, in order
        self._buffer = bytearray()
        self._opaque = 0

    def in_flight(self) -> int:
        return len(self.outstanding)

    def fill(self) -> None:
        assert self._transport is not None
        while self.running and len(self.outstanding) < self.depth:
            params = PullParams(
                self.group,
                self.queue,
                self.next_offset,
                32,
                0,
                0,
                0,
                commit=False,
                suspend=False,
                expression="*",  # no heartbeat needed: the pull carries its subscription
            )
            request = pull_request(params)
            self._opaque += 1
            request.opaque = self._opaque
            self._transport.writelines(request.frame_parts())
            self.outstanding.append(self.next_offset)
            if self.depth > 1:
                self.next_offset += 32

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        spans, used = whole_frames(buffer)
        for start, end in spans:
            self._answered(*count_records(buffer, start, end))
        if used:
            del buffer[:used]
        if self.running:
            self.fill()
        elif not self.outstanding and not self.drained.done():
            self.drained.set_result(None)

    def _answered(self, found: int, last: int) -> None:
        self.outstanding.popleft()
        counter = self.counter
        counter.pulls += 1
        counter.done += found
        if not found:
            counter.empty += 1
            if self.until_empty:
                self.running = False
        elif self.depth == 1:
            self.next_offset = last + 1


class Puller:
    """``depth`` pulls in flight on each of ``queues`` (``addresses[broker_name]``)."""

    def __init__(
        self,
        addresses: dict[str, str],
        queues: Sequence[MessageQueue],
        *,
        group: str,
        depth: int = 2,
        start_offset: int = 0,
        until_empty: bool = False,
    ) -> None:
        self.addresses, self.queues, self.group = addresses, list(queues), group
        self.depth, self.start_offset, self.until_empty = depth, start_offset, until_empty
        self.counter = PullCount()
        self._protocols: list[_PullProtocol] = []

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        for queue in self.queues:
            host, port = parse_address(self.addresses[queue.broker_name])
            protocol = _PullProtocol(
                self.group, queue, self.start_offset, self.depth, self.counter, self.until_empty
            )
            await loop.create_connection(lambda p=protocol: p, host, port)  # type: ignore[misc]
            self._protocols.append(protocol)
            protocol.running = True
            protocol.fill()

    async def drained(self) -> None:
        """Until every queue came back empty (``until_empty``) and nothing is in flight."""
        await asyncio.gather(*(p.drained for p in self._protocols))

    async def stop(self, timeout_s: float = 10.0) -> None:
        """Stop asking, wait for the answers in flight, close."""
        await stop_all(self._protocols, timeout_s)
