"""An order row and its event: both or neither, across crashes.

``python -m examples.transactions [--orders 40] [--seed 7]``

An order service writes each order as a row in SQLite (a temp file) inside the local
transaction of ``send_in_transaction`` and publishes the order's event through the
transaction, on the embedded dev cluster. A seeded ``random.Random`` picks, per order,
a fault: the process is killed right after the half message, inside ``execute`` before
or after the row's commit, or after END_TRANSACTION; the order is declined (ROLLBACK);
or the database fails (``execute`` raises: UNKNOWN, README T2). A killed process is
gone: its producer closes, its database connection too (rolling back what was not
committed), and a fresh process of the same producer group takes over. The halves the
dead left in doubt are checked back by the broker (T3, T4); the check function answers
from SQLite alone: the row exists -> COMMIT, else ROLLBACK.

The brokers and the producers share a clock the demo moves (no checks run while orders
are placed; then one step past the transaction timeout, and one check round settles
every half in doubt), so a run takes a second and repeats exactly for one seed.
A consumer counts the events per order. Then the VERDICT line: every committed row has
exactly one event consumed, no order without a row has any; ``OK`` and exit status 0
only then.
"""

from __future__ import annotations

import argparse
import contextlib
import enum
import logging
import random
import sqlite3
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from producer import Message, Producer, TransactionProducer, TransactionState
from producer.consumer import ConsumeStatus, PushConsumer, ReceivedMessage
from producer.testing import DevCluster, TransactionConfig

TOPIC = "OrderEvents"
GROUP = "OrderService"
TIMEOUT_MS = 1000  # the broker's transactionTimeOut: a half older than this is checked
INTERVAL_MS = 1000  # transactionCheckInterval
CHECK_MAX = 3
WAIT_S = 20.0  # bound on every wait: a lost event or check fails the run, never hangs it
COMMIT, ROLLBACK = TransactionState.COMMIT, TransactionState.ROLLBACK


class Fault(enum.Enum):
    NONE = "no fault"
    DECLINED = "declined: execute says ROLLBACK"
    DB_ERROR = "database error: execute raises"
    AFTER_HALF = "killed after the half message"
    BEFORE_ROW_COMMIT = "killed before the row commit"
    AFTER_ROW_COMMIT = "killed after the row commit"
    AFTER_END = "killed after END_TRANSACTION"


WEIGHTS = {
    Fault.NONE: 4,
    Fault.DECLINED: 1,
    Fault.DB_ERROR: 1,
    Fault.AFTER_HALF: 1,
    Fault.BEFORE_ROW_COMMIT: 1,
    Fault.AFTER_ROW_COMMIT: 2,
    Fault.AFTER_END: 1,
}
KILLS = frozenset({Fault.AFTER_HALF, Fault.BEFORE_ROW_COMMIT, Fault.AFTER_ROW_COMMIT})
KILLS |= {Fault.AFTER_END}


class Killed(BaseException):
    """The process dies here. Not an ``Exception``: ``send_in_transaction`` turns one
    raised by ``execute`` into UNKNOWN and writes it; a dead process writes nothing."""


class DemoClock:
    """The wall clock of brokers and producers (half messages' age), moved by the demo;
    deadlines keep the event loop's clock."""

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms

    def wall_ms(self) -> int:
        return self.ms

    def monotonic_ms(self) -> float:
        return anyio.current_time() * 1000.0


class Orders:
    """One process's connection to the order database."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = sqlite3.connect(path)

    @staticmethod
    def create(path: Path) -> None:
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE orders (id TEXT PRIMARY KEY, amount INTEGER NOT NULL)")

    def insert(self, order_id: str, amount: int, fault: Fault) -> None:
        with self.db:  # commits, or rolls back on any exception (Killed too)
            self.db.execute("INSERT INTO orders VALUES (?, ?)", (order_id, amount))
            if fault is Fault.BEFORE_ROW_COMMIT:
                raise Killed(fault.value)

    def exists(self, order_id: str) -> bool:
        """Whether the row is committed. Called by the check function, which runs on a
        worker thread (a plain function: T4), so it reads through a connection of its own
        (sqlite3 connections belong to the thread that made them)."""
        with contextlib.closing(sqlite3.connect(self.path)) as db:
            found = db.execute("SELECT 1 FROM orders WHERE id = ?", (order_id,)).fetchone()
        return found is not None

    def ids(self) -> set[str]:
        return {row[0] for row in self.db.execute("SELECT id FROM orders")}

    def close(self) -> None:
        self.db.close()  # what was not committed is rolled back, as when a process dies


#: The check-back: the order database and the message -> the transaction's state.
Check = Callable[[Orders, ReceivedMessage], TransactionState]


def check_from_database(orders: Orders, message: ReceivedMessage) -> TransactionState:
    """The source of truth is the row: it exists -> COMMIT, else ROLLBACK (the dead
    process's ``execute`` never committed it, and no one else will)."""
    return COMMIT if orders.exists(message.keys[0]) else ROLLBACK


def execute_order(
    orders: Orders, order_id: str, fault: Fault
) -> Callable[[Message], TransactionState]:
    """The local transaction of one order, failing as ``fault`` says."""

    def execute(message: Message) -> TransactionState:
        if fault is Fault.AFTER_HALF:
            raise Killed(fault.value)
        if fault is Fault.DECLINED:
            return ROLLBACK
        if fault is Fault.DB_ERROR:
            raise sqlite3.OperationalError("database is locked")
        orders.insert(order_id, int(message.body), fault)
        if fault is Fault.AFTER_ROW_COMMIT:
            raise Killed(fault.value)
        return COMMIT

    return execute


@dataclass
class Process:
    """One life of the order service: a transactional producer and a database connection."""

    tx: TransactionProducer
    orders: Orders

    @classmethod
    async def start(cls, namesrv: str, db: Path, clock: DemoClock, check: Check) -> Process:
        orders = Orders(db)
        producer = Producer(GROUP, namesrv, clock=clock, rng=random.Random(0))
        # topics=: heard by the brokers at once, so it is asked about the dead's halves
        tx = TransactionProducer(producer, check=lambda m: check(orders, m), topics=(TOPIC,))
        await tx.start()
        return cls(tx, orders)

    async def stop(self) -> None:
        await self.tx.aclose()
        self.orders.close()


@dataclass
class Report:
    faults: Counter[Fault] = field(default_factory=Counter)
    rows: set[str] = field(default_factory=set)
    events: Counter[str] = field(default_factory=Counter)
    checks: int = 0
    processes: int = 1
    lines: list[str] = field(default_factory=list)

    def verdict(self, orders: Sequence[str]) -> tuple[bool, str]:
        once = all(self.events[o] == 1 for o in self.rows)
        none = all(self.events[o] == 0 for o in orders if o not in self.rows)
        strays = set(self.events) - set(orders)
        ok = once and none and not strays
        text = (
            f"VERDICT: {'OK' if ok else 'FAILED'} - {len(self.rows)} committed rows "
            f"{'each consumed once' if once else 'NOT each consumed once'}; "
            f"{len(orders) - len(self.rows)} orders without a row, "
            f"{'none consumed' if none and not strays else 'SOME CONSUMED'}"
        )
        return ok, text


async def place_orders(
    cluster: DevCluster, clock: DemoClock, db: Path, plan: list[tuple[str, Fault]], check: Check
) -> tuple[Process, Report]:
    """Every order once, a fresh process after each kill; the last process is returned."""
    report = Report()
    process = await Process.start(cluster.namesrv_addr, db, clock, check)
    for n, (order_id, fault) in enumerate(plan):
        report.faults[fault] += 1
        message = Message(TOPIC, str(100 + n).encode(), keys=order_id)
        ended = "no END"
        try:
            result = await process.tx.send_in_transaction(
                message, execute_order(process.orders, order_id, fault)
            )
            ended = f"END {result.state.name}"
            if fault is Fault.AFTER_END:
                raise Killed(fault.value)
            report.lines.append(f"{order_id}  {fault.value:<38} {ended}")
        except Killed:
            report.lines.append(f"{order_id}  {fault.value:<38} {ended}; a new process")
            await process.stop()
            process = await Process.start(cluster.namesrv_addr, db, clock, check)
            report.processes += 1
    return process, report


async def settle(cluster: DevCluster, clock: DemoClock, process: Process) -> int:
    """Move the clock past the transaction timeout: one check round asks the live process
    about every half in doubt; return once the broker has all the answers."""
    doubtful = cluster.open_transactions()
    before = process.tx.checks.answered
    clock.ms += max(TIMEOUT_MS, INTERVAL_MS) + 1
    cluster.tick()
    with anyio.fail_after(WAIT_S):
        await process.tx.checks.wait_answered(before + len(doubtful))
        # END_TRANSACTION is oneway (nothing answers it): poll the brokers' state
        while cluster.open_transactions():  # noqa: ASYNC110 - the brokers' state
            await anyio.sleep(0.005)
    return len(doubtful)


def plan_orders(count: int, seed: int) -> list[tuple[str, Fault]]:
    rng = random.Random(seed)
    faults = rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()), k=count)
    return [(f"o-{n:04d}", fault) for n, fault in enumerate(faults, 1)]


async def run_demo(
    orders: int = 40, seed: int = 7, *, check: Check = check_from_database
) -> tuple[bool, Report]:
    """The whole demo; ``check`` is swapped by the test to prove a lying one is caught."""
    plan = plan_orders(orders, seed)
    clock = DemoClock(1_795_636_521_000)
    config = TransactionConfig(timeout_ms=TIMEOUT_MS, interval_ms=INTERVAL_MS, check_max=CHECK_MAX)
    with tempfile.TemporaryDirectory(prefix="tx-demo-") as tmp:
        db = Path(tmp) / "orders.sqlite3"
        Orders.create(db)
        async with DevCluster(
            brokers=2, topics={TOPIC: 4}, clock_ms=clock, transactions=config, seed=seed
        ) as cluster:
            report = await consume_while(cluster, clock, db, plan, check)
            report.rows = Orders(db).ids()
    ok, text = report.verdict([order_id for order_id, _ in plan])
    report.lines.append(text)
    return ok, report


async def consume_while(
    cluster: DevCluster, clock: DemoClock, db: Path, plan: list[tuple[str, Fault]], check: Check
) -> Report:
    """Place and settle the orders with a consumer counting events, until it has read
    every event the brokers hold."""
    events: Counter[str] = Counter()
    arrived = anyio.Event()

    def count(messages: list[ReceivedMessage]) -> ConsumeStatus:
        nonlocal arrived
        events.update(m.keys[0] for m in messages)
        arrived.set()
        arrived = anyio.Event()
        return ConsumeStatus.SUCCESS

    consumer = PushConsumer("OrderEventCounter", cluster.namesrv_addr, listener=count)
    consumer.subscribe(TOPIC, "*")
    async with consumer:
        process, report = await place_orders(cluster, clock, db, plan, check)
        try:
            report.checks = await settle(cluster, clock, process)
        finally:
            await process.stop()
        with anyio.fail_after(WAIT_S):
            while events.total() < len(cluster.messages(TOPIC)):
                await arrived.wait()
    report.events = events
    return report


def summary(report: Report) -> list[str]:
    def counts(faults: list[Fault]) -> str:
        return ", ".join(f"{f.name.lower()} {report.faults[f]}" for f in faults)

    return [
        f"faults: {counts([f for f in Fault if f not in KILLS])}",
        f"kills: {counts([f for f in Fault if f in KILLS])}",
        f"processes: {report.processes}; half messages settled by check-backs: {report.checks}",
        f"rows committed: {len(report.rows)}; events consumed: {report.events.total()}",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.transactions")
    parser.add_argument("--orders", type=int, default=40, help="orders to place (default 40)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the faults (default 7)")
    args = parser.parse_args(argv)
    # The faults are on purpose: the producer's warnings about them would bury the table.
    logging.getLogger("producer").setLevel(logging.CRITICAL)
    ok, report = anyio.run(run_demo, args.orders, args.seed, backend="asyncio")
    for line in report.lines[:-1] + summary(report) + report.lines[-1:]:
        print(line)
    if ok:  # the examples' convention (tests/test_examples.py): a run that ends well says OK
        print("OK")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
