"""The dev cluster's replicated broker groups: a slave per master (``slaves=1``), and the
failures a test or a demo plays on them (``kill_master``, ``restart_master``,
``promote``). The copying itself is ``_replication.py``'s; the roles' answers ``_roles.py``'s.

``kill_master`` is a ``kill -9`` of the master's process: its server closes every
connection and stops listening, and the name server drops its brokerId 0 at once, as
``RouteInfoManager.onChannelDestroy`` does when the broker's channel closes (the route
then names only the slave, brokerId 1). ``restart_master`` starts it again on its port
with its store (nothing is lost from memory here: a real restart also reloads its
consumer offsets, which 4.9.4 flushes every 5 s). ``promote`` is 5.x's controller (or
DLedger) electing the slave: the slave's address becomes brokerId 0 of the same name.
"""

from __future__ import annotations

from collections.abc import Callable

from producer.testing._broker import Broker
from producer.testing._namesrv import NameServer
from producer.testing._replication import Lag, Replica, ReplicaState
from producer.testing._roles import MASTER_BROKER_ID, SLAVE_BROKER_ID
from producer.testing._server import Listener
from producer.testing._sink import SinkBroker

__all__ = ["HaControl"]


class HaControl:
    """The cluster's slaves and their failures; :class:`~producer.testing.DevCluster`
    builds them with :meth:`_build_slaves` and sets these fields."""

    _advertised_host: str
    _namesrv: NameServer
    _listeners: dict[str, Listener]
    _handlers: dict[str, Broker | SinkBroker]
    _clock_ms: Callable[[], int]
    _slaves: dict[str, Listener]
    _replicas: dict[str, Replica]

    def _build_slaves(self, make_slave: Callable[[str], Listener], lag: Lag) -> None:
        """A slave for every full broker, copying it with ``lag``."""
        for name, handler in self._handlers.items():
            assert isinstance(handler, Broker)  # DevCluster refuses slaves with sinks
            listener = make_slave(name)
            assert isinstance(listener.handler, Broker)
            self._slaves[name] = listener
            self._replicas[name] = Replica(
                handler, listener.handler, clock_ms=self._clock_ms, lag=lag
            )

    async def _start_slaves(self) -> None:
        for name, listener in self._slaves.items():
            await listener.start()
            assert isinstance(listener.handler, Broker)
            listener.handler.set_store_host(self._advertised_host, listener.port)
            self._namesrv.register_broker(name, self.slave_addr(name), SLAVE_BROKER_ID)

    async def _close_slaves(self) -> None:
        for listener in self._slaves.values():
            await listener.aclose()

    def _tick_replicas(self) -> None:
        for name, replica in self._replicas.items():
            replica.tick()
            if replica.state is not ReplicaState.PROMOTED and not self._slaves[name].killed:
                replica.slave.tick()  # a promoted one ticks as the group's master

    # -- queries -------------------------------------------------------------------------

    @property
    def slave_addrs(self) -> dict[str, str]:
        """Each replicated group's slave address, by broker name (empty without slaves)."""
        return {name: self.slave_addr(name) for name in self._slaves}

    def slave_addr(self, name: str) -> str:
        """The address of ``name``'s slave (brokerId 1; after a promotion, of the old
        master, which comes back as the slave)."""
        return f"{self._advertised_host}:{self._slave(name).port}"

    def replication(self, name: str) -> dict[str, object]:
        """``name``'s group: state (copying, orphaned, promoted), messages the slave has
        not copied yet, the lag, whether the master and the slave run, and how many
        messages the slave has answered to pulls (``slave_served``)."""
        replica = self._replica(name)
        return {
            "state": replica.state.value,
            "behind": replica.behind,
            "lag_ms": replica.lag.ms,
            "lag_messages": replica.lag.messages,
            "master": self._advertised(self._listeners[name]),
            "master_alive": not self._listeners[name].killed,
            "slave": self.slave_addr(name),
            "slave_alive": not self._slave(name).killed,
            "slave_served": replica.slave.consume.served,
        }

    def slave_consumer_offsets(self, name: str) -> dict[str, dict[int, int]]:
        """Committed consumer offsets on ``name``'s slave: ``{"topic@group": {queue: n}}``."""
        return self._replica(name).slave.consume.offsets.snapshot()

    def _advertised(self, listener: Listener) -> str:
        return f"{self._advertised_host}:{listener.port}"

    def _slave(self, name: str) -> Listener:
        try:
            return self._slaves[name]
        except KeyError:
            raise KeyError(
                f"{name!r} has no slave: start the cluster with slaves=1 "
                f"(brokers with slaves: {sorted(self._slaves)})"
            ) from None

    def _replica(self, name: str) -> Replica:
        self._slave(name)
        return self._replicas[name]

    # -- failures ------------------------------------------------------------------------

    def set_replication_lag(self, name: str, *, ms: int = 0, messages: int = 0) -> None:
        """From now on ``name``'s slave copies only messages stored at least ``ms`` ago
        (on the cluster's clock) and not among the master's last ``messages``."""
        self._replica(name).lag = Lag(ms, messages)

    async def kill_master(self, name: str) -> None:
        """``kill -9`` of ``name``'s master: connections closed, not listening, brokerId
        0 gone from the name server; the slave keeps serving what it copied."""
        replica = self._replica(name)
        listener = self._listeners[name]
        if listener.killed:
            return
        await listener.kill()
        self._namesrv.unregister_broker(name, MASTER_BROKER_ID)
        replica.master_gone()

    def expire_master(self, name: str) -> None:
        """The name server drops ``name``'s brokerId 0 as ``RouteInfoManager.
        scanNotActiveBroker`` does for a broker silent 120 s (4.9.4 and 5.x): with a
        ``hang`` fault on the master, a hung broker whose connections stay open."""
        self._namesrv.unregister_broker(name, MASTER_BROKER_ID)

    async def restart_master(self, name: str) -> None:
        """Start ``name``'s dead member again on its port. Not promoted: the master comes
        back with its store and the slave copies on. Promoted: the old master comes back
        as the new master's slave (brokerId 1), its log replaced by the new master's, as
        5.x controller mode truncates a returning master to the new one's log."""
        replica = self._replica(name)
        if replica.state is ReplicaState.PROMOTED:
            await self._rejoin_as_slave(name)
            return
        listener = self._listeners[name]
        if not listener.killed:
            return
        await listener.revive()
        self._namesrv.register_broker(name, self._advertised(listener), MASTER_BROKER_ID)
        replica.master_back()

    async def promote(self, name: str) -> str:
        """The slave of ``name`` becomes its master (5.x controller mode / DLedger); the
        old master is killed first if it still runs. Returns the new master's address."""
        replica = self._replica(name)
        await self.kill_master(name)
        new_master = replica.promote()
        old, new = self._listeners[name], self._slaves[name]
        self._listeners[name], self._slaves[name] = new, old
        self._handlers[name] = new_master
        self._namesrv.unregister_broker(name, SLAVE_BROKER_ID)
        self._namesrv.register_broker(name, self._advertised(new), MASTER_BROKER_ID)
        return self._advertised(new)

    async def _rejoin_as_slave(self, name: str) -> None:
        listener = self._slaves[name]
        if not listener.killed:
            return
        master = self._handlers[name]
        assert isinstance(master, Broker)
        slave = self._fresh_broker(name)
        slave.set_store_host(self._advertised_host, listener.port)
        listener.handler = slave
        listener.on_close = slave.channel_closed
        self._replicas[name] = Replica(master, slave, clock_ms=self._clock_ms)
        await listener.revive()
        self._namesrv.register_broker(name, self.slave_addr(name), SLAVE_BROKER_ID)

    def _fresh_broker(self, name: str) -> Broker:
        """A new full broker named ``name``, configured as the cluster's others."""
        raise NotImplementedError("DevCluster builds brokers")
