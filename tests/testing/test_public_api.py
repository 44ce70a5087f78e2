"""The public surface of ``producer.testing`` and the cluster's start-up time."""

from __future__ import annotations

import time

import anyio
import pytest

import producer.testing
from producer.testing import DevCluster


def test_all_names_exist_and_are_documented() -> None:
    assert sorted(producer.testing.__all__) == [
        "Account",
        "BROKER_VERSIONS",
        "DEFAULT_DELAY_LEVELS",
        "DevCluster",
        "DevClusterThread",
        "FaultSpec",
        "FaultSpecError",
        "StoredMessage",
        "TopicConfig",
        "TransactionConfig",
        "parse_topics",
    ]
    for name in producer.testing.__all__:
        assert getattr(producer.testing, name).__doc__, name


def test_starts_from_anyio_run_on_asyncio_well_under_a_second() -> None:
    timings: list[float] = []

    async def main() -> None:
        started = time.perf_counter()
        async with DevCluster(brokers=3, topics={"Orders": 4}) as cluster:
            timings.append(time.perf_counter() - started)
            assert len({cluster.broker_addr(n) for n in cluster.broker_names}) == 3

    anyio.run(main, backend="asyncio")
    assert timings[0] < 5.0  # generous; typically a few milliseconds


def test_on_trio_it_says_to_use_the_thread_runner() -> None:
    async def main() -> None:
        async with DevCluster(brokers=1):
            pass

    with pytest.raises(RuntimeError, match="DevClusterThread"):
        anyio.run(main, backend="trio")


@pytest.mark.anyio
async def test_repr_shows_live_state() -> None:
    cluster = DevCluster(brokers=2, seed=3)
    assert "stopped" in repr(cluster)
    async with cluster:
        text = repr(cluster)
        assert "running" in text and "broker-b" in text and cluster.namesrv_addr in text


def test_constructor_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="at least one broker"):
        DevCluster(brokers=0)
    with pytest.raises(ValueError, match="2 broker ports given for 3 brokers"):
        DevCluster(brokers=3, broker_ports=[1, 2])
    with pytest.raises(KeyError, match="broker-q"):
        DevCluster(brokers=1).add_topic("T", 1, brokers=["broker-q"])
    with pytest.raises(ValueError, match="0 or 1 slave per broker group"):
        DevCluster(slaves=2)
    with pytest.raises(ValueError, match="not with sink= or pull_sink="):
        DevCluster(slaves=1, sink=True)
    with pytest.raises(KeyError, match="start the cluster with slaves=1"):
        DevCluster(brokers=1).slave_addr("broker-a")


def test_broker_names_go_past_z() -> None:
    from producer.testing._cluster import broker_name

    assert [broker_name(i) for i in (0, 1, 25, 26, 27, 701, 702)] == [
        "broker-a", "broker-b", "broker-z", "broker-aa", "broker-ab", "broker-zz", "broker-aaa",
    ]  # fmt: skip


def test_the_thread_cluster_takes_every_dev_cluster_option() -> None:
    """One set of options: DevClusterThread passes DevCluster's through, so none drifts."""
    import inspect

    from producer.testing import DevCluster, DevClusterThread

    options = inspect.signature(DevCluster.__init__).parameters
    assert inspect.signature(DevClusterThread.__init__).parameters == options
    assert "cluster_name" in options
    with DevClusterThread(brokers=1, topics={"T": 1}, cluster_name="Mine", seed=3) as c:
        assert c.cluster.seed == 3
        assert c.cluster.broker_names == ["broker-a"]
