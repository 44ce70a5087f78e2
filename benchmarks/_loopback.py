"""A connection with the network taken out: the SDK's own CPU per send, measured alone.

:func:`short_circuit` swaps each open connection's transport of a producer for one that
answers every frame written with the sink broker's pre-encoded reply, delivered to the
connection's ``data_received`` on the next loop turn (``call_soon``). No syscall, no
other process: what is left is the SDK's Python work and the loop's callbacks, so an A/B
of two trees varies by a few percent here where the socket run varies by tens (the
machine's other load lands in the kernel and the scheduler, not in this process's CPU).
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterable
from typing import Any

from producer import Producer
from producer.testing._faults import NO_FAULT, FaultDecision
from producer.testing._sink import SinkBroker

_INT32 = struct.Struct(">i")


def _no_fault(is_send: bool) -> FaultDecision:
    return NO_FAULT


class AnsweringTransport:
    """Quacks like the transport :class:`AsyncioConnection` writes to."""

    def __init__(self, connection: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.connection = connection
        self.loop = loop
        self.sink = SinkBroker("loopback")
        self.sink.set_store_host("127.0.0.1", 10911)

    def writelines(self, parts: Iterable[bytes]) -> None:
        data = b"".join(parts)
        pos, replies = 0, []
        while pos < len(data):
            (size,) = _INT32.unpack_from(data, pos)
            payload = data[pos + 4 : pos + 4 + size]
            pos += 4 + size
            reply = self.sink.handle(payload, _no_fault, None)  # type: ignore[arg-type]
            if reply is not None:
                replies.append(reply.frame)
        self.loop.call_soon(self.connection.data_received, b"".join(replies))

    def write(self, data: bytes) -> None:
        self.writelines([data])


def pool_of(producer: Producer) -> Any:
    """The producer's connection pool (``_running.pool``; ``_pool`` in trees before the
    running-state object, which an A/B may measure)."""
    pool = getattr(producer, "_pool", None)
    if pool is None:
        pool = producer._running.pool  # type: ignore[union-attr]
    return pool


def short_circuit(producer: Producer) -> list[tuple[Any, Any]]:
    """Answer every connection of ``producer`` in-process; returns what :func:`restore`
    needs to put the real transports back (so that the producer closes cleanly)."""
    loop = asyncio.get_running_loop()
    pool = pool_of(producer)
    swapped = []
    for connection in pool._connections.values():
        swapped.append((connection, connection._transport))
        connection._transport = AnsweringTransport(connection, loop)
    return swapped


def restore(swapped: list[tuple[Any, Any]]) -> None:
    for connection, transport in swapped:
        connection._transport = transport
