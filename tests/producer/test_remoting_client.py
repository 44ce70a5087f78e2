"""The client's one request door: every kind of request passes its outgoing steps, and
its timeout covers connecting."""

from __future__ import annotations

import pytest

from producer._client.clock import Clock
from producer._client.remoting import RemotingClient
from producer._remoting.command import OutgoingRequest
from producer._remoting.producer_requests import (
    SendRequestFactory,
    build_send_request,
    heartbeat_request,
    route_request,
)
from producer._transport import ConnectionPool, current_runtime
from producer._types.message import Message, MessageQueue
from producer.errors import Fate, RequestTimeout
from producer.testing import DevClusterThread
from tests.producer.conftest import TOPIC

pytestmark = pytest.mark.anyio


class SteppingClock:
    """Each reading is ``step`` ms after the last: every wait looks that long."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def monotonic_ms(self) -> float:
        self.now += self.step
        return self.now

    def wall_ms(self) -> int:
        return 1_700_000_000_000


async def test_every_request_kind_passes_the_outgoing_steps(cluster: DevClusterThread) -> None:
    seen: list[int] = []

    def record(request: OutgoingRequest) -> None:
        seen.append(request.code)

    prepared = SendRequestFactory("g").prepare(Message(TOPIC, b"x"), "KEY")
    queue = MessageQueue(TOPIC, "broker-a", 0)
    broker = cluster.broker_addr("broker-a")
    clock: Clock = SteppingClock(0.0)
    async with ConnectionPool(current_runtime().connector()) as pool:
        client = RemotingClient(pool, clock, connect_timeout_ms=1000, outgoing=[record])
        await client.invoke(cluster.namesrv_addr, route_request(TOPIC), 2000)
        await client.invoke(broker, heartbeat_request("me", ["g"]), 2000)
        await client.invoke(broker, build_send_request(prepared, queue, 1), 2000)
        await client.invoke_oneway(broker, build_send_request(prepared, queue, 2), 2000)
    assert seen == [105, 34, 310, 310]
    assert cluster.message_count(TOPIC) >= 1


async def test_connecting_spends_the_request_s_own_budget(cluster: DevClusterThread) -> None:
    async with ConnectionPool(current_runtime().connector()) as pool:
        # every clock reading is 600 ms later: connecting "took" more than the 500 ms
        client = RemotingClient(pool, SteppingClock(600.0), connect_timeout_ms=1000)
        with pytest.raises(RequestTimeout, match="after connecting") as info:
            await client.invoke(cluster.namesrv_addr, route_request(TOPIC), 500)
    assert info.value.fate is Fate.NOT_STORED  # nothing was written
