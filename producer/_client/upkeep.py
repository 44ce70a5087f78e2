"""The producer's background upkeep: route refresh, heartbeats, broker probes, unregister.

Each loop runs in the producer's task group and never raises: a failed refresh keeps the
old route, a failed heartbeat is retried on the next tick, a probe's outcome is fed to
the router like any attempt's.
"""

from __future__ import annotations

import logging

import anyio
from anyio.abc import TaskGroup

from latency_fault import Router
from producer._client.clock import Clock
from producer._client.remoting import RemotingClient
from producer._client.routes import RouteTable
from producer._remoting.command import RemotingCommand
from producer._remoting.producer_requests import (
    CLIENT_INNER_PRODUCER_GROUP,
    heartbeat_request,
    max_offset_request,
    parse_max_offset_response,
    unregister_client_request,
)
from producer._remoting.route import DEGRADED_ROUTE_POLL_MS
from producer._response_codes import ResponseCode
from producer.errors import BrokerError, ProducerError

log = logging.getLogger("producer")

HOUSEKEEPING_TIMEOUT_MS = 3000.0
FIRST_HEARTBEAT_DELAY_MS = 1000.0  # the Java client's first scheduled heartbeat


class Upkeep:
    def __init__(
        self,
        *,
        group: str,
        client_id: str,
        routes: RouteTable,
        client: RemotingClient,
        router: Router,
        clock: Clock,
        refresh_interval_ms: float,
        heartbeat_interval_ms: float,
        probe_interval_ms: float,
    ) -> None:
        self.group = group
        self.client_id = client_id
        self.routes = routes
        self.client = client
        self.router = router
        self.clock = clock
        self.refresh_interval_ms = refresh_interval_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.probe_interval_ms = probe_interval_ms

    def start(self, tg: TaskGroup) -> None:
        tg.start_soon(self._refresh_loop)
        tg.start_soon(self._heartbeat_loop, tg)
        tg.start_soon(self._probe_loop, tg)

    # -- routes -----------------------------------------------------------------------

    async def _refresh_loop(self) -> None:
        """Every ``refresh_interval_ms`` (Java's 30 s); while the router bans a broker (a
        master down, say), every ``DEGRADED_ROUTE_POLL_MS``: a promoted master's new
        address is written to within seconds of the route naming it."""
        tick_ms = min(self.refresh_interval_ms, DEGRADED_ROUTE_POLL_MS)
        waited_ms = 0.0  # slept, as before: an injected clock that stands still changes nothing
        while True:
            await anyio.sleep(tick_ms / 1000.0)
            waited_ms += tick_ms
            banned = self.router.banned(int(self.clock.monotonic_ms()))
            if waited_ms >= self.refresh_interval_ms or banned:
                waited_ms = 0.0
                await self.refresh_routes()

    async def refresh_routes(self) -> None:
        """Every cached route asked again; a master address seen for the first time (a
        promoted slave) is sent a heartbeat at once, so its transaction checks find us."""
        known = set(self.routes.broker_addrs().values())
        for topic in self.routes.topics():
            deadline = self.clock.monotonic_ms() + HOUSEKEEPING_TIMEOUT_MS
            try:
                await self.routes.refresh(topic, deadline)
            except ProducerError as exc:
                log.warning("route refresh of %r failed, keeping the old route: %s", topic, exc)
        self.router.retain(self.routes.broker_addrs())
        if known:
            for addr in sorted(set(self.routes.broker_addrs().values()) - known):
                await self.heartbeat(addr)

    # -- heartbeats -------------------------------------------------------------------

    async def _heartbeat_loop(self, tg: TaskGroup) -> None:
        await anyio.sleep(FIRST_HEARTBEAT_DELAY_MS / 1000.0)
        while True:
            for addr in set(self.routes.broker_addrs().values()):
                tg.start_soon(self.heartbeat, addr)
            await anyio.sleep(self.heartbeat_interval_ms / 1000.0)

    async def heartbeat(self, addr: str) -> None:
        request = heartbeat_request(self.client_id, [self.group])
        try:
            await self._call(addr, request)
        except ProducerError as exc:
            log.info("heartbeat to %s failed: %s", addr, exc)

    # -- probes (adaptive routing's half-open checks) ---------------------------------

    async def _probe_loop(self, tg: TaskGroup) -> None:
        while True:
            await anyio.sleep(self.probe_interval_ms / 1000.0)
            for broker in self.router.due_probes(int(self.clock.monotonic_ms())):
                tg.start_soon(self.probe, broker)

    async def probe(self, broker: str) -> None:
        target = self._probe_target(broker)
        if target is None:
            self.router.forget(broker)
            return
        addr, topic = target
        start = self.clock.monotonic_ms()
        try:
            response = await self._call(addr, max_offset_request(topic, 0))
            parse_max_offset_response(response)
        except ProducerError:
            self._record(broker, start, isolation=True)
        else:
            self._record(broker, start, isolation=False)

    def _probe_target(self, broker: str) -> tuple[str, str] | None:
        addr = self.routes.broker_addrs().get(broker)
        if addr is None:
            return None
        for topic in self.routes.topics():
            route = self.routes.cached(topic)
            if route is not None and broker in route.broker_addrs:
                return addr, topic
        return None

    def _record(self, broker: str, start_ms: float, *, isolation: bool) -> None:
        now = self.clock.monotonic_ms()
        self.router.record(broker, int(now - start_ms), isolation=isolation, now_ms=int(now))

    # -- shutdown ---------------------------------------------------------------------

    async def unregister_all(self) -> None:
        """UNREGISTER_CLIENT to every known broker, concurrently, errors ignored.

        Like Java's shutdown: once for our group and once for ``CLIENT_INNER_PRODUCER``,
        the group every heartbeat also announces.
        """
        async with anyio.create_task_group() as tg:
            for addr in set(self.routes.broker_addrs().values()):
                for group in (self.group, CLIENT_INNER_PRODUCER_GROUP):
                    tg.start_soon(self._unregister, addr, group)

    async def _unregister(self, addr: str, group: str) -> None:
        try:
            await self._call(addr, unregister_client_request(self.client_id, group))
        except ProducerError as exc:
            log.info("unregister of %s from %s failed: %s", group, addr, exc)

    async def _call(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        response = await self.client.invoke(addr, request, HOUSEKEEPING_TIMEOUT_MS)
        if response.code != ResponseCode.SUCCESS:
            raise BrokerError.for_code(response.code, response.remark)
        return response
