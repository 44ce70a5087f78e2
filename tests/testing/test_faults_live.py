"""Each fault kind against a running cluster, over raw frames."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import anyio
import anyio.lowlevel
import pytest

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_decoder import decode_frame
from producer._remoting.producer_requests import heartbeat_request
from producer._remoting.request_codes import RequestCode
from producer._response_codes import ResponseCode
from producer.errors import RemoteProtocolError
from producer.testing import DevCluster, FaultSpec
from tests.helpers.loops import anyio_backend  # noqa: F401 - asyncio and uvloop
from tests.testing.rawclient import RawClient, make_request, send_fields

pytestmark = pytest.mark.anyio


@pytest.fixture
async def cluster() -> AsyncIterator[DevCluster]:
    async with DevCluster(brokers=2, topics={"Orders": 4}, seed=11) as cluster:
        yield cluster


def send(queue_id: int = 0) -> RemotingCommand:
    return make_request(RequestCode.SEND_MESSAGE_V2, send_fields("Orders", queue_id), body=b"x")


def heartbeat() -> RemotingCommand:
    request = make_request(RequestCode.HEART_BEAT)
    request.body = heartbeat_request("c@1", ["G"]).body
    return request


async def seen(cluster: DevCluster, broker: str, requests: int) -> None:
    """Wait (yielding to the loop, no timers) until ``broker`` has read ``requests``."""
    with anyio.fail_after(5):
        while cluster.broker_status(broker)["requests"] < requests:
            await anyio.lowlevel.checkpoint()


# -- latency ----------------------------------------------------------------------------


async def test_latency_delays_the_answer_by_at_least_the_fixed_part(cluster: DevCluster) -> None:
    await cluster.set_fault("broker-a", FaultSpec(latency_ms=80, jitter_ms=20))
    async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
        started = time.monotonic()
        response = await client.request(send())
    assert time.monotonic() - started >= 0.08
    assert response.code == ResponseCode.SUCCESS


async def test_a_slow_answer_does_not_hold_back_later_ones_on_the_connection(
    cluster: DevCluster,
) -> None:
    async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
        await cluster.set_fault("broker-a", FaultSpec(latency_ms=300))
        slow = send(1)
        await client.send(slow)
        await seen(cluster, "broker-a", 1)
        await cluster.clear_fault("broker-a")
        fast = send(2)
        await client.send(fast)
        first, second = await client.read(), await client.read()
    assert (first.opaque, second.opaque) == (fast.opaque, slow.opaque)  # out of order
    assert cluster.message_count("Orders") == 2  # stored at once, answered late


async def test_latency_on_one_broker_does_not_block_other_connections(cluster: DevCluster) -> None:
    tasks_before = asyncio.all_tasks()
    await cluster.set_fault("broker-a", FaultSpec(latency_ms=60_000))
    async with (
        await RawClient.connect(cluster.broker_addr("broker-a")) as slow_client,
        await RawClient.connect(cluster.broker_addr("broker-b")) as fast_client,
    ):
        await slow_client.send(send())
        await seen(cluster, "broker-a", 1)
        answer = await fast_client.request(send())
        assert answer.code == ResponseCode.SUCCESS
        await cluster.aclose()  # cancels the pending answer and closes the connection
        assert await slow_client.at_eof()
    assert asyncio.all_tasks() <= tasks_before  # nothing left running


async def test_latency_probability_is_seeded() -> None:
    async def delayed_opaques(seed: int) -> list[int]:
        spec = FaultSpec(latency_ms=30, latency_probability=0.5)
        async with DevCluster(brokers=1, topics={"Orders": 4}, seed=seed) as cluster:
            await cluster.set_fault("broker-a", spec)
            async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
                requests = [send() for _ in range(12)]
                for request in requests:
                    await client.send(request)
                order = [(await client.read()).opaque for _ in requests]
        base = requests[0].opaque
        return [o - base for o in order]

    first = await delayed_opaques(5)
    assert sorted(first) == list(range(12)) and first != list(range(12))
    assert first == await delayed_opaques(5)


# -- error code and store status --------------------------------------------------------


async def test_error_code_with_probability_is_seeded_and_stores_nothing() -> None:
    async def codes(seed: int) -> tuple[list[int], int]:
        async with DevCluster(brokers=1, topics={"Orders": 4}, seed=seed) as cluster:
            await cluster.set_fault("broker-a", FaultSpec(error_code=2, error_probability=0.5))
            async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
                answers = [await client.request(send()) for _ in range(20)]
                beat = await client.request(heartbeat())
            assert beat.code == ResponseCode.SUCCESS  # only sends get the error
            for answer in answers:
                if answer.code == ResponseCode.SYSTEM_BUSY:
                    assert answer.ext_fields == {"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
                    assert (
                        answer.remark
                        == "[REJECTREQUEST]system busy, start flow control for a while"
                    )
            return [a.code for a in answers], cluster.message_count("Orders")

    sequence, stored = await codes(1)
    assert set(sequence) == {0, 2}
    assert stored == sequence.count(0)
    assert await codes(1) == (sequence, stored)
    assert (await codes(2))[0] != sequence


async def test_store_status_answers_non_ok_but_stores(cluster: DevCluster) -> None:
    await cluster.set_fault("broker-a", FaultSpec(store_status=ResponseCode.FLUSH_DISK_TIMEOUT))
    async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
        answer = await client.request(send())
    assert answer.code == ResponseCode.FLUSH_DISK_TIMEOUT
    assert set(answer.ext_fields or {}) == {
        "msgId",
        "queueId",
        "queueOffset",
        "MSG_REGION",
        "TRACE_ON",
    }
    assert cluster.message_count("Orders") == 1


# -- connection faults ------------------------------------------------------------------


async def test_down_refuses_connects_closes_connections_and_comes_back_on_the_same_port(
    cluster: DevCluster,
) -> None:
    address = cluster.broker_addr("broker-a")
    async with await RawClient.connect(address) as client:
        await cluster.set_fault("broker-a", FaultSpec(down=True))
        assert await client.at_eof()
    with pytest.raises(ConnectionRefusedError):
        await RawClient.connect(address)
    assert cluster.broker_status("broker-a")["listening"] is False
    await cluster.clear_fault("broker-a")
    assert cluster.broker_addr("broker-a") == address
    async with await RawClient.connect(address) as client:
        assert (await client.request(send())).code == ResponseCode.SUCCESS


async def test_blackhole_reads_and_never_answers(cluster: DevCluster) -> None:
    async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
        await cluster.set_fault("broker-a", FaultSpec(blackhole=True))
        lost = send()
        await client.send(lost)
        await seen(cluster, "broker-a", 1)
        await cluster.clear_fault("broker-a")
        answered = send()
        await client.send(answered)
        assert (await client.read()).opaque == answered.opaque
    assert cluster.message_count("Orders") == 1


async def test_reset_aborts_the_connection_when_a_request_arrives(cluster: DevCluster) -> None:
    await cluster.set_fault("broker-a", FaultSpec(reset=True))
    async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
        await client.send(send())
        with pytest.raises((ConnectionResetError, anyio.IncompleteRead, EOFError, OSError)):
            await client.read_raw()
    assert cluster.message_count() == 0


async def test_garbage_answers_do_not_decode(cluster: DevCluster) -> None:
    await cluster.set_fault("broker-b", FaultSpec(garbage=True))
    async with await RawClient.connect(cluster.broker_addr("broker-b")) as client:
        await client.send(send())
        raw = await client.read_raw()
    with pytest.raises(RemoteProtocolError):
        decode_frame(raw)


async def test_namesrv_down_and_up(cluster: DevCluster) -> None:
    address = cluster.namesrv_addr
    await cluster.set_namesrv_down(True)
    with pytest.raises(ConnectionRefusedError):
        await RawClient.connect(address)
    await cluster.set_namesrv_down(False)
    async with await RawClient.connect(address) as client:
        route = make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Orders"})
        assert (await client.request(route)).code == ResponseCode.SUCCESS


async def test_namesrv_latency_fault_survives_down_and_up(cluster: DevCluster) -> None:
    await cluster.set_namesrv_fault(FaultSpec(latency_ms=50))
    await cluster.set_namesrv_down(True)
    await cluster.set_namesrv_down(False)
    assert cluster.namesrv_fault == FaultSpec(latency_ms=50)
    async with await RawClient.connect(cluster.namesrv_addr) as client:
        started = time.monotonic()
        route = make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Orders"})
        assert (await client.request(route)).code == ResponseCode.SUCCESS
    # libuv's timers tick in whole milliseconds from a cached loop time: uvloop may fire
    # a 50 ms delay up to a millisecond early by this clock.
    assert time.monotonic() - started >= 0.048


async def test_fault_set_before_start_applies_from_the_start() -> None:
    cluster = DevCluster(brokers=1)
    await cluster.set_fault("broker-a", FaultSpec(down=True))
    async with cluster:
        with pytest.raises(ConnectionRefusedError):
            await RawClient.connect(cluster.broker_addr("broker-a"))
        assert cluster.broker_addr("broker-a").rsplit(":", 1)[1] != "0"
        await cluster.clear_fault("broker-a")
        async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
            assert (await client.request(heartbeat())).code == 0
