"""The push consumer's side of missing routes: ask, log once, and ask again soon.

``RouteWatch.refresh`` asks the name servers for each subscribed topic's route. The first
miss of a topic is a WARNING naming it (a topic that does not exist yet, or a typo, is
otherwise silent); later misses are DEBUG. ``RouteWatch.run`` asks again for the missing
routes on ``MissingRoutes``' schedule (every second at first, then backing off) and calls
``on_found`` when one appears, so the consumer heartbeats its new brokers, rebalances and
pulls at once instead of at its next 20 s rebalance.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable

import anyio

from producer._consume.route_wait import MissingRoutes
from producer._remoting.retry_topics import RETRY_PREFIX
from producer.consumer._broker_api import BrokerApi
from producer.errors import NameServerError, ProducerError

__all__ = ["RouteWatch"]

log = logging.getLogger("producer.consumer")


class RouteWatch:
    """Routes of one consumer's subscribed topics, and which of them are missing."""

    def __init__(self, group: str) -> None:
        self.group = group
        self.missing = MissingRoutes()
        self._missed = anyio.Event()  # set when a topic starts missing: run() wakes

    def __repr__(self) -> str:
        return f"RouteWatch({self.group!r}, missing={self.missing.topics})"

    async def refresh(
        self, api: BrokerApi, topics: Iterable[str], *, at_start: bool = False
    ) -> bool:
        """Ask for each topic's route; True if a route that was missing was found.
        ``at_start``, no name server answering raises NameServerError, as the producer's
        first send and the pull and simple consumers' first lookup do: a wrong ``namesrv``
        is a mistake to say at once, a name server gone later an outage to ride out."""
        found = False
        for topic in list(topics):
            try:
                await api.refresh(topic)
            except ProducerError as exc:
                if at_start and isinstance(exc, NameServerError):
                    raise
                self._note_miss(topic, exc)
            else:
                found |= self.missing.found(topic)
        return found

    def _note_miss(self, topic: str, error: ProducerError) -> None:
        if not self.missing.missed(topic):
            log.debug("%s: still no route for topic %r: %s", self.group, topic, error)
            return
        self._missed.set()
        if topic.startswith(RETRY_PREFIX):  # the broker creates it on our first heartbeat
            log.debug("%s: no route yet for %r: %s", self.group, topic, error)
            return
        log.warning(
            "%s: subscribed topic %r has no route yet, so there is nothing to consume; it is "
            "asked for again every second, then less often, and consumed as soon as it "
            "exists. %s",
            self.group,
            topic,
            error,
        )

    async def run(self, api: BrokerApi, on_found: Callable[[], Awaitable[None]]) -> None:
        """Ask for the missing routes on their schedule, for ever; ``on_found`` when one
        appears (run it in the consumer's task group: cancelled at close)."""
        while True:
            delay_ms = self.missing.delay_ms()
            if delay_ms is None:
                await self._missed.wait()
                self._missed = anyio.Event()
                continue
            await anyio.sleep(delay_ms / 1000.0)
            if await self.refresh(api, self.missing.topics):
                try:
                    await on_found()
                except ProducerError as exc:  # the next rebalance or heartbeat tries again
                    log.info("%s: after a route appeared: %s", self.group, exc)
