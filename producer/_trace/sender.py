"""One trace message to the trace topic: a single SEND_MESSAGE_V2 on the client's own
connections (no retry: a trace is never worth delaying anything for).

Java's trace producer is a ``DefaultMQProducer`` of its own group
(``_INNER_TRACE_PRODUCER-<group>-<TYPE>-<n>``); here the send header carries that group
and goes through the traced client's connections and routes, so that producers and
consumers (which have no send pipeline) trace the same way. The inner group is not
announced in heartbeats.
"""

from __future__ import annotations

from producer._client.clock import Clock
from producer._client.in_turn import InTurn
from producer._client.remoting import RemotingClient
from producer._client.routes import RouteTable
from producer._remoting.command import OutgoingRequest
from producer._remoting.producer_requests import SendRequestFactory, build_send_request
from producer._remoting.send_header import send_status_or_raise
from producer._remoting.uniq_key import UniqKeyGenerator
from producer._types.message import Message, MessageQueue

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
        self._factory = SendRequestFactory(group)
        self._in_turn = InTurn(client=client, routes=routes, clock=clock, uniq_keys=uniq_keys)

    async def __call__(self, message: Message) -> None:
        """Store ``message`` on one queue of its topic (round robin); raises
        ``ProducerError`` when the broker refuses it or cannot be reached."""

        def request(queue: MessageQueue, wall: int, uniq_key: str) -> OutgoingRequest:
            return build_send_request(self._factory.prepare(message, uniq_key), queue, wall)

        sent = await self._in_turn.send(message.topic, TRACE_SEND_TIMEOUT_MS, request)
        send_status_or_raise(sent.response.code, sent.response.remark)
