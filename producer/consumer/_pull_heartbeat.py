"""A pull consumer's heartbeat, as Java's ``DefaultLitePullConsumerImpl`` sends it
(docs/consuming.md 1.9): ``CONSUME_ACTIVELY``, ``CLUSTERING``, the consumer's
subscriptions, to every broker of the routes it knows - at once when a route or the
assignment changes, then every 30 s. With it the broker knows the group and creates its
``%RETRY%`` topic. It runs in its own task, so a slow broker never holds up a pull.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

from producer._remoting.command import RemotingCommand
from producer._remoting.consumer_requests import ConsumeFromWhere, ConsumerData, MessageModel
from producer._remoting.request_codes import RequestCode
from producer._remoting.request_table import not_supported
from producer._remoting.subscription import Subscription
from producer.consumer._broker_api import BrokerApi

__all__ = ["HEARTBEAT_INTERVAL_MS", "PullHeartbeat", "serve_broker_requests"]

HEARTBEAT_INTERVAL_MS = 30_000.0  # Java's heartbeatBrokerInterval
_RESET_TO_START = {
    "latest": ConsumeFromWhere.LAST_OFFSET,
    "earliest": ConsumeFromWhere.FIRST_OFFSET,
}


class PullHeartbeat:
    """Heartbeats of one pull consumer: :meth:`run` in a task, :meth:`want` to send now."""

    def __init__(
        self,
        api: BrokerApi,
        auto_offset_reset: str,
        subscriptions: Callable[[], list[Subscription]],
    ) -> None:
        self._api = api
        self._start = _RESET_TO_START[auto_offset_reset]
        self._subscriptions = subscriptions
        self._wanted = anyio.Event()

    def __repr__(self) -> str:
        return f"PullHeartbeat({self._api.group}, wanted={self._wanted.is_set()})"

    def want(self) -> None:
        """Subscriptions or brokers changed: heartbeat at once."""
        self._wanted.set()

    def data(self) -> ConsumerData:
        """The heartbeat's group data (no ``subVersion``: each pull carries its own)."""
        subscriptions = tuple(self._subscriptions())
        return ConsumerData(
            self._api.group, MessageModel.CLUSTERING, self._start, subscriptions, {}, active=True
        )

    async def run(self) -> None:
        """Forever (cancel it): wait until wanted or 30 s passed, then heartbeat (a failure
        is logged by :meth:`BrokerApi.heartbeat`, never raised)."""
        while True:
            with anyio.move_on_after(HEARTBEAT_INTERVAL_MS / 1000.0):
                await self._wanted.wait()
            self._wanted = anyio.Event()
            await self._api.heartbeat(self.data())


def serve_broker_requests(address: str, request: RemotingCommand) -> RemotingCommand | None:
    """Requests a broker starts: NOTIFY_CONSUMER_IDS_CHANGED needs nothing (no rebalance)."""
    if request.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
        return None
    return not_supported(address, request)
