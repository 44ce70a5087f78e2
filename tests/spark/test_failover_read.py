"""A batch read of the ``rocketmq`` source in ``local[2]`` while a master is dead (issue 44):
its queues' offsets and records come from its slave, so the read is the whole topic."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from producer import Message
from producer.blocking import Producer
from producer.spark import register
from producer.testing import DevClusterThread

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=2, topics={"Ha": 4}, slaves=1) as c:
        yield c


def test_a_read_with_a_dead_master_equals_the_whole_topic(
    spark: SparkSession, cluster: DevClusterThread
) -> None:
    register(spark)
    with Producer("pg", cluster.namesrv_addr) as producer:
        for n in range(120):
            producer.send(Message("Ha", b"b%d" % n, keys=[f"k{n}"]))
    stored = {m.uniq_key: m for m in cluster.messages("Ha")}
    assert {m.broker_name for m in stored.values()} == {"broker-a", "broker-b"}
    deadline = time.monotonic() + 20
    while cluster.replication("broker-a")["behind"]:  # copied on the cluster's 20 ms tick
        assert time.monotonic() < deadline, cluster.replication("broker-a")
        time.sleep(0.02)
    cluster.kill_master("broker-a")
    df = spark.read.format("rocketmq").option("namesrv", cluster.namesrv_addr)
    rows = df.option("topic", "Ha").load().collect()
    assert sorted(r.msg_id for r in rows) == sorted(stored)
    for row in rows:
        sent = stored[row.msg_id]
        assert (row.broker, row.queue_id, row.queue_offset, row.body) == (
            sent.broker_name,
            sent.queue_id,
            sent.queue_offset,
            sent.body,
        )
