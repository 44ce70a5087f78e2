"""The trace dispatcher: trace records in, batched trace messages out (I/O shell).

Theory of operation
===================

What a send or a listener call traced goes into a bounded list (:meth:`append`, never
awaits, never raises: tracing must not fail or slow what it traces). At most
``max_pending`` records wait; more are dropped and counted (``dropped``), as Java's
``AsyncTraceDispatcher`` drops what its queue of 1024 cannot take.

A task of the dispatcher wakes when the first record arrives, waits ``linger_ms`` (500,
Java's ``waitTimeThresholdMil``) so that a burst becomes one message, and sends what has
gathered as trace messages of at most ``max_body`` bytes (118,000: Java's trace producer's
``maxMessageSize``) to the trace topic, one after the other, with ``send`` (a
:class:`~producer._trace.sender.TraceSender` of the inner group
``_INNER_TRACE_PRODUCER-<group>-<PRODUCE|CONSUME>-<n>``, as Java names it): a trace
message that cannot be sent is logged and counted (``failed``), never retried, never
raised.

``aclose()`` sends what is left, within ``timeout_ms``, then stops.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable, Sequence

import anyio
from anyio.abc import TaskGroup

from producer._remoting.trace import (
    TRACE_GROUP_PREFIX,
    TraceRecord,
    encode_trace_body,
    trace_keys,
)
from producer._types.message import Message
from producer.errors import ProducerError

#: Stores one trace message (raises ``ProducerError`` when it cannot).
TraceSend = Callable[[Message], Awaitable[None]]
log = logging.getLogger("producer.trace")

#: Java's trace producer: ``maxMsgSize`` 128,000 minus 10,000.
MAX_BODY = 118_000
LINGER_MS = 500.0
MAX_PENDING = 1024
_COUNTER = itertools.count(1)


def trace_group(group: str, kind: str) -> str:
    """The inner producer's group (``AsyncTraceDispatcher.genGroupNameForTrace``)."""
    return f"{TRACE_GROUP_PREFIX}-{group}-{kind}-{next(_COUNTER)}"


def batches(records: Sequence[TraceRecord], max_body: int) -> list[list[TraceRecord]]:
    """``records`` cut into trace messages: a message is sent once it reaches
    ``max_body`` bytes (``TraceDataSegment.addTraceTransferBean``), the rest together."""
    out: list[list[TraceRecord]] = []
    current: list[TraceRecord] = []
    size = 0
    for record in records:
        current.append(record)
        size += len(encode_trace_body([record]))
        if size >= max_body:
            out.append(current)
            current, size = [], 0
    if current:
        out.append(current)
    return out


class TraceDispatcher:
    """Collects trace records and sends them to ``topic`` with ``send``."""

    def __init__(
        self,
        send: TraceSend,
        topic: str,
        *,
        linger_ms: float = LINGER_MS,
        max_pending: int = MAX_PENDING,
        max_body: int = MAX_BODY,
    ) -> None:
        self._send = send
        self.topic = topic
        self.linger_ms = linger_ms
        self.max_pending = max_pending
        self.max_body = max_body
        self._pending: list[TraceRecord] = []
        self._arrived = anyio.Event()
        self._tg: TaskGroup | None = None
        self.sent = 0  # trace messages the broker stored
        self.failed = 0  # trace messages that could not be sent
        self.dropped = 0  # records dropped: too many waiting

    def __repr__(self) -> str:
        return (
            f"TraceDispatcher({self.topic!r}, waiting={len(self._pending)}, sent={self.sent}, "
            f"failed={self.failed}, dropped={self.dropped})"
        )

    def append(self, records: Sequence[TraceRecord]) -> None:
        """Take ``records`` to send (never waits; over ``max_pending`` they are dropped)."""
        room = max(self.max_pending - len(self._pending), 0)
        if room < len(records):
            if not self.dropped:
                log.warning("%d trace records waiting: dropping more", len(self._pending))
            self.dropped += len(records) - room
            records = records[:room]
        if records:
            self._pending.extend(records)
            self._arrived.set()

    async def start(self) -> None:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._run)

    async def _run(self) -> None:
        while True:
            await self._arrived.wait()
            await anyio.sleep(self.linger_ms / 1000.0)
            await self._send_waiting()

    async def _send_waiting(self) -> None:
        """Send every waiting record, as trace messages."""
        records, self._pending = self._pending, []
        self._arrived = anyio.Event()
        for batch in batches(records, self.max_body):
            message = Message(self.topic, encode_trace_body(batch), keys=trace_keys(batch))
            try:
                await self._send(message)
                self.sent += 1
            except ProducerError as exc:
                self.failed += 1
                log.warning("a trace message to %s was not sent: %s", self.topic, exc)

    async def aclose(self, timeout_ms: float) -> None:
        """Stop; send what waits within ``timeout_ms`` (the rest is dropped, counted)."""
        if self._tg is None:
            return
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)
        self._tg = None
        with anyio.move_on_after(timeout_ms / 1000.0):
            await self._send_waiting()
        self.dropped += len(self._pending)
        self._pending = []
