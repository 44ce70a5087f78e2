"""One connection per address, opened on demand and dropped when it closes.

Concurrent callers for an address that has no connection share one connect attempt: the
first becomes the leader and connects, the others wait for its outcome (each no longer
than its own budget). If the leader is cancelled, a waiting caller takes over; if the
attempt fails, every waiter gets a :class:`ConnectError` naming the address.
"""

from __future__ import annotations

from types import TracebackType

import anyio

from producer._transport.base import Connection, Connector, parse_address
from producer.errors import ConnectError, ProducerClosedError

__all__ = ["ConnectionPool"]

DEFAULT_CONNECT_TIMEOUT_MS = 3000.0


class _Attempt:
    """A connect in progress that other callers can wait on."""

    __slots__ = ("done", "error")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.error: ConnectError | None = None  # None when done: connected, or leader cancelled


class ConnectionPool:
    """Connections by address over one :class:`Connector`; ``async with`` enters both."""

    def __init__(
        self, connector: Connector, *, connect_timeout_ms: float = DEFAULT_CONNECT_TIMEOUT_MS
    ) -> None:
        self._connector = connector
        self._connect_timeout_ms = connect_timeout_ms
        self._connections: dict[str, Connection] = {}
        self._attempts: dict[str, _Attempt] = {}
        self._closed = False

    async def __aenter__(self) -> ConnectionPool:
        await self._connector.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        try:
            await self.aclose()
        finally:
            result = await self._connector.__aexit__(exc_type, exc, tb)
        return result

    @property
    def is_closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        return len(self._connections)

    def addresses(self) -> list[str]:
        """Addresses with an open connection now."""
        return list(self._connections)

    def open_connection(self, address: str) -> Connection | None:
        """The open connection to ``address`` if there is one; never connects or waits."""
        if self._closed:
            return None
        connection = self._connections.get(address)
        if connection is None or connection.is_closed:
            return None
        return connection

    async def get(self, address: str, *, timeout_ms: float | None = None) -> Connection:
        """The open connection to ``address``, connecting (once, shared) if there is none.

        ``timeout_ms`` caps the connect (default: the pool's ``connect_timeout_ms``).
        """
        parse_address(address)  # bad input fails here, not inside a shared attempt
        budget = self._connect_timeout_ms if timeout_ms is None else timeout_ms
        deadline = anyio.current_time() + max(budget, 0) / 1000.0
        while True:
            if self._closed:
                raise ProducerClosedError("the connection pool is closed")
            connection = self._connections.get(address)
            if connection is not None and not connection.is_closed:
                return connection
            attempt = self._attempts.get(address)
            if attempt is None:
                return await self._lead(address, deadline)
            await self._follow(address, attempt, deadline, budget)

    async def _lead(self, address: str, deadline: float) -> Connection:
        attempt = self._attempts[address] = _Attempt()
        try:
            timeout_ms = max(deadline - anyio.current_time(), 0) * 1000.0
            connection = await self._connector.connect(address, timeout_ms)
        except ConnectError as exc:
            attempt.error = exc
            raise
        finally:
            del self._attempts[address]
            attempt.done.set()
        if self._closed:  # closed while we connected: nobody will close this one for us
            await connection.aclose()
            raise ProducerClosedError("the connection pool is closed")
        self._connections[address] = connection
        connection.add_close_callback(self._forget)
        return connection

    async def _follow(
        self, address: str, attempt: _Attempt, deadline: float, budget: float
    ) -> None:
        with anyio.move_on_after(deadline - anyio.current_time()):
            await attempt.done.wait()
        if not attempt.done.is_set():
            raise ConnectError(f"cannot connect to {address}: timed out after {budget:g} ms")
        if attempt.error is not None:
            # A fresh error per waiter: one exception object raised in many tasks would
            # collect all their tracebacks.
            raise ConnectError(attempt.error.message) from attempt.error

    def _forget(self, connection: Connection) -> None:
        if self._connections.get(connection.address) is connection:
            del self._connections[connection.address]

    async def aclose(self) -> None:
        """Close every connection; later ``get`` calls raise :class:`ProducerClosedError`."""
        self._closed = True
        connections = list(self._connections.values())
        self._connections.clear()
        async with anyio.create_task_group() as group:
            for connection in connections:
                group.start_soon(connection.aclose)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return (
            f"<ConnectionPool {state} connections={sorted(self._connections)} "
            f"connecting={sorted(self._attempts)}>"
        )
