"""One request to a topic's queues in turn, in one attempt: what the producer's side
channels (trace messages, replies) send over its connections and routes, outside the
send pipeline (no retry, no routing by latency)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import NamedTuple

from producer._client.clock import Clock
from producer._client.remoting import RemotingClient
from producer._client.routes import RouteTable
from producer._remoting.command import OutgoingRequest, RemotingCommand
from producer._remoting.uniq_key import UniqKeyGenerator
from producer._types.message import MessageQueue

__all__ = ["InTurn", "Sent"]

#: Builds the request for a queue, at a wall-clock time, under a fresh UNIQ_KEY.
BuildRequest = Callable[[MessageQueue, int, str], OutgoingRequest]


class Sent(NamedTuple):
    """Where a request went, the UNIQ_KEY it carried and the broker's answer."""

    queue: MessageQueue
    addr: str
    uniq_key: str
    response: RemotingCommand


class InTurn:
    """Sends one request per call to the next queue of its topic (round robin, through
    ``RouteTable.queue_in_turn``), all within the call's timeout."""

    def __init__(
        self,
        *,
        client: RemotingClient,
        routes: RouteTable,
        clock: Clock,
        uniq_keys: UniqKeyGenerator,
    ) -> None:
        self._client = client
        self._routes = routes
        self._clock = clock
        self._uniq_keys = uniq_keys
        self._turn = itertools.count()

    async def send(self, topic: str, timeout_ms: float, build: BuildRequest) -> Sent:
        """``build``'s request to the next queue of ``topic``; the route lookup and the
        answer share ``timeout_ms`` (the answer gets at least 1 ms)."""
        deadline = self._clock.monotonic_ms() + timeout_ms
        queue, addr = await self._routes.queue_in_turn(topic, deadline, next(self._turn))
        wall = self._clock.wall_ms()
        uniq_key = self._uniq_keys.next_id(wall)
        request = build(queue, wall, uniq_key)
        remaining = max(deadline - self._clock.monotonic_ms(), 1.0)
        return Sent(queue, addr, uniq_key, await self._client.invoke(addr, request, remaining))
