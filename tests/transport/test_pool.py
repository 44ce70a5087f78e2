"""ConnectionPool: one connection per address, shared connects, dropped when closed."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable
from types import TracebackType

import anyio
import pytest

from producer._transport import Connection, ConnectionPool, Connector
from producer.errors import ConnectError, LocalProtocolError, ProducerClosedError

from .fake_broker import FakeBroker, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_stray_tasks")]


class CountingConnector:
    """A real connector that counts connects; with ``gate`` set, the first one waits on it."""

    def __init__(self, inner: Connector) -> None:
        self.inner = inner
        self.calls = 0
        self.gate: anyio.Event | None = None

    async def connect(self, address: str, timeout_ms: float) -> Connection:
        self.calls += 1
        if self.gate is not None and self.calls == 1:
            await self.gate.wait()
        return await self.inner.connect(address, timeout_ms)

    async def __aenter__(self) -> CountingConnector:
        await self.inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self.inner.__aexit__(exc_type, exc, tb)


@pytest.fixture
def counting(make_connector: Callable[[], Connector]) -> CountingConnector:
    return CountingConnector(make_connector())


@pytest.fixture
async def pool(counting: CountingConnector) -> AsyncIterator[ConnectionPool]:
    async with ConnectionPool(counting, connect_timeout_ms=2000) as entered:
        yield entered


async def test_concurrent_callers_share_one_connection(
    broker: FakeBroker, pool: ConnectionPool, counting: CountingConnector
) -> None:
    got: list[Connection] = []

    async def get() -> None:
        got.append(await pool.get(broker.address))

    async with anyio.create_task_group() as group:
        for _ in range(20):
            group.start_soon(get)
    assert len(got) == 20 and all(c is got[0] for c in got)
    assert counting.calls == 1
    assert broker.connections == 1
    assert await pool.get(broker.address) is got[0]
    assert pool.addresses() == [broker.address] and len(pool) == 1
    assert broker.address in repr(pool)


async def test_closed_connection_is_dropped_and_replaced(
    broker: FakeBroker, pool: ConnectionPool, counting: CountingConnector
) -> None:
    first = await pool.get(broker.address)
    await first.aclose()
    assert len(pool) == 0
    second = await pool.get(broker.address)
    assert second is not first and not second.is_closed
    assert counting.calls == 2


async def test_connection_closed_by_the_peer_leaves_the_pool(
    broker: FakeBroker, pool: ConnectionPool
) -> None:
    first = await pool.get(broker.address)
    await wait_until(lambda: broker.connections == 1)
    await broker.drop_connections()
    await wait_until(lambda: len(pool) == 0)
    assert first.is_closed
    assert (await pool.get(broker.address)) is not first


async def test_failed_connect_is_shared_and_named(
    pool: ConnectionPool, counting: CountingConnector
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, not listening: refused
        address = f"127.0.0.1:{sock.getsockname()[1]}"
        counting.gate = anyio.Event()  # hold the first connect until all callers wait
        errors: list[ConnectError] = []

        async def get() -> None:
            with pytest.raises(ConnectError) as info:
                await pool.get(address)
            errors.append(info.value)

        async with anyio.create_task_group() as group:
            for _ in range(5):
                group.start_soon(get)
            await anyio.wait_all_tasks_blocked()
            counting.gate.set()
    assert len(errors) == 5
    assert all(address in str(e) for e in errors)
    assert counting.calls == 1
    assert len({id(e) for e in errors}) == 5  # a fresh error object per caller


async def test_cancelled_leader_hands_over_to_a_waiting_caller(
    broker: FakeBroker, pool: ConnectionPool, counting: CountingConnector
) -> None:
    counting.gate = anyio.Event()  # the first connect never returns by itself
    leader_scope = anyio.CancelScope()
    got: list[Connection] = []

    async def leader() -> None:
        with leader_scope:
            await pool.get(broker.address)

    async def follower() -> None:
        got.append(await pool.get(broker.address))

    async with anyio.create_task_group() as group:
        group.start_soon(leader)
        await wait_until(lambda: counting.calls == 1)
        group.start_soon(follower)
        await anyio.wait_all_tasks_blocked()
        leader_scope.cancel()
    assert counting.calls == 2
    assert len(got) == 1 and not got[0].is_closed


async def test_waiting_caller_keeps_its_own_budget(
    broker: FakeBroker, pool: ConnectionPool, counting: CountingConnector
) -> None:
    counting.gate = anyio.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(pool.get, broker.address)
        await wait_until(lambda: counting.calls == 1)
        with pytest.raises(ConnectError, match="timed out after 50 ms"):
            await pool.get(broker.address, timeout_ms=50)
        group.cancel_scope.cancel()


async def test_aclose_closes_everything_and_refuses_more(
    broker: FakeBroker, pool: ConnectionPool
) -> None:
    connection = await pool.get(broker.address)
    await pool.aclose()
    assert connection.is_closed and len(pool) == 0 and pool.is_closed
    with pytest.raises(ProducerClosedError):
        await pool.get(broker.address)


async def test_bad_address_fails_before_connecting(
    pool: ConnectionPool, counting: CountingConnector
) -> None:
    with pytest.raises(LocalProtocolError):
        await pool.get("not-an-address")
    assert counting.calls == 0


async def test_leaving_the_pool_closes_its_connector(
    broker: FakeBroker, counting: CountingConnector
) -> None:
    async with ConnectionPool(counting) as pool:
        connection = await pool.get(broker.address)
    assert connection.is_closed
    with pytest.raises(LocalProtocolError, match="async with"):
        await counting.inner.connect(broker.address, 1000)
