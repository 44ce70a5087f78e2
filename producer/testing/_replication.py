"""A slave copying its master, as 4.9.4's ``HAService`` and ``SlaveSynchronize`` do (no
I/O; time from the injected clock).

Theory of operation. A broker group is a master :class:`Broker` and a slave ``Broker``,
each with its own store and server; a :class:`Replica` links them and moves through:

    COPYING --master_gone()--> ORPHANED --master_back()--> COPYING
       \\________________promote()_______________/--> PROMOTED (the link is spent)

* The commit log (``HAConnection``: the slave reports its max physical offset, the master
  streams the bytes after it). At each :meth:`Replica.tick` while COPYING, the slave takes,
  in commit-log order, every master message that is due: stored at least ``lag_ms`` ago
  on the clock and not among the master's last ``lag_messages``. A copy is the master's
  record as it is (HA copies bytes): the same queue and commit-log offsets, store host and
  times, so a message id decoded from a pull on the slave names the master's address.
  Copies wake the slave's held pulls, as its reput service does.
* The rest (``SlaveSynchronize.syncAll``, every 10 s from the slave's start while it knows
  a master address): topic configs and consumer offsets, each with ``putAll`` - the
  master's entries overwrite the slave's, entries the master lacks stay. The first sync
  runs at the first tick (the real one 3 s after the slave starts). Subscription groups
  are not copied: every dev broker creates them on first use
  (``autoCreateSubscriptionGroup``), as the refmq kit's do. Delay offsets are not copied.
* ORPHANED: the master's process is gone; nothing is copied or synced; the slave serves
  what it has. ``master_back`` resumes copying at the HA client's next reconnect (it
  retries every 5 s from the kill) and syncing once the slave knows the master's address
  again: if the slave registered with the name server while the master was gone (at its
  start, 10 s later, then every 30 s: ``registerBrokerAll``), the answer cleared that
  address, and the syncs wait for its next registration. Checked on a real 4.9.4: an
  offset committed to the slave while its master was dead stayed 14 s after the master's
  return, and was overwritten by the master's older one 44 s after it.
* ``promote`` (5.x controller mode / DLedger electing the slave): the slave becomes a
  master of the same broker name at its own address - it accepts sends from its copied
  commit-log end, answers END_TRANSACTION and runs the transaction check on the halves it
  copied, and (5.x) takes over the old master's pops in flight (``PopSide.adopt``: they
  come back after their invisible time). Simpler than 5.x: no epoch or in-sync-replica
  set (with async copying, what the slave had not copied is lost, as with
  ``enableElectUncleanMaster``), no election delay, pops adopted as the old master held
  them (not as copied), and delayed or timer messages waiting on the old master are not
  delivered by the new one.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from producer.testing._broker import Broker

__all__ = ["SYNC_INTERVAL_MS", "Lag", "Replica", "ReplicaState"]

SYNC_INTERVAL_MS = 10_000  # BrokerController.handleSlaveSynchronize: every 10 s
REGISTER_FIRST_MS = 10_000  # BrokerController.start: registerBrokerAll 10 s after start,
REGISTER_PERIOD_MS = 30_000  # then every registerNameServerPeriod (30 s)
HA_RECONNECT_MS = 5_000  # HAClient.run: a failed connect waits 5 s


class ReplicaState(enum.Enum):
    COPYING = "copying"
    ORPHANED = "orphaned"
    PROMOTED = "promoted"


@dataclass(frozen=True)
class Lag:
    """How far a slave stays behind: messages stored less than ``ms`` ago, and the
    master's last ``messages``, are not copied yet."""

    ms: int = 0
    messages: int = 0

    def __post_init__(self) -> None:
        if self.ms < 0 or self.messages < 0:
            raise ValueError(f"a replication lag is not negative: {self}")


class Replica:
    """The link from ``master`` to ``slave`` (see the module's theory of operation)."""

    def __init__(
        self, master: Broker, slave: Broker, *, clock_ms: Callable[[], int], lag: Lag = Lag()
    ) -> None:
        self.master = master
        self.slave = slave
        self.lag = lag
        self.state = ReplicaState.COPYING
        self._clock_ms = clock_ms
        self._copied = 0  # how many of the master's log entries the slave holds
        self._start = clock_ms()  # the slave's start: its syncs and registrations keep time
        self._next_sync: int | None = None  # None: at the next tick
        self._killed_at = 0
        self._copy_from = 0  # no copy before this time (the HA client reconnecting)
        slave.role.slave = True

    def __repr__(self) -> str:
        return (
            f"Replica({self.master.name}, {self.state.value}, copied={self._copied}/"
            f"{len(self.master.store.log)}, lag={self.lag})"
        )

    @property
    def behind(self) -> int:
        """How many of the master's messages the slave has not copied yet."""
        return len(self.master.store.log) - self._copied

    def tick(self) -> None:
        """Copy what is due, and sync the metadata when a sync is due."""
        if self.state is not ReplicaState.COPYING:
            return
        now = self._clock_ms()
        if now >= self._copy_from:
            self._copy(now)
        if self._next_sync is None or now >= self._next_sync:
            self._next_sync = self._sync_after(now + 1)
            self.sync()

    def _copy(self, now: int) -> None:
        log = self.master.store.log
        end = len(log) - self.lag.messages
        last = self._copied
        while last < end and log[last].store_timestamp + self.lag.ms <= now:
            last += 1
        if last == self._copied:
            return
        if last < len(log):
            log_end = log[last].commit_log_offset
        else:
            log_end = self.master.store.commit_log_offset
        self.slave.store.copy_in(log[self._copied : last], log_end)
        self._copied = last

    def sync(self) -> None:
        """``SlaveSynchronize.syncAll`` (topic configs, consumer offsets): ``putAll``."""
        self.slave.store.topics.update(self.master.store.topics)
        self.slave.consume.offsets.put_all(self.master.consume.offsets)

    def master_gone(self) -> None:
        """The master's process died: the HA connection and the syncs stop."""
        if self.state is ReplicaState.COPYING:
            self.state = ReplicaState.ORPHANED
            self.slave.role.master_alive = False
            self._killed_at = self._clock_ms()

    def master_back(self) -> None:
        """The master runs again: copying resumes where it stopped at the HA client's next
        reconnect, syncing once the slave knows the master's address again (above)."""
        if self.state is not ReplicaState.ORPHANED:
            return
        self.state = ReplicaState.COPYING
        self.slave.role.master_alive = True
        now, killed = self._clock_ms(), self._killed_at
        retries = -(-(now - killed) // HA_RECONNECT_MS)  # ceil
        self._copy_from = killed + retries * HA_RECONNECT_MS
        cleared = self._registration_after(killed) < now  # registered while it was gone
        known_at = self._registration_after(now) if cleared else now
        self._next_sync = self._sync_after(known_at)

    def _registration_after(self, t: int) -> int:
        """The slave's first registration with the name server at or after ``t``."""
        first = self._start + REGISTER_FIRST_MS
        if t <= first:
            return self._start if t <= self._start else first
        return first + -(-(t - first) // REGISTER_PERIOD_MS) * REGISTER_PERIOD_MS

    def _sync_after(self, t: int) -> int:
        """The first sync tick at or after ``t`` (every 10 s from the slave's start)."""
        return self._start + -(-(t - self._start) // SYNC_INTERVAL_MS) * SYNC_INTERVAL_MS

    def promote(self) -> Broker:
        """The slave becomes the group's master (see the theory of operation)."""
        if self.state is ReplicaState.PROMOTED:
            raise RuntimeError(f"{self.master.name}'s slave was already promoted")
        self.state = ReplicaState.PROMOTED
        self.slave.role.slave = False
        self.slave.transactions.take_over()
        if self.slave.pop is not None and self.master.pop is not None:  # 5.x
            self.slave.pop.adopt(self.master.pop)
        return self.slave
