"""Topic routes: looked up from the name servers, cached, refreshed, shared.

A route is fetched on the first send to a topic (concurrent senders share one lookup)
and refreshed every ``refresh_interval_ms`` by the producer's background task. Name
servers are tried in turn from a random start; a failing one moves the cursor on, so the
next lookup starts at the one that worked (Java's ``namesrvAddrChoosed``).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass

import anyio

from latency_fault import PublishSnapshot
from producer._client.clock import Clock
from producer._client.remoting import RemotingClient
from producer._remoting.message import MessageQueue
from producer._remoting.requests import parse_route_response, route_request
from producer._remoting.route import TopicRouteData, build_publish_queues, master_addresses
from producer.errors import (
    LocalProtocolError,
    NoRouteError,
    ProducerError,
    SendTimeout,
    TopicNotExistError,
)

log = logging.getLogger("producer")


@dataclass(frozen=True, slots=True)
class TopicRoute:
    """One fetched route: the publish snapshot and where each broker's master listens."""

    topic: str
    snapshot: PublishSnapshot[MessageQueue]
    broker_addrs: dict[str, str]
    fetched_ms: float


def parse_namesrv(namesrv: str | Sequence[str]) -> list[str]:
    """``"a:9876;b:9876"``, ``"a:9876"`` or a list -> a list of addresses."""
    parts = namesrv.split(";") if isinstance(namesrv, str) else list(namesrv)
    addrs = [p.strip() for p in parts if isinstance(p, str) and p.strip()]
    if not addrs:
        raise LocalProtocolError(f"no name server address in {namesrv!r}")
    return addrs


class _Lookup:
    __slots__ = ("done", "error", "route")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.route: TopicRoute | None = None
        self.error: ProducerError | None = None


class RouteTable:
    def __init__(
        self,
        namesrv_addrs: Sequence[str],
        client: RemotingClient,
        clock: Clock,
        rng: random.Random,
        *,
        request_timeout_ms: float = 3000.0,
    ) -> None:
        self.namesrv_addrs = list(namesrv_addrs)
        self._client = client
        self._clock = clock
        self._rng = rng
        self._cursor = rng.randrange(len(self.namesrv_addrs))
        self._request_timeout_ms = request_timeout_ms
        self._routes: dict[str, TopicRoute] = {}
        self._lookups: dict[str, _Lookup] = {}

    def cached(self, topic: str) -> TopicRoute | None:
        return self._routes.get(topic)

    def topics(self) -> list[str]:
        return list(self._routes)

    def broker_addrs(self) -> dict[str, str]:
        """Every known broker master, across all routes."""
        addrs: dict[str, str] = {}
        for route in self._routes.values():
            addrs.update(route.broker_addrs)
        return addrs

    async def get(self, topic: str, deadline_ms: float) -> TopicRoute:
        """The cached route, or a lookup (shared with concurrent callers) within the deadline."""
        route = self._routes.get(topic)
        if route is not None:
            return route
        lookup = self._lookups.get(topic)
        if lookup is None:
            return await self._lead_lookup(topic, deadline_ms)
        with anyio.move_on_after(max(deadline_ms - self._clock.monotonic_ms(), 0.0) / 1000.0):
            await lookup.done.wait()
        if lookup.route is not None:
            return lookup.route
        if lookup.error is not None:
            raise lookup.error
        raise SendTimeout(f"send call timeout while looking up the route of {topic!r}")

    async def _lead_lookup(self, topic: str, deadline_ms: float) -> TopicRoute:
        lookup = self._lookups[topic] = _Lookup()
        try:
            lookup.route = await self.refresh(topic, deadline_ms)
            return lookup.route
        except ProducerError as exc:
            lookup.error = exc
            raise
        finally:
            del self._lookups[topic]
            lookup.done.set()

    async def refresh(self, topic: str, deadline_ms: float) -> TopicRoute:
        """Ask the name servers (in turn) for the route and cache it."""
        data = await self._fetch(topic, deadline_ms)
        queues = build_publish_queues(topic, data)
        if not queues:
            raise NoRouteError(topic, self.namesrv_addrs, "the route has no writable queue")
        route = TopicRoute(
            topic,
            PublishSnapshot(queues, self._rng, topic=topic),
            master_addresses(data),
            self._clock.monotonic_ms(),
        )
        self._routes[topic] = route
        return route

    async def _fetch(self, topic: str, deadline_ms: float) -> TopicRouteData:
        errors: list[str] = []
        last: ProducerError | None = None
        for _ in range(len(self.namesrv_addrs)):
            addr = self.namesrv_addrs[self._cursor]
            remaining = deadline_ms - self._clock.monotonic_ms()
            if remaining <= 0:
                raise SendTimeout(f"send call timeout while looking up the route of {topic!r}")
            try:
                return await self._ask(addr, topic, min(remaining, self._request_timeout_ms))
            except TopicNotExistError as exc:
                raise NoRouteError(topic, self.namesrv_addrs, exc.remark or "") from exc
            except ProducerError as exc:
                errors.append(f"{addr}: {exc}")
                last = exc
                self._cursor = (self._cursor + 1) % len(self.namesrv_addrs)
        raise NoRouteError(topic, self.namesrv_addrs, "; ".join(errors)) from last

    async def _ask(self, addr: str, topic: str, timeout_ms: float) -> TopicRouteData:
        response = await self._client.invoke(addr, route_request(topic), timeout_ms)
        return parse_route_response(response)

    def forget(self, topic: str) -> None:
        self._routes.pop(topic, None)

    def __repr__(self) -> str:
        return f"RouteTable(topics={sorted(self._routes)}, namesrv={self.namesrv_addrs})"
