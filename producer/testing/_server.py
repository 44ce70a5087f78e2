"""The dev cluster's TCP shell: one listener per server, frames in, answers out, faults.

A :class:`Listener` owns a listening socket and its connections; a
:class:`RequestHandler` (name server, broker, sink) turns one request frame into an
answer. The listener carries out the server's :class:`FaultSpec`: it refuses
connections while ``down``, drops requests under ``blackhole`` (and every answer under
``hang``), aborts on ``reset``,
writes garbage under ``garbage``, and schedules late answers on the event loop, so a
slow answer holds up neither the connection's other requests nor other connections
(answers go out in whatever order they are ready, as a real broker's do).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import struct
from collections.abc import Callable
from ssl import SSLContext
from typing import NamedTuple, Protocol, cast

from producer._remoting.frame_encoder import MAX_FRAME_BYTES
from producer.errors import RemoteProtocolError
from producer.testing._faults import FaultDecision, FaultSpec, decide

__all__ = ["GARBAGE_FRAME", "Channel", "Decider", "Listener", "ServerReply", "RequestHandler"]

log = logging.getLogger("producer.testing")

_INT32 = struct.Struct(">i")
_LINGER_ABORT = struct.pack("ii", 1, 0)

# A well-framed answer whose header is not JSON: a client's decoder must reject it.
GARBAGE_FRAME = _INT32.pack(16) + _INT32.pack(12) + b"\xffgarbage\x00\x01{["

Decider = Callable[[bool], FaultDecision]
"""Called by a handler once per request with ``is_send``; returns the fault decision."""


class ServerReply(NamedTuple):
    frame: bytes
    delay: float = 0.0


class Channel(Protocol):
    """One client connection as a handler sees it: who it is, and a way to write to it
    later (a held pull's answer, a request the server starts)."""

    @property
    def peer(self) -> str: ...

    @property
    def is_open(self) -> bool: ...

    def write(self, frame: bytes) -> None: ...


class RequestHandler(Protocol):
    def handle(self, payload: bytes, decider: Decider, channel: Channel) -> ServerReply | None:
        """Answer one frame (``payload`` is the frame without its length prefix), or
        ``None`` when there is nothing to answer now (oneway, or answered later through
        ``channel``). Raises ``RemoteProtocolError`` on bad bytes."""
        ...


class _Connection(asyncio.Protocol):
    __slots__ = ("_buffer", "_listener", "_outbox", "peer", "transport")

    def __init__(self, listener: Listener) -> None:
        self._listener = listener
        self._buffer = bytearray()
        self._outbox: list[bytes] | None = None
        self.transport: asyncio.Transport | None = None
        self.peer = "?"

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple):
            self.peer = f"{peer[0]}:{peer[1]}"
        self._listener._connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._listener._connections.discard(self)
        self.transport = None
        if self._listener.on_close is not None:
            self._listener.on_close(self)

    @property
    def is_open(self) -> bool:
        return self.transport is not None and not self.transport.is_closing()

    def data_received(self, data: bytes) -> None:
        # Answers to the requests of one read go out in one write (one syscall).
        outbox: list[bytes] = []
        self._outbox = outbox
        try:
            for payload in self._split(data):
                if self.transport is None or self.transport.is_closing():
                    return
                self._listener._on_request(self, payload)
            self._outbox = None
            if outbox:
                self.write(outbox[0] if len(outbox) == 1 else b"".join(outbox))
        except RemoteProtocolError as exc:
            log.debug("%s: closing %s after bad bytes: %s", self._listener.name, self.peer, exc)
            self.abort()
        except Exception:  # a bug in a handler must not kill the server
            log.exception("%s: request from %s failed; closing", self._listener.name, self.peer)
            self.abort()
        finally:
            self._outbox = None

    def _split(self, data: bytes) -> list[bytes]:
        buffer = self._buffer
        buffer += data
        payloads: list[bytes] = []
        pos, size = 0, len(buffer)
        while size - pos >= 4:
            (length,) = _INT32.unpack_from(buffer, pos)
            if length < 4 or length + 4 > MAX_FRAME_BYTES:
                raise RemoteProtocolError(f"frame length {length} out of range")
            if size - pos - 4 < length:
                break
            payloads.append(bytes(buffer[pos + 4 : pos + 4 + length]))
            pos += 4 + length
        if pos:
            del buffer[:pos]
        return payloads

    def write(self, frame: bytes) -> None:
        if self._listener._fault.hang:  # a hung broker answers nothing, late or held
            return
        if self._outbox is not None:
            self._outbox.append(frame)
        elif self.transport is not None and not self.transport.is_closing():
            self.transport.write(frame)

    def abort(self, *, rst: bool = False) -> None:
        transport = self.transport
        if transport is None:
            return
        if rst:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_ABORT)
        transport.abort()


class Listener:
    """One server's socket, its connections and its current fault.

    The port is fixed at the first start (port 0 picks one); going ``down`` and back up
    listens again on the same port.
    """

    def __init__(
        self,
        name: str,
        handler: RequestHandler,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        rng: random.Random | None = None,
        ssl: SSLContext | None = None,
        on_close: Callable[[Channel], None] | None = None,
    ) -> None:
        self.name = name
        self.ssl = ssl
        self.on_close = on_close
        self.handler = handler
        self.host = host
        self.port = port
        self.rng = rng if rng is not None else random.Random(0)
        self._fault = FaultSpec()
        self._decider = self._make_decider(self._fault)
        self._server: asyncio.Server | None = None
        self._connections: set[_Connection] = set()
        self._timers: set[asyncio.TimerHandle] = set()
        self._lock = asyncio.Lock()
        self._started = False
        self.killed = False  # the process is gone (kill): no fault change brings it back
        self.requests = 0
        self.accepted = 0

    # -- state ---------------------------------------------------------------------------

    @property
    def fault(self) -> FaultSpec:
        return self._fault

    @property
    def is_listening(self) -> bool:
        return self._server is not None

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    def __repr__(self) -> str:
        state = "listening" if self.is_listening else "not listening"
        return (
            f"Listener({self.name} {self.host}:{self.port} {state}, "
            f"connections={len(self._connections)}, fault={self._fault.to_json()})"
        )

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        async with self._lock:
            self._started = True
            await self._listen()
            if self._fault.down or self.killed:
                await self._stop_listening()

    async def set_fault(self, spec: FaultSpec) -> None:
        """Apply ``spec`` from the next request on; start or stop listening as needed."""
        async with self._lock:
            self._fault = spec
            self._decider = self._make_decider(spec)
            if not self._started:
                return
            if spec.down or self.killed:
                await self._stop_listening()
            elif self._server is None:
                await self._listen()

    async def kill(self) -> None:
        """The server process dies: stop listening, close every connection (their
        ``on_close`` runs), until :meth:`revive`; its fault is kept."""
        async with self._lock:
            self.killed = True
            await self._stop_listening()

    async def revive(self) -> None:
        """Listen again on the same port after :meth:`kill` (unless the fault says down)."""
        async with self._lock:
            self.killed = False
            if self._started and not self._fault.down:
                await self._listen()

    async def aclose(self) -> None:
        async with self._lock:
            self._started = False
            await self._stop_listening()
            for timer in self._timers:
                timer.cancel()
            self._timers.clear()

    async def _listen(self) -> None:
        if self._server is not None:
            return
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._make_connection, self.host, self.port, reuse_address=True, ssl=self.ssl
        )
        if self.port == 0:
            self.port = self._server.sockets[0].getsockname()[1]

    async def _stop_listening(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for connection in list(self._connections):
            connection.abort()
        self._connections.clear()
        if server is not None:
            await server.wait_closed()

    def _make_connection(self) -> _Connection:
        self.accepted += 1
        return _Connection(self)

    # -- requests ------------------------------------------------------------------------

    def _on_request(self, connection: _Connection, payload: bytes) -> None:
        self.requests += 1
        spec = self._fault
        if spec.reset:
            connection.abort(rst=True)
            return
        if spec.blackhole or spec.hang:
            return
        if spec.garbage:
            connection.write(GARBAGE_FRAME)
            return
        reply = self.handler.handle(payload, self._decider, connection)
        if reply is None:
            return
        if reply.delay > 0:
            self._write_later(connection, reply)
        else:
            connection.write(reply.frame)

    def _make_decider(self, spec: FaultSpec) -> Decider:
        rng = self.rng

        def decider(is_send: bool) -> FaultDecision:
            return decide(spec, rng, is_send=is_send)

        return decider

    def _write_later(self, connection: _Connection, reply: ServerReply) -> None:
        loop = asyncio.get_running_loop()
        timers = self._timers

        def fire() -> None:
            timers.discard(timer)
            connection.write(reply.frame)

        timer = loop.call_later(reply.delay, fire)
        timers.add(timer)
