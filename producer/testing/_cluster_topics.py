"""The dev cluster's topics and stored messages as a test arranges them: topics added
or deleted on brokers and the name server, a backlog stored in an instant, old messages
aged out (``drop_before``).

A mixin of :class:`~producer.testing.DevCluster`, which builds the servers.
"""

from __future__ import annotations

from collections.abc import Iterable

from producer.testing._broker import Broker
from producer.testing._cluster_view import ClusterView
from producer.testing._namesrv import NameServer
from producer.testing._store import TopicConfig, seed_batch

__all__ = ["TopicControl"]


class TopicControl(ClusterView):
    """Topics and messages of the cluster's brokers."""

    _namesrv: NameServer

    # -- topics and messages -------------------------------------------------------------

    def add_topic(
        self,
        name: str,
        queues: int,
        perm: int = 6,
        brokers: Iterable[str] | None = None,
        *,
        message_type: str = "NORMAL",
    ) -> None:
        """Create (or reconfigure) ``name`` with ``queues`` read/write queues on ``brokers``
        (default: all); routes show it at once. ``message_type`` is 5.x's topic attribute
        (``FIFO`` for an orderly topic), answered to GET_TOPIC_CONFIG."""
        for broker in self.broker_names if brokers is None else list(brokers):
            self._listener(broker)
            config = TopicConfig(name, queues, queues, perm, message_type=message_type)
            self._register(broker, config)

    def delete_topic(self, name: str) -> None:
        """``mqadmin deleteTopic``: off every broker and the name server (messages kept)."""
        for handler in self._handlers.values():
            if isinstance(handler, Broker):
                handler.store.topics.pop(name, None)
        self._namesrv.delete_topic(name)

    def _register(self, broker: str, config: TopicConfig) -> None:
        handler = self._handlers[broker]
        if isinstance(handler, Broker):
            handler.store.put_topic(config)
        self._namesrv.register_topic(broker, config)

    def backlog(self, topic: str, per_queue: int, *, tags: str = "seed") -> int:
        """Store ``per_queue`` small messages in every queue of ``topic`` on every broker,
        straight into the stores (a backlog in an instant; no producer, no sends).
        Returns how many were stored."""
        stored = 0
        for name in self.broker_names:
            store = self._broker(name).store
            config = store.topic(topic)
            for queue_id in range(config.write_queue_nums if config is not None else 0):
                stored += len(store.append(topic, queue_id, seed_batch(topic, per_queue, tags)))
        return stored

    def drop_before(
        self, topic: str, offset: int, *, broker: str | None = None, queue_id: int | None = None
    ) -> dict[tuple[str, int], int]:
        """Drop ``topic``'s messages below queue offset ``offset`` (on one broker / queue, or
        all), as a broker deleting its oldest commit-log files does: GET_MIN_OFFSET and pulls
        then report the new minimum, and a pull below it is answered OFFSET_MOVED.
        Returns ``{(broker, queue_id): new minimum}``."""
        moved: dict[tuple[str, int], int] = {}
        for name in [broker] if broker is not None else self.broker_names:
            store = self._broker(name).store
            config = store.topic(topic)
            queues = range(config.read_queue_nums) if config is not None else range(0)
            for queue in [queue_id] if queue_id is not None else queues:
                moved[(name, queue)] = store.drop_before(topic, queue, offset)
        return moved
