"""Transactions against the dev cluster on a clock the test moves (asyncio and trio).

The brokers and the producers share one fake wall clock: a half message's age, which the
broker's check rounds go by, is ``broker now - bornTimestamp``, so both must read the same
time. Deadlines still run on the event loop's own clock.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import anyio
import pytest

from producer import Producer, TransactionProducer, TransactionState
from producer._producer import sending_port
from producer._transactions.checks import CheckFunction
from producer.testing import DevClusterThread, TransactionConfig

TOPIC = "TxTopic"
START_MS = 1_795_636_521_000  # the recording's epoch, give or take
TIMEOUT_MS = 1000
INTERVAL_MS = 1000
CHECK_MAX = 3
COMMIT, ROLLBACK, UNKNOWN = (
    TransactionState.COMMIT,
    TransactionState.ROLLBACK,
    TransactionState.UNKNOWN,
)


class SharedClock:
    """The brokers' ``clock_ms`` and the producers' :class:`~producer._client.clock.Clock`."""

    def __init__(self, ms: int = START_MS) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms

    def wall_ms(self) -> int:
        return self.ms

    def monotonic_ms(self) -> float:
        return anyio.current_time() * 1000.0


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def clock() -> SharedClock:
    return SharedClock()


@pytest.fixture
def cluster(clock: SharedClock) -> Iterator[DevClusterThread]:
    config = TransactionConfig(timeout_ms=TIMEOUT_MS, interval_ms=INTERVAL_MS, check_max=CHECK_MAX)
    with DevClusterThread(
        brokers=2, topics={TOPIC: 4}, clock_ms=clock, transactions=config, seed=0
    ) as c:
        yield c


def tx_producer(
    cluster: DevClusterThread,
    clock: SharedClock,
    check: CheckFunction,
    *,
    group: str = "TxGroup",
    seed: int = 1,
    topics: tuple[str, ...] = (),
    check_timeout_ms: float = 3000.0,
    **options: object,
) -> TransactionProducer:
    producer = Producer(
        group,
        cluster.namesrv_addr,
        routing="off",
        rng=random.Random(seed),
        clock=clock,
        batching=False,
        **options,  # type: ignore[arg-type]
    )
    return TransactionProducer(
        producer, check=check, topics=topics, check_timeout_ms=check_timeout_ms
    )


def check_round(cluster: DevClusterThread, clock: SharedClock, ms: int = INTERVAL_MS) -> None:
    """Move the shared clock by ``ms`` and let the brokers act on it now."""
    clock.ms += ms
    cluster.tick()


async def barrier(tx: TransactionProducer, broker: str) -> None:
    """Return once ``broker`` has read every frame we wrote to it so far: a heartbeat on the
    same connection is answered after the oneway END_TRANSACTIONs before it."""
    port = sending_port(tx.producer)
    addr = port.broker_addr(broker)
    if addr is not None:  # a broker we never wrote to needs no barrier
        await port.heartbeat(addr)
