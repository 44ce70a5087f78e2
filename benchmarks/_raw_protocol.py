"""What every raw benchmark client's connection shares (the blaster's, the puller's,
send_floor's): the transport with Nagle off, a ``running`` switch for refilling, a
``drained`` future resolved once its answers are in (failed if the connection is lost
first), and stopping: no more requests, the ones in flight answered, closed."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import Sequence
from typing import cast

_INT32 = struct.Struct(">i")


class RawClientProtocol(asyncio.Protocol):
    #: Names the client in the error a lost connection gives ``drained``.
    client = "raw client"

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self.running = False  # refill as answers come
        self.drained: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.drained.done():
            self.drained.set_exception(ConnectionError(f"{self.client} connection lost: {exc!r}"))

    def in_flight(self) -> int:
        """Requests written and not answered yet."""
        raise NotImplementedError

    def stop_refilling(self) -> None:
        """No more requests; ``drained`` resolves once those in flight are answered."""
        self.running = False
        if not self.in_flight() and not self.drained.done():
            self.drained.set_result(None)

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()


def whole_frames(buffer: bytearray) -> tuple[list[tuple[int, int]], int]:
    """The whole frames at the front of ``buffer``: each one's body span ``(start, end)``
    (past its header) and how many bytes they take (the caller deletes them after use)."""
    spans: list[tuple[int, int]] = []
    pos, size = 0, len(buffer)
    while size - pos >= 8:
        (length,) = _INT32.unpack_from(buffer, pos)
        if size - pos - 4 < length:
            break
        (word,) = _INT32.unpack_from(buffer, pos + 4)
        spans.append((pos + 8 + (word & 0xFFFFFF), pos + 4 + length))
        pos += 4 + length
    return spans, pos


async def stop_all(protocols: Sequence[RawClientProtocol], timeout_s: float) -> None:
    """Stop refilling, wait (at most ``timeout_s``) for the answers in flight, close."""
    for protocol in protocols:
        protocol.stop_refilling()
    try:
        await asyncio.wait_for(asyncio.gather(*(p.drained for p in protocols)), timeout_s)
    finally:
        for protocol in protocols:
            protocol.close()
