"""``DevClusterThread``: a :class:`DevCluster` on its own event loop in a background thread.

For synchronous code, trio, or any test style: every method is synchronous and safe to
call from any thread; it runs on the cluster's loop and waits for the result.
"""

from __future__ import annotations

import inspect
import ssl
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

from producer._transport.loop_thread import ClosesOnExit, LoopThread
from producer.testing._cluster import DevCluster
from producer.testing._faults import FaultSpec
from producer.testing._store import StoredMessage

__all__ = ["DevClusterThread"]

T = TypeVar("T")
_TIMEOUT = 30.0


class DevClusterThread(ClosesOnExit):
    """Same arguments as :class:`DevCluster` (all of them, passed through); use as
    ``with DevClusterThread(...) as c:``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Passed through whole, so a DevCluster option is written once and cannot drift.
        self.cluster = DevCluster(*args, **kwargs)
        self._thread: LoopThread | None = None

    def __repr__(self) -> str:
        alive = self._thread is not None and self._thread.is_alive()
        return f"DevClusterThread({'running' if alive else 'stopped'}, {self.cluster!r})"

    # -- lifecycle -----------------------------------------------------------------------

    def __enter__(self) -> DevClusterThread:
        self.start()
        return self

    def start(self) -> None:
        """Start the cluster on its own thread (a no-op when started); ``with`` calls it."""
        if self._thread is not None:
            return
        self._thread = LoopThread("rocketmq-dev-cluster")
        try:
            self._run(self.cluster.start)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop the cluster and its thread (idempotent)."""
        thread = self._thread
        if thread is None:
            return
        try:
            self._run(self.cluster.aclose)
        finally:
            thread.stop(_TIMEOUT)
            self._thread = None

    def _run(self, func: Callable[[], Awaitable[T]]) -> T:
        if self._thread is None:
            raise RuntimeError("the dev cluster thread is not running")

        async def call() -> T:
            return await func()

        return self._thread.submit(call()).result(_TIMEOUT)

    def _query(self, func: Callable[[], T]) -> T:
        async def call() -> T:
            return func()

        return self._run(call)

    # -- addresses -----------------------------------------------------------------------

    @property
    def namesrv_addr(self) -> str:
        """The name server's ``127.0.0.1:port``: pass it as ``namesrv=``."""
        return self.cluster.namesrv_addr

    @property
    def broker_names(self) -> list[str]:
        """The brokers' names (``broker-a``, ``broker-b``, ...)."""
        return self.cluster.broker_names

    def broker_addr(self, name: str) -> str:
        """The ``127.0.0.1:port`` broker ``name`` listens on."""
        return self.cluster.broker_addr(name)

    @property
    def http_url(self) -> str | None:
        """``http://127.0.0.1:<port>`` of the control API, when it runs."""
        return self.cluster.http_url

    # -- control and queries (run on the cluster's loop) ---------------------------------

    def set_fault(self, broker: str, spec: FaultSpec) -> None:
        """Replace ``broker``'s fault; takes effect for the next request or connection."""
        self._run(lambda: self.cluster.set_fault(broker, spec))

    def clear_fault(self, broker: str) -> None:
        """Clear ``broker``'s fault: it answers normally again."""
        self._run(lambda: self.cluster.clear_fault(broker))

    def fault(self, broker: str) -> FaultSpec:
        """``broker``'s current fault."""
        return self.cluster.fault(broker)

    def set_namesrv_fault(self, spec: FaultSpec) -> None:
        """Replace the name server's fault."""
        self._run(lambda: self.cluster.set_namesrv_fault(spec))

    def set_namesrv_down(self, down: bool) -> None:
        """Stop (or resume) the name server listening; its other faults are kept."""
        self._run(lambda: self.cluster.set_namesrv_down(down))

    def add_topic(
        self,
        name: str,
        queues: int,
        perm: int = 6,
        brokers: Iterable[str] | None = None,
        *,
        message_type: str = "NORMAL",
    ) -> None:
        """Create (or reconfigure) ``name`` with ``queues`` queues on ``brokers`` (default: all);
        routes show it at once."""
        names = None if brokers is None else list(brokers)
        self._query(
            lambda: self.cluster.add_topic(name, queues, perm, names, message_type=message_type)
        )

    def delete_topic(self, name: str) -> None:
        """``mqadmin deleteTopic``: off every broker and the name server."""
        self._query(lambda: self.cluster.delete_topic(name))

    def message_count(self, topic: str | None = None, *, broker: str | None = None) -> int:
        """Messages stored (counted, in sink mode), for one topic and/or broker."""
        return self._query(lambda: self.cluster.message_count(topic, broker=broker))

    def messages(self, topic: str | None = None) -> list[StoredMessage]:
        """Stored messages, broker by broker, each by queue then offset (none in sink mode)."""
        return self._query(lambda: self.cluster.messages(topic))

    def unique_msg_ids(self, topic: str) -> set[str]:
        """The distinct ``UNIQ_KEY`` values stored for ``topic`` (fewer than
        :meth:`message_count` means duplicates)."""
        return self._query(lambda: self.cluster.unique_msg_ids(topic))

    def clients(self, broker: str) -> dict[str, frozenset[str]]:
        """Client id -> producer groups, from the heartbeats ``broker`` has seen."""
        return self._query(lambda: self.cluster.clients(broker))

    def lose_end_transaction(self, uniq_key: str | None = None, *, count: int = 1) -> None:
        """:meth:`DevCluster.lose_end_transaction` on the cluster's loop."""
        self._query(lambda: self.cluster.lose_end_transaction(uniq_key, count=count))

    def transaction_checks(self, uniq_key: str | None = None) -> list[int]:
        """:meth:`DevCluster.transaction_checks` on the cluster's loop."""
        return self._query(lambda: self.cluster.transaction_checks(uniq_key))

    def open_transactions(self) -> set[str]:
        """UNIQ_KEYs of half messages still in doubt on any broker."""
        return self._query(self.cluster.open_transactions)

    def client_ssl_context(self) -> ssl.SSLContext:
        """An ``ssl=`` for producers: trusts the certificate ``tls=True`` generated."""
        return self.cluster.client_ssl_context()

    def backlog(self, topic: str, per_queue: int, *, tags: str = "seed") -> int:
        """Store ``per_queue`` small messages in every queue of ``topic`` on every broker, at
        once (no producer, no sends); returns how many were stored."""
        return self._query(lambda: self.cluster.backlog(topic, per_queue, tags=tags))

    def drop_before(
        self, topic: str, offset: int, *, broker: str | None = None, queue_id: int | None = None
    ) -> dict[tuple[str, int], int]:
        """Drop ``topic``'s messages below queue offset ``offset`` (on one broker / queue, or
        all), as a broker deleting old commit-log files does; returns the new minimums."""
        return self._query(
            lambda: self.cluster.drop_before(topic, offset, broker=broker, queue_id=queue_id)
        )

    def tick(self) -> None:
        """:meth:`DevCluster.tick` on the cluster's loop (after moving a fake clock)."""
        self._query(self.cluster.tick)

    def consumer_offsets(self, broker: str) -> dict[str, dict[int, int]]:
        """Committed consumer offsets on ``broker``: ``{"topic@group": {queue: offset}}``."""
        return self._query(lambda: self.cluster.consumer_offsets(broker))

    def consumers(self, broker: str) -> dict[str, dict[str, frozenset[str]]]:
        """The consumer groups ``broker`` knows by heartbeat: group -> client id -> topics."""
        return self._query(lambda: self.cluster.consumers(broker))

    def queue_locks(self, broker: str) -> dict[str, dict[str, str]]:
        """Orderly consumers' queue locks on ``broker``: ``{group: {queue: client_id}}``."""
        return self._query(lambda: self.cluster.queue_locks(broker))

    def held_pulls(self, broker: str) -> dict[str, dict[int, list[int]]]:
        """The pulls ``broker`` holds (long polling): ``{topic: {queue_id: [offset, ...]}}``."""
        return self._query(lambda: self.cluster.held_pulls(broker))

    def broker_status(self, name: str) -> dict[str, Any]:
        """A JSON-ready summary of one broker (what ``GET /brokers`` lists)."""
        return self._query(lambda: self.cluster.broker_status(name))

    # -- replicated groups (slaves=1) ----------------------------------------------------

    @property
    def slave_addrs(self) -> dict[str, str]:
        """Each replicated group's slave address, by broker name (empty without slaves)."""
        return self._query(lambda: self.cluster.slave_addrs)

    def slave_addr(self, name: str) -> str:
        """The address of ``name``'s slave (brokerId 1)."""
        return self._query(lambda: self.cluster.slave_addr(name))

    def slave_consumer_offsets(self, name: str) -> dict[str, dict[int, int]]:
        """Committed consumer offsets on ``name``'s slave (as :meth:`consumer_offsets`)."""
        return self._query(lambda: self.cluster.slave_consumer_offsets(name))

    def replication(self, name: str) -> dict[str, object]:
        """``name``'s group: state, messages not copied yet, lag, who runs."""
        return self._query(lambda: self.cluster.replication(name))

    def set_replication_lag(self, name: str, *, ms: int = 0, messages: int = 0) -> None:
        """``name``'s slave copies messages ``ms`` old and not among the last ``messages``."""
        self._query(lambda: self.cluster.set_replication_lag(name, ms=ms, messages=messages))

    def kill_master(self, name: str) -> None:
        """``kill -9`` of ``name``'s master: brokerId 0 leaves the route."""
        self._run(lambda: self.cluster.kill_master(name))

    def expire_master(self, name: str) -> None:
        """The name server drops ``name``'s brokerId 0 (a silent broker's 120 s expiry)."""
        self._query(lambda: self.cluster.expire_master(name))

    def restart_master(self, name: str) -> None:
        """Start ``name``'s dead member again (the master; after a promotion, as the slave)."""
        self._run(lambda: self.cluster.restart_master(name))

    def promote(self, name: str) -> str:
        """``name``'s slave becomes its master; returns the new master's address."""
        return self._run(lambda: self.cluster.promote(name))


# help() and IDEs show DevCluster's parameters, which are the ones accepted.
DevClusterThread.__init__.__signature__ = inspect.signature(DevCluster.__init__)  # type: ignore[attr-defined]
