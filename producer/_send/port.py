"""The producer's internal sending interface: what a client built on a producer (the
transactional producer) may ask of it, in place of the producer's private members.

Every call but :meth:`ProducerPort.broker_name` needs the producer running on the
current event loop, and raises the producer's own error otherwise (not started, closed,
started on another loop).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from producer._client.routes import TopicRoute
from producer._remoting.command import OutgoingRequest, RemotingCommand
from producer._remoting.producer_requests import PreparedMessage
from producer._remoting.transaction import half_message
from producer._send.job import SendJob
from producer._send.plan import SendMode
from producer._send.running import Running
from producer._types.message import Message
from producer._types.send_result import SendResult
from producer.errors import ProducerError


class ProducerPort:
    """One producer's internal door: send a half message, heartbeat a broker, invoke a
    request or write a oneway one, look up routes and brokers, read the clock."""

    __slots__ = ("_open", "_prepare", "group")

    def __init__(
        self,
        group: str,
        *,
        open_running: Callable[[], Running],
        prepare: Callable[[Message], PreparedMessage],
    ) -> None:
        """``open_running``: the producer's running parts, or its error; ``prepare``: a
        message validated and encoded with a fresh UNIQ_KEY."""
        self.group = group
        self._open = open_running
        self._prepare = prepare

    async def send_half(self, message: Message, timeout_ms: float | None) -> SendResult:
        """``message`` stored as a half message of the group (sendMessageInTransaction
        clears its delay level: a half is never delayed), within its budget, retried only
        when the failure proves nothing was stored: a half left stored behind a timeout or
        a not-OK status would be checked, and a check function answering from the local
        state (execute committed) would commit it too - the event twice."""
        running = self._open()
        prepared = self._prepare(dataclasses.replace(message, delay_level=None))
        job = SendJob(half_message(prepared, self.group), message)
        budget = running.planner.budget_ms(timeout_ms)
        sent = await running.run(job, SendMode.SYNC, budget, certain_retries_only=True)
        assert sent is not None, "a sync send returns a result"
        return sent

    async def heartbeat(self, addr: str) -> None:
        """Announce the group to the broker at ``addr`` (a failure is logged, not raised)."""
        await self._open().upkeep.heartbeat(addr)

    async def invoke(
        self, addr: str, request: OutgoingRequest, timeout_ms: float
    ) -> RemotingCommand:
        """Send ``request`` to ``addr`` and wait for its response within ``timeout_ms``."""
        return await self._open().upkeep.client.invoke(addr, request, timeout_ms)

    async def write_oneway(self, addr: str, request: OutgoingRequest, timeout_ms: float) -> None:
        """Hand ``request`` to the socket of ``addr`` within ``timeout_ms``; no answer comes."""
        await self._open().upkeep.client.invoke_oneway(addr, request, timeout_ms)

    async def route(self, topic: str, deadline_ms: float) -> TopicRoute:
        """The route of ``topic`` (a wire name), cached or looked up by ``deadline_ms``."""
        return await self._open().upkeep.routes.get(topic, deadline_ms)

    def broker_addr(self, broker_name: str) -> str | None:
        """The master address of ``broker_name`` in the known routes, if any."""
        return self._open().upkeep.routes.broker_addrs().get(broker_name)

    def broker_name(self, addr: str) -> str:
        """The name of the broker at ``addr`` in the known routes; ``addr`` itself when none
        is known (or the producer is not running)."""
        try:
            known = self._open().upkeep.routes.broker_addrs()
        except ProducerError:
            return addr
        return next((name for name, a in known.items() if a == addr), addr)

    def monotonic_ms(self) -> float:
        """The producer's monotonic clock, in ms."""
        return self._open().upkeep.clock.monotonic_ms()

    def __repr__(self) -> str:
        return f"ProducerPort({self.group!r})"
