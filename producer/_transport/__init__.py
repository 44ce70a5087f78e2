"""The I/O shell: connections to name servers and brokers (see :mod:`.base`).

``default_connector()`` picks the backend for the running event loop: the
``asyncio.Protocol`` backend on asyncio (and uvloop), the anyio backend elsewhere (trio).
"""

from __future__ import annotations

from producer._remoting.command import OpaqueAllocator
from producer._remoting.request_table import ConnectionStats
from producer._transport.anyio_backend import AnyioConnection, AnyioConnector
from producer._transport.asyncio_backend import AsyncioConnection, AsyncioConnector
from producer._transport.base import Connection, Connector, parse_address, process_opaques
from producer._transport.pool import ConnectionPool
from producer._transport.runtime import Runtime, current_runtime

__all__ = [
    "AnyioConnection",
    "AnyioConnector",
    "AsyncioConnection",
    "AsyncioConnector",
    "Connection",
    "ConnectionPool",
    "ConnectionStats",
    "Connector",
    "Runtime",
    "current_runtime",
    "default_connector",
    "parse_address",
    "process_opaques",
]


def default_connector(*, opaques: OpaqueAllocator | None = None) -> Connector:
    """A connector for the event loop this is called from (call it inside the loop)."""
    return current_runtime().connector(opaques=opaques)
