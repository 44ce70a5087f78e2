"""pytest plugin: a ``rocketmq_cluster`` fixture with a fresh dev cluster per test.

Enabled by installing the package (entry point ``rocketmq_devcluster``) or with
``-p producer.testing.pytest_plugin``. The cluster runs on its own event loop in a
background thread, so the fixture works in sync tests and in async tests on any event
loop (asyncio, uvloop, trio); its methods are synchronous and thread-safe::

    def test_orders(rocketmq_cluster):
        send_some(rocketmq_cluster.namesrv_addr)
        rocketmq_cluster.set_fault("broker-a", FaultSpec(down=True))
        assert rocketmq_cluster.message_count("Orders") == 3

Configure per test with the marker (any :class:`~producer.testing.DevCluster` keyword)::

    @pytest.mark.rocketmq_cluster(brokers=2, topics={"Orders": 4}, auto_create_topic=False)

or for the whole run with ini options ``rocketmq_cluster_brokers`` (default 3) and
``rocketmq_cluster_topics`` (``Orders:4 Payments:2``); the marker wins.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

# The package, not its modules: its names are imported when first used, so a pytest
# run with no test that asks for the fixture never imports the dev cluster.
import producer.testing as testing

if TYPE_CHECKING:
    from producer.testing import DevClusterThread

__all__ = ["rocketmq_cluster"]

_MARKER = "rocketmq_cluster"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "rocketmq_cluster_brokers", "brokers in the rocketmq_cluster fixture", default="3"
    )
    parser.addini(
        "rocketmq_cluster_topics",
        "topics of the rocketmq_cluster fixture, NAME:QUEUES separated by spaces",
        default="",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{_MARKER}(**kwargs): DevCluster arguments for the rocketmq_cluster fixture "
        "(brokers, topics, auto_create_topic, seed, sink, http_port, ...)",
    )


def _settings(request: pytest.FixtureRequest) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "brokers": int(str(request.config.getini("rocketmq_cluster_brokers"))),
        "topics": testing.parse_topics(str(request.config.getini("rocketmq_cluster_topics"))),
    }
    marker = request.node.get_closest_marker(_MARKER)
    if marker is not None:
        if marker.args:
            raise pytest.UsageError(f"@pytest.mark.{_MARKER} takes keyword arguments only")
        settings.update(marker.kwargs)
    return settings


@pytest.fixture
def rocketmq_cluster(request: pytest.FixtureRequest) -> Iterator[DevClusterThread]:
    """A started dev cluster (name server + brokers on 127.0.0.1, free ports)."""
    with testing.DevClusterThread(**_settings(request)) as cluster:
        yield cluster
