"""Timed delivery (5.x ``TIMER_DELIVER_MS`` / ``TIMER_DELAY_MS``): checked before a send.

A broker before 5.0 has no timer: it stores the message for delivery at once, silently.
So a timed message goes out only when every broker of its topic's route is known to be
5.x. A broker's version is in every response it sends (``RemotingCommand.version``);
the first timed message for a broker not heard from yet asks it once (GET_MAX_OFFSET,
the probe the producer already uses) and remembers the answer per address. A 4.x broker
raises :class:`TimedDeliveryUnsupportedError` before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable

from producer._client.clock import Clock
from producer._client.remoting import RemotingClient
from producer._client.routes import RouteTable
from producer._remoting.producer_requests import max_offset_request
from producer._remoting.request_codes import TIMER_BROKER_VERSION, version_name
from producer._remoting.validation import check_timer_window
from producer._send.owned_tasks import Spawn
from producer._send.send import Send
from producer._types.message import Message
from producer.errors import ProducerClosedError, ProducerError, TimedDeliveryUnsupportedError

__all__ = ["TimerGate"]


class TimerGate:
    """One per producer: the brokers' versions it has learned, by address."""

    __slots__ = ("_client", "_clock", "_max_delay_ms", "_routes", "versions")

    def __init__(
        self, routes: RouteTable, client: RemotingClient, clock: Clock, max_delay_ms: int
    ) -> None:
        self._routes = routes
        self._client = client
        self._clock = clock
        self._max_delay_ms = max_delay_ms
        self.versions: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"TimerGate(versions={self.versions})"

    async def check(self, message: Message, budget_ms: float, topic: str | None = None) -> None:
        """Raise unless ``message``'s time is valid and its topic's brokers are 5.x
        (``topic``: the name on the wire, when a namespace wraps it)."""
        check_timer_window(message, self._clock.wall_ms(), self._max_delay_ms)
        deadline = self._clock.monotonic_ms() + budget_ms
        topic = topic or message.topic
        route = await self._routes.get(topic, deadline)
        for name, addr in sorted(route.broker_addrs.items()):
            version = self.versions.get(addr)
            if version is None:
                remaining = max(deadline - self._clock.monotonic_ms(), 1.0)
                response = await self._client.invoke(addr, max_offset_request(topic, 0), remaining)
                version = self.versions[addr] = response.version
            if version < TIMER_BROKER_VERSION:
                raise TimedDeliveryUnsupportedError(name, addr, version_name(version))

    def then_send_async(self, send: Send, start: Callable[[Send], None], *, spawn: Spawn) -> None:
        """A timed ``send_async``: checked in a task the producer owns (``flush`` waits for
        it: the send holds its ticket), then ``start(send)`` starts it alone; a refusal
        finishes the send with it."""
        message, topic = send.job.message, send.job.prepared.topic
        budget_ms = send.plan.budget_ms

        async def check_then_send() -> None:
            try:
                await self.check(message, budget_ms, topic)
            except ProducerError as exc:
                send.finish(exc)
            else:
                start(send)

        def never_ran() -> None:
            send.finish(ProducerClosedError("producer closed before the send started"))

        spawn(check_then_send, if_never_ran=never_ran)
