"""The transport interface: a :class:`Connector` gives :class:`Connection` objects.

Everything above the transport (pool, producer, name-server client) talks to these two
protocols only, so a backend can be swapped: :mod:`.asyncio_backend` (an
``asyncio.Protocol``, the fast path, also on uvloop) and :mod:`.anyio_backend` (streams
and tasks, for trio).

Errors a connection raises, and what they say about the request:

* :class:`~producer.errors.ConnectError` - ``connect()`` failed (refused, timed out, DNS);
  nothing was sent.
* :class:`~producer.errors.RequestTimeout` (also a ``TimeoutError``) - no response by the
  deadline; fate ``UNKNOWN`` if the request was written, ``NOT_STORED`` if it never left
  our queue (flow control held it back).
* :class:`~producer.errors.ConnectionLostError` - the connection ended with the request
  pending; ``written`` says whether it had been handed to the socket. Bad bytes from the
  peer close the connection too: the pending requests then get ``ConnectionLostError``
  with the :class:`~producer.errors.RemoteProtocolError` as ``__cause__``, so the retry
  layer treats them like any lost connection and still knows which were written.
* :class:`~producer.errors.LocalProtocolError` - misuse (bad address, frame too large,
  connector not entered).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from types import TracebackType
from typing import Protocol

from producer._remoting.command import OpaqueAllocator, OutgoingRequest, RemotingCommand
from producer._remoting.request_table import ConnectionStats
from producer.errors import ConnectError, InvalidOptionError, LocalProtocolError, TlsError

__all__ = [
    "CloseCallback",
    "Connection",
    "Connector",
    "client_tls",
    "connect_failure",
    "parse_address",
    "process_opaques",
]

# "Opaque is a per-process increasing int32" (DESIGN 2): connectors share this one unless
# given their own. Uniqueness only matters per connection; the table skips live values.
process_opaques = OpaqueAllocator()

DEFAULT_CLOSE_TIMEOUT_MS = 1000.0


class Connection(Protocol):
    """One multiplexed TCP connection to a name server or broker."""

    @property
    def address(self) -> str:
        """``host:port`` as given to ``connect``."""
        ...

    @property
    def is_closed(self) -> bool:
        """True once closed by either side; requests then fail at once (written=False)."""
        ...

    @property
    def starts_requests(self) -> bool:
        """Whether :meth:`start_request` makes a future here (asyncio) or returns None."""
        ...

    @property
    def pending_count(self) -> int:
        """Requests awaiting a response plus oneway frames not yet written."""
        ...

    @property
    def stats(self) -> ConnectionStats: ...

    async def request(self, command: OutgoingRequest, timeout_ms: float) -> RemotingCommand:
        """Send ``command`` with a fresh opaque and wait for the response with that opaque.

        Raises :class:`RequestTimeout`, :class:`ConnectionLostError` or (for a frame over
        the size limit) :class:`LocalProtocolError`. Cancelling the wait forgets the request
        (its frame is not written if it had not been yet).
        """
        ...

    def start_request(
        self, command: OutgoingRequest, timeout_ms: float
    ) -> asyncio.Future[RemotingCommand | None] | None:
        """:meth:`request` without a coroutine: its loop future (the response, or the same
        errors as an exception), on a backend that has one (asyncio); ``None`` elsewhere,
        with nothing sent. Cancelling the future forgets nothing that was written (its
        answer is dropped when it comes); a frame not written yet never will be."""
        ...

    async def send_oneway(self, command: OutgoingRequest, timeout_ms: float | None = None) -> None:
        """Set the oneway flag and a fresh opaque; return once the frame is handed to the socket.

        A write failure raises :class:`ConnectionLostError`; ``timeout_ms`` bounds the wait
        for flow control (:class:`RequestTimeout`, fate ``NOT_STORED``).
        """
        ...

    def add_close_callback(self, callback: CloseCallback) -> None:
        """Call ``callback(connection)`` once when it closes (at once if already closed)."""
        ...

    async def aclose(self) -> None:
        """Fail pending requests, flush what was written, close the socket; idempotent."""
        ...


CloseCallback = Callable[[Connection], object]


class Connector(Protocol):
    """Opens connections; an async context manager that closes them all on exit.

    Enter it before ``connect``: the anyio backend runs each connection's reader in a task
    group that the connector owns, so no connection outlives the block.
    """

    async def connect(self, address: str, timeout_ms: float) -> Connection:
        """Open a connection to ``host:port``; :class:`ConnectError` names the address."""
        ...

    async def __aenter__(self) -> Connector: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None: ...


def connect_failure(
    address: str, exc: BaseException, timeout_ms: float, *, tls: bool = False
) -> ConnectError:
    """The one mapping of a backend's connect failure (timeout, OSError, a TLS handshake
    that failed) to our error."""
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):  # distinct before 3.11
        text = f"cannot connect to {address}: timed out after {timeout_ms:g} ms"
        if tls:
            return TlsError(f"{text} (TLS handshake included: a server without TLS stays silent)")
        return ConnectError(text)
    if isinstance(exc, ssl.SSLCertVerificationError):
        return TlsError(
            f"TLS with {address}: the server's certificate was refused ({exc.verify_message}): "
            "pass ssl= an SSLContext that trusts the server's CA, and use an address its "
            "certificate names"
        )
    if tls and _broken_handshake(exc):
        return TlsError(
            f"TLS handshake with {address} failed ({exc!r}): does the server speak TLS? "
            "(ssl= must match the server: plaintext servers need no ssl=)"
        )
    return ConnectError(f"cannot connect to {address}: {exc}")


def _broken_handshake(exc: BaseException) -> bool:
    """The peer broke off a TLS handshake (rather than refusing the connection)."""
    if isinstance(exc, ssl.SSLError):
        return True
    if isinstance(exc, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)):
        return True
    return not isinstance(exc, OSError)  # anyio's end-of-stream during the handshake


def client_tls(value: object) -> ssl.SSLContext | None:
    """The ``ssl=`` option: ``None``/``False`` (plaintext), ``True`` (the system's trusted
    CAs, hostnames checked) or an ``ssl.SSLContext``."""
    if value is None or value is False:
        return None
    if value is True:
        return ssl.create_default_context()
    if isinstance(value, ssl.SSLContext):
        return value
    raise InvalidOptionError(
        f"ssl must be None, False, True or an ssl.SSLContext, got {type(value).__name__}"
    )


def parse_address(address: str) -> tuple[str, int]:
    """Split ``"host:port"`` (also ``"[::1]:9876"``) into ``(host, port)``.

    Like Java's ``string2SocketAddress`` the port follows the last colon, so a bare IPv6
    literal such as ``"::1:9876"`` is accepted too. Bad input raises LocalProtocolError.
    """
    if not isinstance(address, str):
        raise LocalProtocolError(f"address must be a 'host:port' string, not {address!r}")
    host, sep, port_text = address.strip().rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or "[" in host or "]" in host or any(c.isspace() for c in host):
        raise LocalProtocolError(f"address {address!r} is not 'host:port'")
    if not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) < 65536:
        raise LocalProtocolError(f"address {address!r} has no valid port (1-65535)")
    return host, int(port_text)
