"""The one door every request of a client goes out through.

Route lookups, heartbeats, probes, unregistering and sends all call
:meth:`RemotingClient.invoke` or :meth:`~RemotingClient.invoke_oneway`; nothing else in
the client touches a connection's ``request``. That makes this the place for what every
request needs: connecting within the caller's budget, and each ``outgoing`` step in
order (request signing goes here).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from producer._client.clock import Clock
from producer._remoting.command import OutgoingRequest, RemotingCommand
from producer._transport import Connection, ConnectionPool
from producer.errors import Fate, RequestTimeout

#: A step applied to every request just before it is written (e.g. adding a signature).
OutgoingStep = Callable[[OutgoingRequest], None]


class RemotingClient:
    """Requests to any address over one pool, each within a timeout that covers connecting."""

    __slots__ = ("_clock", "_outgoing", "connect_timeout_ms", "pool")

    def __init__(
        self,
        pool: ConnectionPool,
        clock: Clock,
        *,
        connect_timeout_ms: float,
        outgoing: Sequence[OutgoingStep] = (),
    ) -> None:
        self.pool = pool
        self.connect_timeout_ms = connect_timeout_ms
        self._clock = clock
        self._outgoing = tuple(outgoing)

    def invoke(
        self, addr: str, request: OutgoingRequest, timeout_ms: float
    ) -> Awaitable[RemotingCommand]:
        """Send ``request`` to ``addr`` and wait for its response, all within ``timeout_ms``.

        With a connection open, the awaitable is the connection's own request (no extra
        coroutine on every send's path)."""
        connection = self.pool.open_connection(addr)
        if connection is None:
            return self._connect_and_invoke(addr, request, timeout_ms)
        self._prepare(request)
        return connection.request(request, timeout_ms)

    def startable(self, addr: str) -> Connection | None:
        """The open connection to ``addr`` if its backend makes loop futures for requests
        (:meth:`start`); ``None`` otherwise: no connection open yet, or trio."""
        connection = self.pool.open_connection(addr)
        if connection is None or not connection.starts_requests:
            return None
        return connection

    def start(
        self, connection: Connection, request: OutgoingRequest, timeout_ms: float
    ) -> asyncio.Future[RemotingCommand | None]:
        """``request`` sent on ``connection`` (from :meth:`startable`) as a loop future."""
        if self._outgoing:
            self._prepare(request)
        waiter = connection.start_request(request, timeout_ms)
        assert waiter is not None, "startable() gives only connections that start requests"
        return waiter

    async def _connect_and_invoke(
        self, addr: str, request: OutgoingRequest, timeout_ms: float
    ) -> RemotingCommand:
        connection, remaining = await self._connection(addr, timeout_ms)
        self._prepare(request)
        return await connection.request(request, remaining)

    async def invoke_oneway(self, addr: str, request: OutgoingRequest, timeout_ms: float) -> None:
        """Hand ``request`` to the socket of ``addr`` within ``timeout_ms``; no answer comes."""
        connection, remaining = await self._connection(addr, timeout_ms)
        self._prepare(request)
        await connection.send_oneway(request, remaining)

    async def _connection(self, addr: str, timeout_ms: float) -> tuple[Connection, float]:
        connection = self.pool.open_connection(addr)
        if connection is not None:
            return connection, timeout_ms
        start = self._clock.monotonic_ms()
        connection = await self.pool.get(addr, timeout_ms=min(timeout_ms, self.connect_timeout_ms))
        remaining = timeout_ms - (self._clock.monotonic_ms() - start)
        if remaining <= 0:
            raise RequestTimeout(
                f"no time left to send to {addr} after connecting", fate=Fate.NOT_STORED
            )
        return connection, remaining

    def _prepare(self, request: OutgoingRequest) -> None:
        for step in self._outgoing:
            step(request)

    def __repr__(self) -> str:
        return f"RemotingClient(pool={self.pool!r}, outgoing={len(self._outgoing)})"
