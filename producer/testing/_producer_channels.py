"""The producers a broker knows: each client's groups and the connection it heartbeats
on (``ProducerManager`` of 4.9.4), for transaction checks and pushed replies."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

from producer.testing._server import Channel

__all__ = ["ProducerChannels"]


@dataclass
class _Producer:
    channel: Channel
    groups: set[str] = field(default_factory=set)


class ProducerChannels:
    """``ProducerManager``: producer groups' clients and the connection each heartbeats on."""

    def __init__(self) -> None:
        self._clients: dict[str, _Producer] = {}
        self._turn = itertools.count(1)

    def heartbeat(self, client_id: str, groups: Iterable[str], channel: Channel) -> None:
        known = self._clients.get(client_id)
        if known is None or known.channel is not channel:
            known = self._clients[client_id] = _Producer(
                channel, set(known.groups if known else ())
            )
        known.groups.update(groups)

    def unregister(self, client_id: str, group: str) -> None:
        known = self._clients.get(client_id)
        if known is not None:
            known.groups.discard(group)
            if not known.groups:
                del self._clients[client_id]

    def channel_closed(self, channel: Channel) -> None:
        for client_id in [c for c, p in self._clients.items() if p.channel is channel]:
            del self._clients[client_id]

    def find(self, client_id: str) -> Channel | None:
        """The channel ``client_id`` heartbeats on (``ProducerManager.findChannel``)."""
        known = self._clients.get(client_id)
        return None if known is None else known.channel

    def groups(self) -> dict[str, set[str]]:
        """Client id -> its producer groups."""
        return {client_id: set(p.groups) for client_id, p in self._clients.items()}

    def available(self, group: str) -> Channel | None:
        """One open channel of ``group``, taking turns (``getAvailableChannel``)."""
        channels = [p.channel for p in self._clients.values() if group in p.groups]
        open_ones = [c for c in channels if c.is_open]
        if not open_ones:
            return None
        return open_ones[next(self._turn) % len(open_ones)]
