"""One trace message to the trace topic: a single SEND_MESSAGE_V2 on the client's own
connections (no retry: a trace is never worth delaying anything for).

Java's trace producer is a ``DefaultMQProducer`` of its own group
(``_INNER_TRACE_PRODUCER-<group>-<TYPE>-<n>``); here the send header carries that group
and goes through the traced client's connections and routes, so that producers and
consumers (which have no send pipeline) trace the same way. The inner group is not
announced in heartbeats.
"""

from __future__ import annotations

import itertools

from producer._client.clock import Clock
from producer._client.remoting import RemotingClient
from producer._client.routes import RouteTable
from producer._remoting.requests import SendRequestFactory, build_send_request
from producer._remoting.send_header import send_status_or_raise
from producer._remoting.uniq_key import UniqKeyGenerator
from producer._types.message import Message

#: Java's trace producer: ``send(message, callback, 5000)``.
TRACE_SEND_TIMEOUT_MS = 5000.0


class TraceSender:
    """Sends trace messages of ``group`` (the inner trace group) over ``client``."""

    def __init__(
        self,
        group: str,
        *,
        client: RemotingClient,
        routes: RouteTable,
        clock: Clock,
        uniq_keys: UniqKeyGenerator,
    ) -> None:
        self.group = group
        self._client = client
        self._routes = routes
        self._clock = clock
        self._uniq_keys = uniq_keys
        self._factory = SendRequestFactory(group)
        self._turn = itertools.count()

    async def __call__(self, message: Message) -> None:
        """Store ``message`` on one queue of its topic (round robin); raises
        ``ProducerError`` when the broker refuses it or cannot be reached."""
        deadline = self._clock.monotonic_ms() + TRACE_SEND_TIMEOUT_MS
        queue, addr = await self._routes.queue_in_turn(message.topic, deadline, next(self._turn))
        wall = self._clock.wall_ms()
        prepared = self._factory.prepare(message, self._uniq_keys.next_id(wall))
        request = build_send_request(prepared, queue, wall)
        remaining = deadline - self._clock.monotonic_ms()
        response = await self._client.invoke(addr, request, max(remaining, 1.0))
        send_status_or_raise(response.code, response.remark)
