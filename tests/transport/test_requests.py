"""Requests and responses on one connection, on every backend (see conftest)."""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio
import pytest

from producer._remoting.command import OpaqueAllocator, RemotingCommand
from producer._remoting.request_codes import RequestCode
from producer._response_codes import ResponseCode
from producer._transport import (
    AnyioConnector,
    AsyncioConnector,
    Connector,
    default_connector,
)
from producer.errors import ConnectionLostError

from .fake_broker import FakeBroker, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_stray_tasks")]

CHECK_TRANSACTION_STATE = RequestCode.CHECK_TRANSACTION_STATE
NOTIFY_CONSUMER_IDS_CHANGED = RequestCode.NOTIFY_CONSUMER_IDS_CHANGED


def request(echo: str, **kwargs: object) -> RemotingCommand:
    return RemotingCommand(RequestCode.SEND_MESSAGE_V2, ext_fields={"echo": echo}, **kwargs)  # type: ignore[arg-type]


async def test_request_gets_its_response(broker: FakeBroker, connector: Connector) -> None:
    connection = await connector.connect(broker.address, 2000)
    response = await connection.request(request("a"), 5000)
    assert response.is_response
    assert response.field("echo") == "a"
    assert connection.pending_count == 0
    assert connection.address == broker.address
    assert "open" in repr(connection) and "pending=0" in repr(connection)
    await connection.aclose()
    assert connection.is_closed
    assert "closed" in repr(connection)
    await connection.aclose()  # idempotent


async def test_every_send_gets_a_fresh_opaque(broker: FakeBroker, connector: Connector) -> None:
    connection = await connector.connect(broker.address, 2000)
    command = request("same")
    await connection.request(command, 5000)
    first = command.opaque
    await connection.request(command, 5000)  # a re-send of the same command object
    assert command.opaque != first
    assert [r.opaque for r in broker.requests] == [first, command.opaque]


async def test_ten_thousand_in_flight_answered_out_of_order(
    broker: FakeBroker, connector: Connector, backend: str
) -> None:
    count = 10_000
    broker.answer, broker.release_at = "hold", count  # then all at once, shuffled
    connection = await connector.connect(broker.address, 2000)
    echoes: dict[int, str | None] = {}

    async def one(i: int) -> None:
        echoes[i] = (await connection.request(request(str(i)), 30_000)).field("echo")

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for i in range(count):
            group.start_soon(one, i)
    elapsed = time.perf_counter() - started

    assert echoes == {i: str(i) for i in range(count)}
    sent = [r.opaque for r in broker.requests]
    assert sorted(broker.answered) == sorted(sent)
    assert broker.answered != sent  # shuffled: far from the order they were sent in
    assert connection.stats.responses == count
    assert connection.pending_count == 0
    # The writer coalesced them: >= 100 frames per socket write on average, and
    # the server read them in far fewer chunks than frames.
    assert connection.stats.frames_written == count
    assert connection.stats.flushes <= count // 100
    assert broker.chunks < count // 10
    print(
        f"\n[{backend}] 10k in flight: {elapsed * 1000:.0f} ms, "
        f"{connection.stats.flushes} client writes, {broker.chunks} server reads"
    )


async def test_responses_resolve_in_the_order_the_server_chose(
    broker: FakeBroker, connector: Connector
) -> None:
    broker.answer = "hold"
    connection = await connector.connect(broker.address, 2000)
    finished: list[str] = []

    async def one(echo: str) -> None:
        response = await connection.request(request(echo), 30_000)
        finished.append(str(response.field("echo")))

    async with anyio.create_task_group() as group:
        for echo in "abcde":
            group.start_soon(one, echo)
        await broker.wait_requests(5)
        await broker.answer_held("reverse")
    assert sorted(finished) == list("abcde")
    assert connection.stats.responses == 5


async def test_oneway_is_written_and_not_waited_for(
    broker: FakeBroker, connector: Connector
) -> None:
    connection = await connector.connect(broker.address, 2000)
    command = request("fire")
    await connection.send_oneway(command)
    assert command.is_oneway
    assert connection.pending_count == 0
    await broker.wait_requests(1)
    assert broker.requests[0].is_oneway
    assert broker.requests[0].opaque == command.opaque
    # The connection carries on as usual, and oneway opaques are not in the table.
    assert (await connection.request(request("next"), 5000)).field("echo") == "next"
    assert connection.stats.dropped_responses == 0


async def test_oneway_on_a_closed_connection_raises(
    broker: FakeBroker, connector: Connector
) -> None:
    connection = await connector.connect(broker.address, 2000)
    await connection.aclose()
    with pytest.raises(ConnectionLostError) as info:
        await connection.send_oneway(request("late"))
    assert info.value.written is False


async def test_requests_from_the_server_are_answered_as_java_does_without_a_processor(
    broker: FakeBroker, connector: Connector
) -> None:
    broker.push_first = RemotingCommand(CHECK_TRANSACTION_STATE, opaque=77)
    connection = await connector.connect(broker.address, 2000)
    assert (await connection.request(request("x"), 5000)).field("echo") == "x"
    assert (await connection.request(request("y"), 5000)).field("echo") == "y"
    await wait_until(lambda: len(broker.client_answers) == 2)
    assert connection.stats.peer_requests == 2
    assert connection.stats.dropped_responses == 0
    assert len(broker.requests) == 2  # the answers are not requests
    for answer in broker.client_answers:
        assert (answer.opaque, answer.code) == (77, ResponseCode.REQUEST_CODE_NOT_SUPPORTED)
        assert answer.remark == f" request type {CHECK_TRANSACTION_STATE} not supported"


async def test_a_handler_serves_the_requests_the_peer_starts(
    broker: FakeBroker, make_connector: Callable[[], Connector]
) -> None:
    seen: list[tuple[str, int]] = []

    def handler(address: str, pushed: RemotingCommand) -> RemotingCommand:
        seen.append((address, pushed.code))
        return RemotingCommand(ResponseCode.SUCCESS, ext_fields={"served": "yes"})

    broker.push_first = RemotingCommand(NOTIFY_CONSUMER_IDS_CHANGED, opaque=5)
    backend_class = type(make_connector())  # this backend, built with a handler
    async with backend_class(handler=handler) as connector:  # type: ignore[call-arg]
        connection = await connector.connect(broker.address, 2000)
        assert (await connection.request(request("x"), 5000)).field("echo") == "x"
        await wait_until(lambda: len(broker.client_answers) == 1)
    assert seen == [(broker.address, NOTIFY_CONSUMER_IDS_CHANGED)]
    (answer,) = broker.client_answers
    assert (answer.opaque, answer.code, answer.field("served")) == (5, 0, "yes")


async def test_close_callback_runs_once(broker: FakeBroker, connector: Connector) -> None:
    connection = await connector.connect(broker.address, 2000)
    seen: list[object] = []
    connection.add_close_callback(seen.append)
    await connection.aclose()
    await connection.aclose()
    assert seen == [connection]
    connection.add_close_callback(seen.append)  # already closed: called at once
    assert seen == [connection, connection]


async def test_connector_exit_closes_its_connections(
    broker: FakeBroker, make_connector: type[Connector]
) -> None:
    async with make_connector() as connector:
        connection = await connector.connect(broker.address, 2000)
        assert "open" in repr(connection)
    assert connection.is_closed
    with pytest.raises(ConnectionLostError):
        await connection.request(request("after"), 1000)


# The loop each backend fixture runs on decides the connector; written out, not derived.
EXPECTED_CONNECTOR = {
    "asyncio": AsyncioConnector,
    "uvloop": AsyncioConnector,
    "anyio-on-asyncio": AsyncioConnector,  # the loop is asyncio's, so the fast backend
    "trio": AnyioConnector,
}


async def test_default_connector_matches_the_loop(backend: str) -> None:
    assert type(default_connector()) is EXPECTED_CONNECTOR[backend]


# The asyncio backend's promise (the anyio backend writes from a writer task of its own).
@pytest.mark.parametrize("backend", ["asyncio", "uvloop"])
async def test_a_turns_first_frame_is_written_before_the_caller_waits(
    broker: FakeBroker, connector: Connector
) -> None:
    assert isinstance(connector, AsyncioConnector)
    connection = await connector.connect(broker.address, 2000)
    before = connection.stats.frames_written
    first = connection.request(request("first"), 5000)
    second = connection.request(request("second"), 5000)
    first.send(None)  # runs up to its wait for the answer: no loop turn has passed
    assert connection.stats.frames_written == before + 1
    second.send(None)  # the same turn: queued behind the scheduled flush
    assert connection.stats.frames_written == before + 1
    first.close()
    second.close()
    await connection.aclose()


# The anyio backend writes from a task of its own: woken by a request, it may run before
# the caller's cancellation is delivered at its wait (trio runs woken tasks first), and
# would write a frame for a request that raised.
@pytest.mark.parametrize("backend", ["trio", "anyio-on-asyncio"])
async def test_a_caller_cancelled_before_its_request_queues_nothing(broker: FakeBroker) -> None:
    async with AnyioConnector(opaques=OpaqueAllocator(100)) as connector:
        connection = await connector.connect(broker.address, 2000)
        with anyio.CancelScope() as scope:
            scope.cancel()
            await connection.request(request("never"), 5000)
        assert scope.cancelled_caught
        response = await connection.request(request("after"), 5000)
        assert response.opaque == 100, "the cancelled request took an opaque: it was queued"
        await connection.aclose()
    assert [r.field("echo") for r in broker.requests] == ["after"]
