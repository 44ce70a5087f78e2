"""A producer's message trace (``trace=``): the ``Pub`` record of every answered send,
batched by a :class:`~producer._trace.dispatcher.TraceDispatcher` and sent on the
producer's own connections by a :class:`~producer._trace.sender.TraceSender` of the inner
trace group, as the Java client's ``enableMsgTrace`` does. It never fails a send."""

from __future__ import annotations

from collections.abc import Callable

from producer._client.upkeep import Upkeep
from producer._remoting.uniq_key import UniqKeyGenerator
from producer._trace.dispatcher import TraceDispatcher, trace_group
from producer._trace.records import PublishTrace, trace_topic
from producer._trace.sender import TraceSender
from producer._types.message import Message


class PublishTracing:
    """One producer's trace: ``answered`` (the sender's answer observer) makes the
    records, :attr:`dispatcher` batches them, :meth:`start` gives it its way out."""

    __slots__ = ("_sender", "answered", "dispatcher", "group")

    def __init__(
        self, topic: str, group: str, wall_ms: Callable[[], int], namespace: str | None
    ) -> None:
        self.group = group
        self.dispatcher = TraceDispatcher(self._send, topic)
        self.answered = PublishTrace(self.dispatcher.append, group, wall_ms, namespace)
        self._sender: TraceSender | None = None

    async def start(self, upkeep: Upkeep, uniq_keys: UniqKeyGenerator) -> None:
        """Send on the connections and routes of ``upkeep``'s client from now on, and
        start the dispatcher."""
        self._sender = TraceSender(
            trace_group(self.group, "PRODUCE"),
            client=upkeep.client,
            routes=upkeep.routes,
            clock=upkeep.clock,
            uniq_keys=uniq_keys,
        )
        await self.dispatcher.start()

    async def aclose(self, timeout_ms: float) -> None:
        """Send what is waiting (within ``timeout_ms``), then stop."""
        await self.dispatcher.aclose(timeout_ms)

    async def _send(self, message: Message) -> None:
        assert self._sender is not None, "started"
        await self._sender(message)

    def __repr__(self) -> str:
        return f"PublishTracing({self.dispatcher!r})"


def publish_tracing(
    trace: bool | str, group: str, wall_ms: Callable[[], int], namespace: str | None
) -> PublishTracing | None:
    """The trace ``trace=`` asks for (``True``: RMQ_SYS_TRACE_TOPIC, or a topic name), or
    ``None`` (off); a bad value raises InvalidOptionError."""
    topic = trace_topic(trace)
    return None if topic is None else PublishTracing(topic, group, wall_ms, namespace)
