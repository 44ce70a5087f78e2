"""What a :class:`~producer.testing.DevCluster` shows: its addresses, and the state of its
brokers (messages, offsets, locks, delay backlog) for tests and the HTTP control.

Read-only: the cluster (``_cluster.py``) builds, starts and changes the servers; this
mixin only looks at them.
"""

from __future__ import annotations

from typing import Any

from producer._remoting.delay_levels import DelayLevels
from producer.testing._broker import Broker
from producer.testing._server import Listener
from producer.testing._sink import SinkBroker
from producer.testing._store import StoredMessage

__all__ = ["ClusterView"]


class ClusterView:
    """The cluster's queries; :class:`~producer.testing.DevCluster` sets these fields."""

    _advertised_host: str
    _namesrv_listener: Listener
    _listeners: dict[str, Listener]
    _handlers: dict[str, Broker | SinkBroker]
    _http: Any
    _delay_levels: DelayLevels

    # -- addresses -----------------------------------------------------------------------

    @property
    def namesrv_addr(self) -> str:
        return f"{self._advertised_host}:{self._namesrv_listener.port}"

    @property
    def broker_names(self) -> list[str]:
        return list(self._listeners)

    def broker_addr(self, name: str) -> str:
        return f"{self._advertised_host}:{self._listener(name).port}"

    @property
    def http_url(self) -> str | None:
        """``http://127.0.0.1:<port>`` of the control API, when it runs."""
        return None if self._http is None else self._http.url

    # -- inspection ----------------------------------------------------------------------

    def message_count(self, topic: str | None = None, *, broker: str | None = None) -> int:
        """Messages stored (counted, in sink mode), for one topic and/or broker."""
        names = self.broker_names if broker is None else [broker]
        return sum(self._handler_count(name, topic) for name in names)

    def _handler_count(self, name: str, topic: str | None) -> int:
        handler = self._handlers[name]
        store = handler if isinstance(handler, SinkBroker) else handler.store
        return store.message_count(topic)

    def messages(self, topic: str | None = None) -> list[StoredMessage]:
        """Stored messages, broker by broker, each by queue then offset (none in sink mode)."""
        return [
            message
            for handler in self._handlers.values()
            if isinstance(handler, Broker)
            for message in handler.store.messages(topic)
        ]

    def unique_msg_ids(self, topic: str) -> set[str]:
        """The distinct ``UNIQ_KEY`` values stored for ``topic`` (fewer than
        :meth:`message_count` means duplicates)."""
        keys: set[str] = set()
        for handler in self._handlers.values():
            if isinstance(handler, Broker):
                keys |= handler.store.uniq_keys(topic)
        return keys

    def clients(self, broker: str) -> dict[str, frozenset[str]]:
        """Client id -> producer groups, from the heartbeats ``broker`` has seen."""
        handler = self._handlers[broker]
        if isinstance(handler, SinkBroker):
            return {}
        groups = handler.transactions.producers.groups()
        return {client: frozenset(names) for client, names in groups.items()}

    def open_transactions(self) -> set[str]:
        """UNIQ_KEYs of half messages in doubt on any broker: neither committed nor rolled
        back, nor dropped after the maximum number of checks (the checks ask about these)."""
        return {
            key
            for handler in self._handlers.values()
            if isinstance(handler, Broker)
            for key in handler.transactions.open_keys()
        }

    def transaction_checks(self, uniq_key: str | None = None) -> list[int]:
        """The CHECK_TRANSACTION_STATEs the brokers sent to a producer about message
        ``uniq_key`` (about any, when ``None``), each as its copy's
        ``TRANSACTION_CHECK_TIMES``, in the order sent."""
        return [
            times
            for handler in self._handlers.values()
            if isinstance(handler, Broker)
            for event, key, times in handler.transactions.log
            if event == "check" and uniq_key in (None, key)
        ]

    def consumer_offsets(self, broker: str) -> dict[str, dict[int, int]]:
        """Committed consumer offsets on ``broker``: ``{"topic@group": {queue: offset}}``."""
        return self._broker(broker).consume.offsets.snapshot()

    def consumers(self, broker: str) -> dict[str, dict[str, frozenset[str]]]:
        """The consumer groups ``broker`` knows by heartbeat: group -> client id -> topics."""
        return self._broker(broker).consume.registry.snapshot()

    def queue_locks(self, broker: str) -> dict[str, dict[str, str]]:
        """Orderly consumers' queue locks on ``broker``: ``{group: {queue: client_id}}``."""
        consume = self._broker(broker).consume
        return consume.locks.snapshot(consume.now_ms())

    def held_pulls(self, broker: str) -> dict[str, dict[int, list[int]]]:
        """The pulls ``broker`` holds (long polling), by the queue offset each asks for:
        ``{topic: {queue_id: [offset, ...]}}``."""
        return self._broker(broker).consume.held_pulls()

    @property
    def delay_levels(self) -> DelayLevels:
        """The brokers' delay levels (``messageDelayLevel``), as given to the constructor."""
        return self._delay_levels

    def delay_backlog(self, broker: str) -> dict[int, int]:
        """Messages waiting in ``broker``'s delay levels: ``{level: count}``."""
        return self._broker(broker).consume.schedule.backlog()

    def _broker(self, name: str) -> Broker:
        handler = self._handlers.get(name)
        if not isinstance(handler, Broker):
            raise KeyError(f"no full broker named {name!r} (sink brokers keep no consumer state)")
        return handler

    def broker_status(self, name: str) -> dict[str, Any]:
        """A JSON-ready summary of one broker (what ``GET /brokers`` lists)."""
        listener = self._listener(name)
        handler = self._handlers[name]
        by_topic = (
            dict(handler.by_topic)
            if isinstance(handler, SinkBroker)
            else handler.store.counts_by_topic()
        )
        return {
            "name": name,
            "address": self.broker_addr(name),
            "listening": listener.is_listening,
            "connections": listener.connection_count,
            "requests": listener.requests,
            "fault": listener.fault.to_json(),
            "messages": sum(by_topic.values()),
            "topics": by_topic,
        }

    def _listener(self, name: str) -> Listener:
        try:
            return self._listeners[name]
        except KeyError:
            raise KeyError(f"no broker {name!r}; brokers are {self.broker_names}") from None
