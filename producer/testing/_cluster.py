"""``DevCluster``: a name server and N brokers in this process, on asyncio."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
import logging
import random
import ssl
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from producer._lifecycle import AsyncLifecycle
from producer._remoting.delay_levels import (
    DEFAULT_DELAY_LEVELS,
    parse_delay_levels,
)
from producer._remoting.reply import reply_topic
from producer._remoting.request_codes import V4_9_4, V5_3_3
from producer.testing._acl import AccessControl, Account
from producer.testing._broker import Broker
from producer.testing._cluster_topics import TopicControl
from producer.testing._cluster_view import ClusterView
from producer.testing._faults import FaultSpec
from producer.testing._ha import HaControl
from producer.testing._namesrv import NameServer
from producer.testing._pull_sink import PullSinkBroker
from producer.testing._replication import Lag, Replica
from producer.testing._server import Listener
from producer.testing._sink import SinkBroker
from producer.testing._store import (
    AUTO_CREATE_TOPIC,
    DEFAULT_TOPIC_QUEUE_NUMS,
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    TopicConfig,
)
from producer.testing._tls import server_tls
from producer.testing._transaction_config import TransactionConfig

__all__ = ["DevCluster", "broker_name", "parse_topics"]


log = logging.getLogger("producer.testing")
#: ``broker_version=``: the code in every broker answer; 5.x adds the timer (README).
BROKER_VERSIONS = {"4.9.4": V4_9_4, "5.x": V5_3_3}
TICK_SECONDS = 0.02  # delayed delivery and long-poll timeouts are this precise


def broker_name(index: int) -> str:
    """``broker-a`` ... ``broker-z``, ``broker-aa``, ...: the names brokers get."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("a") + rest) + letters
    return f"broker-{letters}"


def parse_topics(text: str | list[str]) -> dict[str, int]:
    """``"Orders:4 Payments:2"`` (or a list of ``NAME:QUEUES``) -> ``{"Orders": 4, ...}``."""
    items = text.split() if isinstance(text, str) else [t for part in text for t in part.split()]
    topics: dict[str, int] = {}
    for item in items:
        name, sep, queues = item.rpartition(":")
        if not sep or not name or not queues.isdigit() or int(queues) < 1:
            raise ValueError(f"topic {item!r} is not NAME:QUEUES (e.g. Orders:4)")
        topics[name] = int(queues)
    return topics


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def _advertised(host: str) -> str:
    """The address clients are told: an IPv4 literal (wildcards and names -> loopback)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "127.0.0.1"
    if address.version != 4 or address.is_unspecified:
        return "127.0.0.1"
    return host


class DevCluster(HaControl, TopicControl, ClusterView, AsyncLifecycle):
    """A RocketMQ name server and ``brokers`` brokers speaking the 4.9.4 remoting protocol.

    ::

        async with DevCluster(brokers=2, topics={"Orders": 4}) as cluster:
            producer = Producer("group", namesrv=cluster.namesrv_addr)
            await cluster.set_fault("broker-a", FaultSpec(latency_ms=200))
            ...
            assert cluster.message_count("Orders") == 10

    ``topics`` maps topic -> write/read queues on every broker (see :meth:`add_topic` for
    other layouts). ``auto_create_topic`` is ``True`` / ``False`` for all brokers or the
    names of the brokers that have it (those serve ``TBW102`` and create topics on first
    send, like ``autoCreateTopicEnable``). Ports default to 0 (free ports), and stay fixed
    while the cluster runs: a broker brought back after ``down`` listens on its old port.
    ``seed`` seeds every server's own generator (fault draws, random queue choice).
    ``http_port`` also starts the HTTP control API on 127.0.0.1 (0 = any free port).
    ``sink=True`` makes brokers count sends without storing or checking them.
    ``pull_sink=True`` makes every created topic an endless backlog whose pulls are
    answered from a pre-built commit log (the consume benchmark's broker).
    ``acl`` (a list of :class:`~producer.testing.Account`) makes every broker check ACL
    signatures and topic permissions as a 4.9.4 broker with ``aclEnable=true`` does.
    ``clock_ms`` is the brokers' clock (store times, delayed delivery, long-poll timeouts,
    locks; wall-clock milliseconds by default): a test passes a fake one, moves it, and
    calls :meth:`tick` to have what fell due delivered at once. A long-polling pull is
    answered when a message arrives or exactly at its timeout; ``pull_hold_check_ms=5000``
    times held pulls out as 4.9.4's PullRequestHoldService does, at checks 5 s apart (up
    to 5 s late, the first check 5 s after start).
    ``broker_version="5.x"`` plays a 5.3.3 broker (its version code, timed delivery on
    ``clock_ms``); the default plays 4.9.4.
    ``transactions`` (a :class:`~producer.testing.TransactionConfig`) sets the brokers'
    transaction timeout, check interval and maximum checks, run on ``clock_ms``.
    ``property_filter=True`` plays brokers with ``enablePropertyFilter=true``: SQL92
    subscriptions are checked and filtered (off, as 4.9.4's default, they are refused).
    ``tls=True`` serves TLS everywhere with a certificate made at start for 127.0.0.1 /
    localhost (clients: :meth:`client_ssl_context`); or pass a server ``SSLContext``.
    ``slaves=1`` gives every broker a slave (brokerId 1, its own port) that copies its
    master's commit log ``replication_lag_ms`` / ``replication_lag_messages`` behind and
    answers as a 4.9.4 SLAVE (``slave_read_enable``: ``slaveReadEnable``; a pull that
    reads more than ``in_memory_bytes`` behind the log's end is then suggested the slave);
    :meth:`kill_master`, :meth:`restart_master` and :meth:`promote` fail a group.

    Runs on asyncio (including under ``anyio.run(..., backend="asyncio")``). For trio or
    synchronous code use :class:`~producer.testing.DevClusterThread`.
    """

    def __init__(
        self,
        brokers: int = 3,
        topics: Mapping[str, int] | None = None,
        *,
        host: str = "127.0.0.1",
        namesrv_port: int = 0,
        broker_ports: Iterable[int] | None = None,
        auto_create_topic: bool | Collection[str] = True,
        seed: int = 0,
        http_port: int | None = None,
        sink: bool = False,
        pull_sink: bool = False,
        cluster_name: str = "DefaultCluster",
        acl: Iterable[Account] | None = None,
        tls: bool | ssl.SSLContext = False,
        delay_levels: str = DEFAULT_DELAY_LEVELS,
        clock_ms: Callable[[], int] | None = None,
        pull_hold_check_ms: float | None = None,
        broker_version: str = "4.9.4",
        transactions: TransactionConfig | None = None,
        property_filter: bool = False,
        slaves: int = 0,
        slave_read_enable: bool = False,
        replication_lag_ms: int = 0,
        replication_lag_messages: int = 0,
        in_memory_bytes: int = 0,
    ) -> None:
        if slaves not in (0, 1):
            raise ValueError(f"slaves={slaves}: 0 or 1 slave per broker group")
        if slaves and (sink or pull_sink):
            raise ValueError("slaves=1 copies stored messages: not with sink= or pull_sink=")
        if broker_version not in BROKER_VERSIONS:
            raise ValueError(f"broker_version {broker_version!r}: one of {sorted(BROKER_VERSIONS)}")
        self.broker_version = broker_version
        if brokers < 1:
            raise ValueError(f"a cluster needs at least one broker, got {brokers}")
        names = [broker_name(i) for i in range(brokers)]
        ports = list(broker_ports) if broker_ports is not None else [0] * brokers
        if len(ports) != brokers:
            raise ValueError(f"{len(ports)} broker ports given for {brokers} brokers")
        self.host = host
        self.seed = seed
        self.sink = sink
        self.pull_sink = pull_sink
        self._delay_levels = parse_delay_levels(delay_levels)
        self._clock_ms = clock_ms or _wall_clock_ms
        self._pull_hold_check_ms = pull_hold_check_ms
        self._transactions = transactions
        self._property_filter = property_filter
        self._slave_read_enable = slave_read_enable
        self._in_memory_bytes = in_memory_bytes
        self._ticker: asyncio.Task[None] | None = None
        self.http_port = http_port
        self._access = None if acl is None else AccessControl(acl)
        self._tls = server_tls(tls)
        serving = None if self._tls is None else self._tls.context
        self._advertised_host = _advertised(host)
        self._namesrv = NameServer(cluster_name=cluster_name)
        self._namesrv_listener = Listener(
            "namesrv",
            self._namesrv,
            host=host,
            port=namesrv_port,
            rng=self._rng("namesrv"),
            ssl=serving,
        )
        self._handlers: dict[str, Broker | SinkBroker] = {}
        self._listeners: dict[str, Listener] = {}
        self._slaves: dict[str, Listener] = {}
        self._replicas: dict[str, Replica] = {}
        self._serving = serving
        self._http: Any = None
        self._started = False
        for name, port in zip(names, ports, strict=True):
            auto = (
                auto_create_topic
                if isinstance(auto_create_topic, bool)
                else name in auto_create_topic
            )
            handler = self._make_handler(name, auto, cluster_name)
            self._handlers[name] = handler
            self._listeners[name] = self._listener_for(name, handler, port)
            # TopicConfigManager: every 4.x broker creates its cluster's reply topic
            self._register(
                name, TopicConfig(reply_topic(cluster_name), 1, 1, PERM_READ | PERM_WRITE)
            )
            if auto:
                self._register(
                    name,
                    TopicConfig(
                        AUTO_CREATE_TOPIC,
                        DEFAULT_TOPIC_QUEUE_NUMS,
                        DEFAULT_TOPIC_QUEUE_NUMS,
                        PERM_READ | PERM_WRITE | PERM_INHERIT,
                    ),
                )
        for topic, queues in (topics or {}).items():
            self.add_topic(topic, queues)
        if slaves:
            lag = Lag(replication_lag_ms, replication_lag_messages)
            self._build_slaves(
                lambda name: self._listener_for(f"{name}-s", self._fresh_broker(name), 0), lag
            )

    def _listener_for(self, name: str, handler: Broker | SinkBroker, port: int) -> Listener:
        return Listener(
            name,
            handler,
            host=self.host,
            port=port,
            rng=self._rng(f"{name}/faults"),
            ssl=self._serving,
            on_close=handler.channel_closed if isinstance(handler, Broker) else None,
        )

    def _fresh_broker(self, name: str) -> Broker:
        master = self._handlers[name]
        assert isinstance(master, Broker)
        broker = self._make_handler(name, master.auto_create_topic, master.cluster_name)
        assert isinstance(broker, Broker)
        return broker

    def client_ssl_context(self) -> ssl.SSLContext:
        """An ``ssl=`` for producers: trusts the certificate ``tls=True`` generated."""
        if self._tls is None:
            raise RuntimeError("this cluster does not serve TLS: start it with tls=True")
        return self._tls.client_context()

    def _rng(self, purpose: str) -> random.Random:
        return random.Random(f"{self.seed}/{purpose}")

    def _make_handler(self, name: str, auto_create: bool, cluster_name: str) -> Broker | SinkBroker:
        if self.sink:
            return SinkBroker(name)
        kind = PullSinkBroker if self.pull_sink else Broker
        broker = kind(
            name,
            clock_ms=self._clock_ms,
            rng=self._rng(f"{name}/queues"),
            cluster_name=cluster_name,
            auto_create_topic=auto_create,
            on_topic_created=self._namesrv.register_topic,
            access=self._access,
            delay_levels=self._delay_levels,
            hold_check_ms=self._pull_hold_check_ms,
            version=BROKER_VERSIONS[self.broker_version],
            transactions=self._transactions,
            property_filter=self._property_filter,
        )
        broker.role.slave_read_enable = self._slave_read_enable
        broker.role.memory_bytes = self._in_memory_bytes
        return broker

    def __repr__(self) -> str:
        state = "running" if self._started else "stopped"
        return (
            f"DevCluster({state}, namesrv={self.namesrv_addr}, brokers={self.broker_names}, "
            f"messages={self.message_count()}, sink={self.sink})"
        )

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Start the name server and brokers on this asyncio loop; ``async with`` calls it."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "DevCluster runs on asyncio; from trio or sync code use DevClusterThread"
            ) from None
        if self._started:
            return
        self._started = True
        try:
            await self._namesrv_listener.start()
            for name, listener in self._listeners.items():
                await listener.start()
                address = f"{self._advertised_host}:{listener.port}"
                self._handlers[name].set_store_host(self._advertised_host, listener.port)
                self._namesrv.register_broker(name, address)
            await self._start_slaves()
            self._ticker = asyncio.get_running_loop().create_task(self._tick_forever())
            if self.http_port is not None:
                try:
                    from producer.testing._http import HttpControl  # aiohttp is an extra
                except ModuleNotFoundError as exc:
                    if exc.name != "aiohttp":
                        raise
                    raise ImportError(
                        "the dev cluster's HTTP control (http_port=) needs aiohttp: "
                        'pip install "rocketmq-aio-producer[devcluster]"'
                    ) from exc

                self._http = HttpControl(self, port=self.http_port)
                await self._http.start()
        except BaseException:
            await self.aclose()
            raise

    async def _tick_forever(self) -> None:
        """Drive the brokers' clocks: delayed delivery, long-poll timeouts, expiry."""
        while True:
            await asyncio.sleep(TICK_SECONDS)
            self.tick()

    def tick(self) -> None:
        """Act on the brokers' clocks now (delayed delivery, held pulls, expiry, transaction
        checks): every 20 ms by itself; a test moving a fake ``clock_ms`` calls it."""
        for name, handler in self._handlers.items():
            if isinstance(handler, Broker) and not self._listeners[name].killed:
                try:
                    handler.tick()
                except Exception:  # a bug must not stop time for the others
                    log.exception("%s: tick failed", handler.name)
        try:
            self._tick_replicas()
        except Exception:
            log.exception("replication tick failed")

    async def aclose(self) -> None:
        """Stop listening, close every connection, cancel pending delayed answers."""
        self._started = False
        ticker, self._ticker = self._ticker, None
        if ticker is not None:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
        if self._http is not None:
            http, self._http = self._http, None
            await http.aclose()
        for listener in self._listeners.values():
            await listener.aclose()
        await self._close_slaves()
        await self._namesrv_listener.aclose()

    # -- faults --------------------------------------------------------------------------

    async def set_fault(self, broker: str, spec: FaultSpec) -> None:
        """Replace ``broker``'s fault; takes effect for the next request or connection."""
        await self._listener(broker).set_fault(spec)

    async def clear_fault(self, broker: str) -> None:
        """Clear ``broker``'s fault: it answers normally again."""
        await self._listener(broker).set_fault(FaultSpec())

    def fault(self, broker: str) -> FaultSpec:
        """``broker``'s current fault."""
        return self._listener(broker).fault

    def lose_end_transaction(self, uniq_key: str | None = None, *, count: int = 1) -> None:
        """Lose the next ``count`` END_TRANSACTIONs of message ``uniq_key`` (of any message,
        when ``None``) on each broker, as a connection that breaks after the client wrote
        them: the client cannot tell, and the broker checks the transaction back."""
        for handler in self._handlers.values():
            if isinstance(handler, Broker):
                handler.transactions.lose_end(uniq_key, count)

    async def set_namesrv_fault(self, spec: FaultSpec) -> None:
        """Replace the name server's fault."""
        await self._namesrv_listener.set_fault(spec)

    async def set_namesrv_down(self, down: bool) -> None:
        """Stop (or resume) the name server listening; its other faults are kept."""
        spec = dataclasses.replace(self._namesrv_listener.fault, down=down)
        await self._namesrv_listener.set_fault(spec)

    @property
    def namesrv_fault(self) -> FaultSpec:
        """The name server's current fault."""
        return self._namesrv_listener.fault
