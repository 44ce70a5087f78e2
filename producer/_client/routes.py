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
from producer._remoting.producer_requests import parse_route_response, route_request
from producer._remoting.route import (
    TopicRouteData,
    build_publish_queues,
    default_topic_route,
    master_addresses,
)
from producer._remoting.send_header import DEFAULT_TOPIC, DEFAULT_TOPIC_QUEUE_NUMS
from producer._response_codes import ResponseCode
from producer._transport import parse_address
from producer._types.message import MessageQueue
from producer.errors import (
    InvalidOptionError,
    LocalProtocolError,
    NameServerError,
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


def parse_namesrv(namesrv: str | Sequence[str]) -> list[str]:
    """``"a:9876;b:9876"``, ``"a:9876"`` or a list -> a list of ``host:port`` addresses."""
    parts = namesrv.split(";") if isinstance(namesrv, str) else list(namesrv)
    addrs = [p.strip() for p in parts if isinstance(p, str) and p.strip()]
    if not addrs:
        raise InvalidOptionError(f"no name server address in namesrv={namesrv!r}")
    for addr in addrs:
        try:
            if "/" in addr:
                raise LocalProtocolError("a name server address has no scheme or path")
            parse_address(addr)
        except LocalProtocolError as exc:
            raise InvalidOptionError(
                f"namesrv address {addr!r} is not 'host:port' (e.g. '127.0.0.1:9876'): {exc}"
            ) from None
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
        auto_create_topic: bool = True,
    ) -> None:
        self.namesrv_addrs = list(namesrv_addrs)
        self._client = client
        self._clock = clock
        self._rng = rng
        self._cursor = rng.randrange(len(self.namesrv_addrs))
        self._request_timeout_ms = request_timeout_ms
        self._auto_create_topic = auto_create_topic
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

    async def queue_in_turn(
        self, topic: str, deadline_ms: float, turn: int
    ) -> tuple[MessageQueue, str]:
        """For a one-attempt sender (trace messages, replies): the ``turn``-th writable
        queue of ``topic`` (the caller counts its turns) and its broker's address; a route
        with none raises :class:`~producer.errors.NoRouteError`."""
        route = await self.get(topic, deadline_ms)
        queues = route.snapshot.queues
        if not queues:
            raise NoRouteError(topic, self.namesrv_addrs, "no writable queue")
        queue = queues[turn % len(queues)]
        return queue, route.broker_addrs[queue.broker_name]

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
        if isinstance(lookup.error, SendTimeout):  # a fresh one: each caller its own error
            raise _lookup_timeout(topic, lookup.error.last_error)
        if lookup.error is not None:
            raise lookup.error
        raise _lookup_timeout(topic, None)

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
        """Ask the name servers (in turn) for the route and cache it.

        A topic no name server knows is routed through ``TBW102`` when ``auto_create_topic``
        is on (as the Java producer does): a broker that auto-creates topics creates it on
        the first send, and the next refresh finds its own route.
        """
        try:
            data = await self.fetch(topic, deadline_ms)
        except NoRouteError as unknown:
            if not self._auto_create_topic or unknown.code != ResponseCode.TOPIC_NOT_EXIST:
                raise
            data = await self._default_route(topic, deadline_ms, unknown)
        queues = build_publish_queues(topic, data)
        if not queues:
            raise NoRouteError(
                topic, self.namesrv_addrs, f"the route has no writable queue. {_CREATE_HINT}"
            )
        route = TopicRoute(
            topic,
            PublishSnapshot(queues, self._rng, topic=topic),
            master_addresses(data),
        )
        self._routes[topic] = route
        return route

    async def _default_route(
        self, topic: str, deadline_ms: float, unknown: NoRouteError
    ) -> TopicRouteData:
        try:
            default = await self.fetch(DEFAULT_TOPIC, deadline_ms)
        except NoRouteError:
            raise NoRouteError(
                topic,
                self.namesrv_addrs,
                f"the topic does not exist and no broker auto-creates topics "
                f"({DEFAULT_TOPIC} has no route either). {_CREATE_HINT}",
                code=unknown.code,
            ) from unknown
        return default_topic_route(default, DEFAULT_TOPIC_QUEUE_NUMS)

    async def fetch(self, topic: str, deadline_ms: float) -> TopicRouteData:
        """The route from the first name server that answers; errors say which failed how."""
        failures: list[str] = []
        last: ProducerError | None = None
        for _ in range(len(self.namesrv_addrs)):
            addr = self.namesrv_addrs[self._cursor]
            remaining = deadline_ms - self._clock.monotonic_ms()
            if remaining <= 0:
                raise _lookup_timeout(topic, last)
            try:
                return await self._ask(addr, topic, min(remaining, self._request_timeout_ms))
            except TopicNotExistError as exc:
                raise NoRouteError(
                    topic,
                    self.namesrv_addrs,
                    f"{addr} answered {_sentence(exc.remark or 'TOPIC_NOT_EXIST')}. {_CREATE_HINT}",
                    code=exc.code,
                ) from exc
            except ProducerError as exc:
                failures.append(f"{addr}: {exc}")
                last = exc
                self._cursor = (self._cursor + 1) % len(self.namesrv_addrs)
        if deadline_ms - self._clock.monotonic_ms() <= 0:
            raise _lookup_timeout(topic, last)
        raise NameServerError(
            f"no name server answered as a RocketMQ name server "
            f"(check namesrv={';'.join(self.namesrv_addrs)}): " + "; ".join(failures)
        ) from last

    async def _ask(self, addr: str, topic: str, timeout_ms: float) -> TopicRouteData:
        response = await self._client.invoke(addr, route_request(topic), timeout_ms)
        return parse_route_response(response)

    def forget(self, topic: str) -> None:
        self._routes.pop(topic, None)

    def __repr__(self) -> str:
        return f"RouteTable(topics={sorted(self._routes)}, namesrv={self.namesrv_addrs})"


_CREATE_HINT = (
    "Create the topic: `mqadmin updateTopic -n <namesrv> -c <cluster> -t <topic> -w 4` on a "
    "real cluster, `DevCluster(topics={...})` or the pytest fixture's `topics=` in tests, "
    "or `python -m producer cluster --topic NAME:QUEUES`."
)


def _sentence(remark: str) -> str:
    """A broker's remark as one line with no end stop (a 4.9 name server's ends with
    ``\nSee http://rocketmq.apache.org/docs/faq/ for further details.``)."""
    return " ".join(remark.split()).rstrip(".")


def _lookup_timeout(topic: str, last_error: ProducerError | None) -> SendTimeout:
    return SendTimeout(
        f"send call timeout while looking up the route of {topic!r}", last_error=last_error
    )
