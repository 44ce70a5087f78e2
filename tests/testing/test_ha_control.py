"""Replicated groups (``slaves=1``) driven from outside: the HTTP control API's routes
(with aiohttp's client) and ``python -m producer cluster --slaves 1``."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator

import aiohttp
import anyio
import pytest

from producer._remoting.request_codes import RequestCode
from producer.cli.cluster import add_cluster_arguments, run_cluster
from producer.testing import DevCluster, DevClusterThread
from tests.helpers.cluster_cli import Output
from tests.testing.rawclient import RawClient, make_request

pytestmark = pytest.mark.anyio


@pytest.fixture
async def cluster() -> AsyncIterator[DevCluster]:
    async with DevCluster(brokers=1, topics={"Orders": 2}, slaves=1, http_port=0) as cluster:
        yield cluster


@pytest.fixture
async def http(cluster: DevCluster) -> AsyncIterator[aiohttp.ClientSession]:
    assert cluster.http_url is not None
    async with aiohttp.ClientSession(cluster.http_url) as session:
        yield session


async def test_lag_kill_restart_and_promote_over_http(
    cluster: DevCluster, http: aiohttp.ClientSession
) -> None:
    old_master, slave = cluster.broker_addr("broker-a"), cluster.slave_addr("broker-a")
    async with http.put("/brokers/broker-a/replication", json={"lag_ms": 250}) as response:
        assert response.status == 200
        assert (await response.json())["lag_ms"] == 250
    async with http.post("/brokers/broker-a/kill-master") as response:
        state = await response.json()
    assert (state["state"], state["master_alive"], state["slave_alive"]) == (
        "orphaned",
        False,
        True,
    )
    async with http.post("/brokers/broker-a/restart-master") as response:
        assert (await response.json())["state"] == "copying"
    async with http.post("/brokers/broker-a/promote") as response:
        state = await response.json()
    assert (state["state"], state["master"]) == ("promoted", slave)
    assert cluster.broker_addr("broker-a") == slave != old_master


async def test_bad_lag_and_unknown_broker_are_refused(http: aiohttp.ClientSession) -> None:
    async with http.put("/brokers/broker-a/replication", json={"lag_ms": -1}) as response:
        assert response.status == 400
        assert "integers >= 0" in (await response.json())["error"]
    async with http.post("/brokers/broker-z/kill-master") as response:
        assert response.status == 404
        assert "broker-z" in (await response.json())["error"]


async def test_cli_with_slaves_announces_and_registers_them() -> None:
    parser = add_cluster_arguments(argparse.ArgumentParser())
    args = parser.parse_args(["--brokers", "2", "--namesrv-port", "0", "--slaves", "1"])
    out, stop = Output(), asyncio.Event()
    task = asyncio.create_task(run_cluster(args, stop=stop, out=out))
    with anyio.fail_after(5):
        await out.ready.wait()
    lines = out.getvalue().splitlines()
    assert lines[-1] == "ready"
    slaves = {line.split()[0]: line.split()[1] for line in lines if line.endswith("(slave)")}
    brokers = {line.split()[0]: line.split()[1] for line in lines if line.startswith("broker")}
    namesrv = lines[0].split()[1]
    assert set(slaves) == {"broker-a-s", "broker-b-s"}
    async with await RawClient.connect(namesrv) as client:
        answer = await client.request(make_request(RequestCode.GET_BROKER_CLUSTER_INFO, {}))
    for name in ("broker-a", "broker-b"):
        addrs = f'{{0:"{brokers[name]}",1:"{slaves[name + "-s"]}"}}'
        assert f'"{name}":{{"brokerAddrs":{addrs}' in answer.body.decode()
    stop.set()
    assert await task == 0


def test_the_thread_cluster_fails_and_promotes_masters_synchronously() -> None:
    with DevClusterThread(brokers=1, topics={"Orders": 1}, slaves=1) as cluster:
        slave = cluster.slave_addr("broker-a")
        assert cluster.slave_addrs == {"broker-a": slave}
        cluster.set_replication_lag("broker-a", messages=3)
        cluster.kill_master("broker-a")
        state = cluster.replication("broker-a")
        assert (state["state"], state["lag_messages"]) == ("orphaned", 3)
        cluster.restart_master("broker-a")
        assert cluster.replication("broker-a")["master_alive"] is True
        assert cluster.promote("broker-a") == slave == cluster.broker_addr("broker-a")
        assert cluster.slave_consumer_offsets("broker-a") == {}
