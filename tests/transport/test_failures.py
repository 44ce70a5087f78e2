"""How requests fail: lost connections, deadlines, flow control, garbage, cancellation."""

from __future__ import annotations

import anyio
import anyio.to_thread
import pytest

from producer._remoting.command import RemotingCommand
from producer._remoting.request_codes import RequestCode
from producer._transport import AsyncioConnection, Connection, Connector
from producer.errors import (
    ConnectionLostError,
    Fate,
    RemoteProtocolError,
    RequestTimeout,
)

from .fake_broker import FakeBroker, SilentPeer, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_stray_tasks")]

LONG_MS = 30_000  # a timeout no test waits for: if it fires, the test is wrong


def request(echo: str, body: bytes = b"") -> RemotingCommand:
    return RemotingCommand(RequestCode.SEND_MESSAGE_V2, ext_fields={"echo": echo}, body=body)


async def expect_lost(
    connection: Connection, command: RemotingCommand, into: list[ConnectionLostError]
) -> None:
    with pytest.raises(ConnectionLostError) as info:
        await connection.request(command, LONG_MS)
    into.append(info.value)


async def test_dropped_connection_fails_all_pending_at_once(
    broker: FakeBroker, connector: Connector
) -> None:
    broker.answer = "never"
    connection = await connector.connect(broker.address, 2000)
    closed: list[object] = []
    connection.add_close_callback(closed.append)
    errors: list[ConnectionLostError] = []
    async with anyio.create_task_group() as group:
        for i in range(50):
            group.start_soon(expect_lost, connection, request(str(i)), errors)
        await broker.wait_requests(50)  # all written and received
        dropped_at = anyio.current_time()
        await broker.drop_connections()
    took = anyio.current_time() - dropped_at

    assert len(errors) == 50
    assert all(e.written and e.fate is Fate.UNKNOWN for e in errors)
    assert "fate unknown" in str(errors[0])
    assert took < 5.0  # the drop, not the 30 s timeout, ended them
    assert connection.is_closed and closed == [connection]
    assert connection.pending_count == 0
    with pytest.raises(ConnectionLostError) as later:
        await connection.request(request("later"), LONG_MS)
    assert later.value.written is False
    assert later.value.fate is Fate.NOT_STORED


async def test_server_closing_after_n_requests(broker: FakeBroker, connector: Connector) -> None:
    broker.close_after = 3
    connection = await connector.connect(broker.address, 2000)
    assert (await connection.request(request("1"), LONG_MS)).field("echo") == "1"
    assert (await connection.request(request("2"), LONG_MS)).field("echo") == "2"
    with pytest.raises(ConnectionLostError) as info:
        await connection.request(request("3"), LONG_MS)
    assert info.value.written is True
    assert "closed by peer" in str(info.value)
    assert connection.is_closed


async def test_deadline_expires_promptly_and_alone(
    broker: FakeBroker, connector: Connector
) -> None:
    broker.answer = "hold"
    connection = await connector.connect(broker.address, 2000)
    timeout_ms = 100
    result: dict[str, object] = {}

    async def short() -> None:
        started = anyio.current_time()
        with pytest.raises(RequestTimeout) as info:
            await connection.request(request("short"), timeout_ms)
        result["took"] = anyio.current_time() - started
        result["error"] = info.value

    async def patient() -> None:
        result["patient"] = (await connection.request(request("patient"), LONG_MS)).field("echo")

    async with anyio.create_task_group() as group:
        group.start_soon(patient)
        await broker.wait_requests(1)
        await short()
        assert connection.pending_count == 1  # the patient one is untouched
        await broker.answer_held("fifo")  # the late answer to "short" comes first

    error = result["error"]
    assert isinstance(error, TimeoutError) and isinstance(error, RequestTimeout)
    assert error.fate is Fate.UNKNOWN  # it was written
    took = result["took"]
    assert isinstance(took, float)
    # never early; late only by scheduling (a loaded 2-core machine took 104 ms more), far
    # from the patient request's LONG_MS
    assert timeout_ms / 1000 - 1e-9 <= took < timeout_ms / 1000 + 0.4
    assert result["patient"] == "patient"
    assert connection.stats.dropped_responses == 1  # the late one, harmlessly
    assert connection.stats.timeouts == 1
    assert not connection.is_closed


async def test_many_deadlines_fire_in_their_own_order(
    broker: FakeBroker, connector: Connector
) -> None:
    broker.answer = "never"
    connection = await connector.connect(broker.address, 2000)
    fired: list[tuple[int, float]] = []
    started = anyio.current_time()

    async def one(timeout_ms: int) -> None:
        with pytest.raises(RequestTimeout):
            await connection.request(request(str(timeout_ms)), timeout_ms)
        fired.append((timeout_ms, anyio.current_time() - started))

    async with anyio.create_task_group() as group:
        for timeout_ms in (120, 40, 80, 20, 60):
            group.start_soon(one, timeout_ms)

    assert [t for t, _ in fired] == [20, 40, 60, 80, 120]
    for timeout_ms, took in fired:  # never early; late only by scheduling on a busy machine
        assert timeout_ms / 1000 - 1e-9 <= took < timeout_ms / 1000 + 0.2
    assert connection.pending_count == 0


async def test_zero_budget_fails_without_sending(broker: FakeBroker, connector: Connector) -> None:
    connection = await connector.connect(broker.address, 2000)
    with pytest.raises(RequestTimeout) as info:
        await connection.request(request("none"), 0)
    assert info.value.fate is Fate.NOT_STORED
    assert (await connection.request(request("some"), LONG_MS)).field("echo") == "some"
    assert [r.field("echo") for r in broker.requests] == ["some"]


async def test_requests_held_back_by_flow_control_are_unwritten(
    connector: Connector,
) -> None:
    peer = SilentPeer()
    try:
        connection = await connector.connect(peer.address, 2000)
        await _fill_and_close(connection, peer)
    finally:
        peer.close()


async def _fill_and_close(connection: Connection, peer: SilentPeer) -> None:
    # 15 MiB is far more than the kernel buffers take from a peer that does not read
    # (~4 MiB here), so the asyncio transport pauses / the anyio writer blocks in send.
    big = request("big", body=b"x" * (15 * 1024 * 1024))
    errors: list[ConnectionLostError] = []
    async with anyio.create_task_group() as group:
        group.start_soon(expect_lost, connection, big, errors)
        await wait_until(lambda: connection.stats.frames_written == 1)
        if isinstance(connection, AsyncioConnection):
            assert connection.is_writing_paused
        with pytest.raises(RequestTimeout) as timed_out:
            await connection.request(request("small"), 50)
        assert timed_out.value.fate is Fate.NOT_STORED
        assert "never written" in str(timed_out.value)

        group.start_soon(expect_lost, connection, request("queued"), errors)
        await wait_until(lambda: connection.pending_count == 2)
        group.start_soon(connection.aclose)
        await wait_until(lambda: len(errors) == 2)
        peer.reset()  # lets a graceful close that waits for the peer end at once

    assert connection.stats.frames_written == 1
    by_written = sorted((e.written, e.fate) for e in errors)
    assert by_written == [(False, Fate.NOT_STORED), (True, Fate.UNKNOWN)]
    assert all("closed locally" in str(e) for e in errors)


async def test_held_back_requests_go_out_when_the_peer_reads_again(
    connector: Connector,
) -> None:
    peer = SilentPeer()
    try:
        connection = await connector.connect(peer.address, 2000)
        echoes: list[str | None] = []

        async def one(command: RemotingCommand) -> None:
            echoes.append((await connection.request(command, LONG_MS)).field("echo"))

        async with anyio.create_task_group() as group:
            group.start_soon(one, request("big", body=b"x" * (15 * 1024 * 1024)))
            await wait_until(lambda: connection.stats.frames_written == 1)
            group.start_soon(one, request("queued"))
            await wait_until(lambda: connection.pending_count == 2)
            assert connection.stats.frames_written == 1  # held back, not lost
            await anyio.to_thread.run_sync(peer.answer, 2)
        assert sorted(echoes) == ["big", "queued"]  # type: ignore[type-var]
        assert connection.stats.frames_written == 2
        await connection.aclose()
    finally:
        peer.close()


async def test_garbage_closes_the_connection(broker: FakeBroker, connector: Connector) -> None:
    broker.answer, broker.garbage_after = "hold", 2
    connection = await connector.connect(broker.address, 2000)
    errors: list[ConnectionLostError] = []
    async with anyio.create_task_group() as group:
        group.start_soon(expect_lost, connection, request("held"), errors)
        await broker.wait_requests(1)
        group.start_soon(expect_lost, connection, request("trigger"), errors)

    assert len(errors) == 2
    for error in errors:
        assert error.written is True
        assert isinstance(error.__cause__, RemoteProtocolError)
        assert "protocol error" in str(error)
    assert connection.is_closed
    with pytest.raises(ConnectionLostError) as later:
        await connection.request(request("later"), LONG_MS)
    assert later.value.written is False
    assert isinstance(later.value.__cause__, ConnectionLostError)
    assert isinstance(later.value.__cause__.__cause__, RemoteProtocolError)


async def test_cancelled_request_leaves_no_entry(broker: FakeBroker, connector: Connector) -> None:
    broker.answer = "hold"
    connection = await connector.connect(broker.address, 2000)
    kept: list[str | None] = []

    async def waits(scope: anyio.CancelScope, echo: str) -> None:
        with scope:
            kept.append((await connection.request(request(echo), LONG_MS)).field("echo"))

    doomed, other = anyio.CancelScope(), anyio.CancelScope()
    async with anyio.create_task_group() as group:
        group.start_soon(waits, doomed, "doomed")
        group.start_soon(waits, other, "other")
        await broker.wait_requests(2)
        assert connection.pending_count == 2
        doomed.cancel()
        await wait_until(lambda: connection.pending_count == 1)
        await broker.answer_held()

    assert kept == ["other"]
    assert connection.pending_count == 0
    assert connection.stats.dropped_responses == 1
    assert not connection.is_closed


async def test_close_fails_pending_requests(broker: FakeBroker, connector: Connector) -> None:
    broker.answer = "never"
    connection = await connector.connect(broker.address, 2000)
    errors: list[ConnectionLostError] = []
    async with anyio.create_task_group() as group:
        group.start_soon(expect_lost, connection, request("pending"), errors)
        await broker.wait_requests(1)
        await connection.aclose()
    assert [e.written for e in errors] == [True]
    assert "closed locally" in str(errors[0])
