"""What every raw benchmark client's connection shares (the blaster's, the puller's): the
transport with Nagle off, a ``drained`` future the load resolves once its answers are in,
failed if the connection is lost first, and ``close``."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import cast


class RawClientProtocol(asyncio.Protocol):
    #: Names the client in the error a lost connection gives ``drained``.
    client = "raw client"

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
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

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
