"""The portable backend: anyio streams and tasks (this is what runs on trio).

Each connection runs three tasks in a task group of its own, itself started in the
connector's task group (structured concurrency: a connection cannot outlive the
connector that made it):

* a **reader** that feeds the in-flight table (which dispatches responses by opaque);
* a **writer** that sleeps on an event and, once woken, sends every frame queued since
  in one ``send`` (frames queued while a send blocks go out together in the next one);
* a **sweeper**: one per connection, not a timer per request. It sleeps in a cancel scope
  whose deadline is the earliest deadline in the in-flight heap, and is woken early only
  when a request brings an earlier deadline. A per-request ``fail_after`` would also do on
  trio, but the sweeper keeps one rule for both backends: the table, not the caller,
  decides the fate (a request still in the write queue at its deadline is NOT_STORED).

Flow control is the stream's: while ``send`` blocks, later frames stay queued (unwritten).
"""

from __future__ import annotations

import contextlib
import logging
import math
import socket
from ssl import SSLContext
from types import TracebackType

import anyio
import anyio.abc
from anyio.abc import SocketAttribute

from producer._remoting.command import OpaqueAllocator, OutgoingRequest, RemotingCommand
from producer._remoting.request_table import RequestHandler, not_supported
from producer._transport._connection_base import InFlightConnection
from producer._transport.base import connect_failure, parse_address, process_opaques
from producer.errors import LocalProtocolError, RemoteProtocolError

__all__ = ["AnyioConnection", "AnyioConnector"]

_log = logging.getLogger("producer.transport")

_STREAM_ERRORS = (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError)


class _ResultSlot:
    """A one-shot result slot with the ``Future`` methods the in-flight table uses."""

    __slots__ = ("_done", "_error", "_event", "_result")

    def __init__(self) -> None:
        self._event = anyio.Event()
        self._done = False
        self._result: RemotingCommand | None = None
        self._error: BaseException | None = None

    def done(self) -> bool:
        return self._done

    def cancelled(self) -> bool:
        return False  # its caller discards the entry instead (AnyioConnection.request)

    def set_result(self, result: RemotingCommand | None, /) -> None:
        self._done, self._result = True, result
        self._event.set()

    def set_exception(self, exception: BaseException, /) -> None:
        self._done, self._error = True, exception
        self._event.set()

    async def wait(self) -> RemotingCommand | None:
        await self._event.wait()
        if self._error is not None:
            raise self._error
        return self._result


class AnyioConnection(InFlightConnection):
    """A multiplexed connection over an anyio byte stream; made by :class:`AnyioConnector`."""

    def __init__(
        self,
        stream: anyio.abc.ByteStream,
        address: str,
        opaques: OpaqueAllocator,
        handler: RequestHandler,
    ) -> None:
        super().__init__(address, opaques, handler)
        self._stream = stream
        self._wake_writer = anyio.Event()
        self._wake_sweeper = anyio.Event()
        self._sweeper_deadline = math.inf
        self._scope: anyio.CancelScope | None = None
        self._finished = anyio.Event()

    async def request(self, command: OutgoingRequest, timeout_ms: float) -> RemotingCommand:
        response = await self._submit(command, timeout_ms, oneway=False)
        assert response is not None
        return response

    starts_requests = False

    def start_request(self, command: OutgoingRequest, timeout_ms: float) -> None:
        return None  # every request is awaited here: its waiter is not a loop future

    async def send_oneway(self, command: OutgoingRequest, timeout_ms: float | None = None) -> None:
        await self._submit(command, timeout_ms, oneway=True)

    async def _submit(
        self, command: OutgoingRequest, timeout_ms: float | None, *, oneway: bool
    ) -> RemotingCommand | None:
        # A caller already cancelled must not queue: its cancellation is delivered at the
        # wait below only after the woken writer may have run (trio runs the batch of
        # woken tasks first), and the frame would go out for a send that raised.
        await anyio.lowlevel.checkpoint_if_cancelled()
        waiter = _ResultSlot()
        entry = self._inflight.prepare(
            command, timeout_ms, anyio.current_time(), waiter, oneway=oneway
        )
        if entry.deadline < self._sweeper_deadline:
            self._sweeper_deadline = entry.deadline
            self._wake_sweeper.set()
        self._wake_writer.set()
        try:
            return await waiter.wait()
        except BaseException:
            self._inflight.discard(entry)  # cancelled: no leak, and never written late
            raise

    async def aclose(self) -> None:
        self._shutdown(f"connection to {self._address} closed locally")
        await self._finished.wait()

    # -- the connection's tasks ----------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Run until closed; the connector starts this in its task group."""
        try:
            async with anyio.create_task_group() as group:
                self._scope = group.cancel_scope
                group.start_soon(self._read_loop)
                group.start_soon(self._write_loop)
                group.start_soon(self._sweep_loop)
                task_status.started()
        finally:
            self._shutdown(f"connection to {self._address} closed: its connector exited")
            with anyio.CancelScope(shield=True):
                await self._stream.aclose()  # the kernel still sends what it was given
            self._finished.set()

    async def _read_loop(self) -> None:
        try:
            while True:
                if self._inflight.data_received(await self._stream.receive()):
                    self._wake_writer.set()  # answers to the peer's requests
        except anyio.EndOfStream:
            self._shutdown(f"connection to {self._address} lost: closed by peer")
        except RemoteProtocolError as exc:
            self._shutdown(f"connection to {self._address} closed: protocol error: {exc}", exc)
        except _STREAM_ERRORS as exc:
            self._shutdown(f"connection to {self._address} lost: {exc!r}", exc)

    async def _write_loop(self) -> None:
        while True:
            await self._wake_writer.wait()
            self._wake_writer = anyio.Event()  # before taking: later frames wake us again
            frames, oneways = self._inflight.take_frames()
            if not frames:
                continue
            try:
                await self._stream.send(frames[0] if len(frames) == 1 else b"".join(frames))
            except _STREAM_ERRORS as exc:
                self._shutdown(f"write to {self._address} failed: {exc!r}", exc)
                return
            self._inflight.confirm_oneways(oneways)

    async def _sweep_loop(self) -> None:
        while True:
            following = self._inflight.next_deadline()
            self._sweeper_deadline = math.inf if following is None else following
            self._wake_sweeper = anyio.Event()
            with anyio.CancelScope(deadline=self._sweeper_deadline):
                await self._wake_sweeper.wait()
            self._inflight.expire(anyio.current_time())  # never early, as asyncio_backend

    def _shutdown(self, reason: str, cause: BaseException | None = None) -> None:
        """Fail everything pending (once), stop the tasks, tell the close callbacks."""
        if not self._inflight.close(reason, cause):
            return
        if self._scope is not None:
            self._scope.cancel()
        self._notify_closed()

    def __repr__(self) -> str:
        state = "closed" if self.is_closed else "open"
        return (
            f"<AnyioConnection {self._address} {state} pending={len(self._inflight)} "
            f"queued={self._inflight.queued} {self.stats!r}>"
        )


async def _open_stream(host: str, port: int, tls: SSLContext | None) -> anyio.abc.ByteStream:
    if tls is None:
        return await anyio.connect_tcp(host, port)
    return await anyio.connect_tcp(
        host,
        port,
        ssl_context=tls,
        tls_hostname=host,
        tls_standard_compatible=False,  # brokers may close without close_notify
    )


def _tls_cause(exc: BaseException) -> BaseException:
    """anyio wraps some handshake failures in BrokenResourceError: name the SSL error."""
    cause = exc.__cause__
    return cause if isinstance(cause, OSError) else exc


class AnyioConnector:
    """Connects with ``anyio.connect_tcp``; owns the task group its connections run in."""

    def __init__(
        self,
        *,
        opaques: OpaqueAllocator | None = None,
        handler: RequestHandler = not_supported,
        ssl: SSLContext | None = None,
    ) -> None:
        self._ssl = ssl
        self._opaques = process_opaques if opaques is None else opaques
        self._handler = handler
        self._group: anyio.abc.TaskGroup | None = None
        self._connections: set[AnyioConnection] = set()

    async def __aenter__(self) -> AnyioConnector:
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        group, self._group = self._group, None
        assert group is not None, "connector was not entered"
        for connection in list(self._connections):
            connection._shutdown(f"connection to {connection.address} closed: connector exited")
        return await group.__aexit__(exc_type, exc, tb)

    async def connect(self, address: str, timeout_ms: float) -> AnyioConnection:
        host, port = parse_address(address)
        if self._group is None:
            raise LocalProtocolError("enter the connector ('async with') before connect()")
        tls = self._ssl
        try:
            with anyio.fail_after(max(timeout_ms, 0) / 1000.0):
                stream = await _open_stream(host, port, tls)
        except (OSError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
            cause, is_tls = _tls_cause(exc), tls is not None
            raise connect_failure(address, cause, timeout_ms, tls=is_tls) from exc
        with contextlib.suppress(OSError, anyio.TypedAttributeLookupError):
            sock = stream.extra(SocketAttribute.raw_socket)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection = AnyioConnection(stream, address, self._opaques, self._handler)
        try:
            await self._group.start(connection.run)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await stream.aclose()
            raise
        self._connections.add(connection)
        connection.add_close_callback(lambda c: self._connections.discard(connection))
        return connection

    def __repr__(self) -> str:
        state = "entered" if self._group is not None else "idle"
        return f"<AnyioConnector {state} connections={len(self._connections)}>"
