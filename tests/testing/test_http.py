"""The HTTP control API, with aiohttp's client."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from producer._remoting.request_codes import RequestCode
from producer.testing import DevCluster, FaultSpec
from tests.testing.rawclient import RawClient, make_request, send_fields

pytestmark = pytest.mark.anyio


@pytest.fixture
async def cluster() -> AsyncIterator[DevCluster]:
    async with DevCluster(brokers=2, topics={"Orders": 4}, http_port=0) as cluster:
        yield cluster


@pytest.fixture
async def http(cluster: DevCluster) -> AsyncIterator[aiohttp.ClientSession]:
    assert cluster.http_url is not None and cluster.http_url.startswith("http://127.0.0.1:")
    async with aiohttp.ClientSession(cluster.http_url) as session:
        yield session


async def test_get_brokers_lists_address_fault_and_counts(
    cluster: DevCluster, http: aiohttp.ClientSession
) -> None:
    async with await RawClient.connect(cluster.broker_addr("broker-b")) as client:
        await client.request(make_request(RequestCode.SEND_MESSAGE_V2, send_fields("Orders")))
    await cluster.set_fault("broker-a", FaultSpec(latency_ms=5))
    async with http.get("/brokers") as response:
        assert response.status == 200
        data = await response.json()
    a, b = data["brokers"]
    assert (a["name"], a["address"], a["fault"]) == (
        "broker-a",
        cluster.broker_addr("broker-a"),
        {"latency_ms": 5},
    )
    assert (b["messages"], b["topics"], b["fault"], b["listening"]) == (1, {"Orders": 1}, {}, True)
    assert data["namesrv"] == {"address": cluster.namesrv_addr, "fault": {}}


async def test_put_and_delete_a_broker_fault(
    cluster: DevCluster, http: aiohttp.ClientSession
) -> None:
    spec = {"error_code": 2, "error_probability": 0.5, "down": False}
    async with http.put("/brokers/broker-b/fault", json=spec) as response:
        assert response.status == 200
        assert await response.json() == {
            "broker": "broker-b",
            "fault": {"error_code": 2, "error_probability": 0.5},
        }
    assert cluster.fault("broker-b") == FaultSpec(error_code=2, error_probability=0.5)
    async with http.put("/brokers/broker-b/fault", json={"down": True}) as response:
        assert response.status == 200
    with pytest.raises(ConnectionRefusedError):
        await RawClient.connect(cluster.broker_addr("broker-b"))
    async with http.delete("/brokers/broker-b/fault") as response:
        assert response.status == 200
    assert cluster.fault("broker-b").is_healthy
    async with await RawClient.connect(cluster.broker_addr("broker-b")):
        pass


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{nope", "not JSON"),
        (b'{"latency_ms": -5}', "latency_ms"),
        (b'{"store_status": 3}', "store_status"),
        (b'{"explode": true}', "unknown fault field"),
        (b"[]", "JSON object"),
        (b'{"latency_ms": [1]}', "latency_ms"),
    ],
)
async def test_bad_fault_specs_are_400_with_a_clear_message(
    cluster: DevCluster, http: aiohttp.ClientSession, body: bytes, message: str
) -> None:
    async with http.put("/brokers/broker-a/fault", data=body) as response:
        assert response.status == 400
        assert message in (await response.json())["error"]
    assert cluster.fault("broker-a").is_healthy


@pytest.mark.parametrize("method", ["PUT", "DELETE"])
async def test_unknown_broker_is_404(http: aiohttp.ClientSession, method: str) -> None:
    async with http.request(method, "/brokers/broker-z/fault", json={}) as response:
        assert response.status == 404
        assert "broker-z" in (await response.json())["error"]


async def test_topic_count_and_messages(cluster: DevCluster, http: aiohttp.ClientSession) -> None:
    async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
        for key in ("K1", "K1", "K2"):
            fields = send_fields("Orders", properties=f"UNIQ_KEY\x01{key}\x02TAGS\x01t")
            await client.request(make_request(RequestCode.SEND_MESSAGE_V2, fields, body=b"abc"))
    async with http.get("/topics/Orders/count") as response:
        assert await response.json() == {"count": 3, "unique_msg_ids": 2}
    async with http.get("/topics/Nothing/count") as response:
        assert await response.json() == {"count": 0, "unique_msg_ids": 0}
    async with http.get("/topics/Orders/messages", params={"limit": "2"}) as response:
        listed = (await response.json())["messages"]
    assert [(m["uniq_key"], m["queue_offset"], m["tags"], m["body_size"]) for m in listed] == [
        ("K1", 0, "t", 3),
        ("K1", 1, "t", 3),
    ]
    async with http.get("/topics/Orders/messages", params={"limit": "x"}) as response:
        assert response.status == 400


async def test_namesrv_fault_put_and_delete(
    cluster: DevCluster, http: aiohttp.ClientSession
) -> None:
    async with http.put("/namesrv/fault", json={"down": True}) as response:
        assert (await response.json())["fault"] == {"down": True}
    with pytest.raises(ConnectionRefusedError):
        await RawClient.connect(cluster.namesrv_addr)
    async with http.get("/namesrv") as response:
        assert (await response.json())["fault"] == {"down": True}
    async with http.delete("/namesrv/fault") as response:
        assert (await response.json())["fault"] == {}
    async with await RawClient.connect(cluster.namesrv_addr):
        pass


async def test_http_stops_with_the_cluster() -> None:
    async with DevCluster(brokers=1, http_port=0) as cluster:
        url = cluster.http_url
    assert url is not None and cluster.http_url is None
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectionError):
            await session.get(f"{url}/brokers")
