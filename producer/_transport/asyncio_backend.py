"""The fast backend: an ``asyncio.Protocol`` per connection (works on uvloop too).

No task runs per connection or per request. Everything is a loop callback:

* **Writes are coalesced.** ``request()`` queues its frame; the first frame queued since
  the last read (or flush) is written at once, with no callback behind it, so a lone
  request costs one loop turn; a second one schedules one ``call_soon(_flush)``, which
  hands every frame queued until then to the transport in a single ``writelines``. While
  the transport is paused (its buffer is over the high-water mark) frames stay in our
  queue, so they are still *unwritten*: a deadline or close then reports them as
  definitely not sent.
* **One deadline timer.** A single ``TimerHandle`` is armed for the earliest deadline in
  the in-flight heap and re-armed only when an earlier one arrives (rare: timeouts are
  mostly equal, so deadlines mostly grow) or after it fires.
* **Reads dispatch synchronously** in ``data_received``, so the read backlog is at most
  one partial frame (<= 16 MiB) in the decoder; there is no queue to bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import socket
from ssl import SSLContext
from types import TracebackType
from typing import cast

from producer._remoting.command import OpaqueAllocator, OutgoingRequest, RemotingCommand
from producer._remoting.request_table import Entry, RequestHandler, not_supported
from producer._transport._connection_base import InFlightConnection
from producer._transport.base import (
    DEFAULT_CLOSE_TIMEOUT_MS,
    connect_failure,
    parse_address,
    process_opaques,
)
from producer.errors import LocalProtocolError, RemoteProtocolError

__all__ = ["AsyncioConnection", "AsyncioConnector"]


class AsyncioConnection(InFlightConnection, asyncio.Protocol):
    """A multiplexed connection; made by :class:`AsyncioConnector`, not directly."""

    def __init__(
        self,
        address: str,
        loop: asyncio.AbstractEventLoop,
        opaques: OpaqueAllocator,
        close_timeout_ms: float,
        handler: RequestHandler,
    ) -> None:
        super().__init__(address, opaques, handler)
        self._loop = loop
        self._close_timeout_s = close_timeout_ms / 1000.0
        self._transport: asyncio.Transport | None = None
        self._paused = False
        self._flush_handle: asyncio.Handle | None = None
        self._turn_written = False  # a frame went out at once since the last read / flush
        self._timer: asyncio.TimerHandle | None = None
        self._timer_when = math.inf
        self._lost: asyncio.Future[None] = loop.create_future()

    # -- the Connection interface --------------------------------------------------------

    starts_requests = True

    @property
    def is_writing_paused(self) -> bool:
        """True while the transport's buffer is over its high-water mark."""
        return self._paused

    def start_request(
        self, command: OutgoingRequest, timeout_ms: float
    ) -> asyncio.Future[RemotingCommand | None]:
        # _submit's work, inline: a lone send's path runs through here once per attempt.
        future: asyncio.Future[RemotingCommand | None] = self._loop.create_future()
        entry = self._inflight.prepare(command, timeout_ms, self._loop.time(), future)
        self._queued(entry.deadline)
        return future

    async def request(self, command: OutgoingRequest, timeout_ms: float) -> RemotingCommand:
        entry, future = self._submit(command, timeout_ms)
        try:
            response = await future
        except BaseException:
            self._inflight.discard(entry)  # cancelled: no leak, and never written late
            raise
        assert response is not None
        return response

    async def send_oneway(self, command: OutgoingRequest, timeout_ms: float | None = None) -> None:
        entry, future = self._submit(command, timeout_ms, oneway=True)
        try:
            await future
        except BaseException:
            self._inflight.discard(entry)
            raise

    def _submit(
        self, command: OutgoingRequest, timeout_ms: float | None, *, oneway: bool = False
    ) -> tuple[Entry, asyncio.Future[RemotingCommand | None]]:
        """Queue ``command`` for writing; its entry and the future its answer completes."""
        future: asyncio.Future[RemotingCommand | None] = self._loop.create_future()
        entry = self._inflight.prepare(
            command, timeout_ms, self._loop.time(), future, oneway=oneway
        )
        self._queued(entry.deadline)
        return entry, future

    async def aclose(self) -> None:
        if self._shutdown(f"connection to {self._address} closed locally"):
            assert self._transport is not None
            self._transport.close()  # sends what the transport holds, then FIN
        if self._transport is None or self._lost.done():
            return
        # A peer that stops reading could hold close() forever: abort after a grace period.
        abort = self._loop.call_later(self._close_timeout_s, self._transport.abort)
        try:
            await asyncio.shield(self._lost)
        finally:
            abort.cancel()

    # -- writing -------------------------------------------------------------------------

    def _queued(self, deadline: float) -> None:
        if deadline < self._timer_when:
            self._arm(deadline)
        if self._flush_handle is None and not self._paused:
            if self._turn_written:
                # Another frame this turn: a flush behind it gathers the turn's rest.
                self._flush_handle = self._loop.call_soon(self._flush)
            else:
                # The turn's first frame leaves at once, and no callback follows it: a
                # lone request costs one loop turn, as a raw socket's does.
                self._turn_written = True
                self._write_queued()

    def _flush(self) -> None:
        self._flush_handle = None
        self._turn_written = False
        self._write_queued()

    def _write_queued(self) -> None:
        if self._paused or self._inflight.closed is not None or self._transport is None:
            return
        frames, oneways = self._inflight.take_frames()
        if frames:
            try:
                self._transport.writelines(frames)
            except Exception as exc:  # e.g. RuntimeError after write_eof; not socket errors
                self._shutdown(f"write to {self._address} failed: {exc!r}", exc)
                self._transport.abort()
                return
        if oneways:
            self._inflight.confirm_oneways(oneways)

    # -- the deadline sweeper ------------------------------------------------------------

    def _arm(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_when = when
        self._timer = self._loop.call_at(when, self._sweep)

    def _sweep(self) -> None:
        self._timer, self._timer_when = None, math.inf
        # Never early: a timer that fires a hair before the deadline (asyncio allows its
        # clock resolution, libuv rounds to ms) just re-arms for the rest.
        self._inflight.expire(self._loop.time())
        following = self._inflight.next_deadline()
        if following is not None:
            self._arm(following)

    # -- asyncio.Protocol callbacks ------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses but quack the same
        self._transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            # asyncio and uvloop already do this for TCP; make sure
            with contextlib.suppress(OSError, AttributeError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        if self._inflight.closed is not None:  # is_closed, without the property's call
            return  # closing locally: nobody waits for these any more
        self._turn_written = False  # a read starts a new turn of the loop
        try:
            if self._inflight.data_received(data):
                self._queued(math.inf)  # answers to the peer's requests
        except RemoteProtocolError as exc:
            self._shutdown(f"connection to {self._address} closed: protocol error: {exc}", exc)
            assert self._transport is not None
            self._transport.abort()

    def eof_received(self) -> bool | None:
        return None  # let the transport close; connection_lost fails what is pending

    def connection_lost(self, exc: Exception | None) -> None:
        reason = f"{exc!r}" if exc is not None else "closed by peer"
        self._shutdown(f"connection to {self._address} lost: {reason}", exc)
        if not self._lost.done():
            self._lost.set_result(None)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._inflight.queued and self._flush_handle is None:
            self._flush_handle = self._loop.call_soon(self._flush)

    # -- closing -------------------------------------------------------------------------

    def _shutdown(self, reason: str, cause: BaseException | None = None) -> bool:
        """Fail everything pending (once) and tell the close callbacks."""
        if not self._inflight.close(reason, cause):
            return False
        for handle in (self._flush_handle, self._timer):
            if handle is not None:
                handle.cancel()
        self._flush_handle, self._timer, self._timer_when = None, None, math.inf
        self._notify_closed()
        return True

    def __repr__(self) -> str:
        state = "closed" if self.is_closed else ("paused" if self._paused else "open")
        return (
            f"<AsyncioConnection {self._address} {state} pending={len(self._inflight)} "
            f"queued={self._inflight.queued} {self.stats!r}>"
        )


class AsyncioConnector:
    """Connects with ``loop.create_connection``; closes its connections on exit."""

    def __init__(
        self,
        *,
        opaques: OpaqueAllocator | None = None,
        close_timeout_ms: float = DEFAULT_CLOSE_TIMEOUT_MS,
        handler: RequestHandler = not_supported,
        ssl: SSLContext | None = None,
    ) -> None:
        self._ssl = ssl
        self._opaques = process_opaques if opaques is None else opaques
        self._handler = handler
        self._close_timeout_ms = close_timeout_ms
        self._connections: set[AsyncioConnection] = set()
        self._entered = False

    async def __aenter__(self) -> AsyncioConnector:
        self._entered = True
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._entered = False
        for connection in list(self._connections):
            await connection.aclose()

    async def connect(self, address: str, timeout_ms: float) -> AsyncioConnection:
        host, port = parse_address(address)
        if not self._entered:
            raise LocalProtocolError("enter the connector ('async with') before connect()")
        loop = asyncio.get_running_loop()

        def factory() -> AsyncioConnection:
            return AsyncioConnection(
                address, loop, self._opaques, self._close_timeout_ms, self._handler
            )

        tls = self._ssl
        opening = loop.create_connection(
            factory, host, port, ssl=tls, server_hostname=host if tls is not None else None
        )
        try:
            _, connection = await asyncio.wait_for(opening, max(timeout_ms, 0) / 1000.0)
        except (asyncio.TimeoutError, OSError) as exc:  # ssl.SSLError is an OSError
            raise connect_failure(address, exc, timeout_ms, tls=tls is not None) from exc
        self._connections.add(connection)
        connection.add_close_callback(lambda c: self._connections.discard(connection))
        return connection

    def __repr__(self) -> str:
        return f"<AsyncioConnector connections={len(self._connections)} entered={self._entered}>"
