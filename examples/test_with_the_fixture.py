"""Testing your own code against the dev cluster with the installed pytest plugin:
``python -m pytest examples/test_with_the_fixture.py``.

The ``rocketmq_cluster`` fixture gives each test a fresh dev cluster on loopback (a
``DevClusterThread``: its methods are synchronous, so sync and async tests alike can use
it); ``@pytest.mark.rocketmq_cluster(...)`` takes any ``DevCluster`` keyword.
"""

from __future__ import annotations

import pytest

from producer import Message
from producer.blocking import Producer
from producer.testing import DevClusterThread, FaultSpec


def place_order(producer: Producer, order_id: int) -> str:
    """The code under test: publish an order event, return its message id."""
    return producer.send(Message("Orders", b'{"id": %d}' % order_id, keys=[f"o-{order_id}"])).msg_id


@pytest.mark.rocketmq_cluster(brokers=2, topics={"Orders": 2})
def test_an_order_is_published(rocketmq_cluster: DevClusterThread) -> None:
    with Producer("shop", rocketmq_cluster.namesrv_addr) as producer:
        msg_id = place_order(producer, 1)
    assert rocketmq_cluster.unique_msg_ids("Orders") == {msg_id}


@pytest.mark.rocketmq_cluster(brokers=3, topics={"Orders": 2})
def test_orders_survive_a_broker_outage(rocketmq_cluster: DevClusterThread) -> None:
    with Producer("shop", rocketmq_cluster.namesrv_addr) as producer:
        place_order(producer, 0)  # the route is known before the outage
        rocketmq_cluster.set_fault("broker-a", FaultSpec(down=True))
        ids = {place_order(producer, i) for i in range(1, 21)}
    assert ids <= rocketmq_cluster.unique_msg_ids("Orders")
