"""The ``rocketmq`` data source in ``local[2]`` against the dev cluster (2 brokers x 4
queues): batch reads (exact messages, offset ranges, times, tags, data loss), a streaming
query stopped and restarted from its checkpoint, and writes."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

from producer import Message
from producer._remoting.message_codec import COMPRESSED_FLAG
from producer.blocking import Producer
from producer.spark import register
from producer.testing import DevClusterThread

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def cluster() -> Iterator[DevClusterThread]:
    topics = {name: 4 for name in ("Exact", "Ranges", "Tags", "Loss", "Live", "Out")}
    with DevClusterThread(brokers=2, topics=topics) as c:
        yield c


@pytest.fixture(scope="module")
def rmq(spark: SparkSession) -> SparkSession:
    register(spark)
    return spark


def send(cluster: DevClusterThread, messages: list[Message]) -> None:
    with Producer("pg", cluster.namesrv_addr, compress_over=1024) as producer:
        for message in messages:
            producer.send(message)


def sample(topic: str, n: int, tag: str = "t", start: int = 0) -> list[Message]:
    return [
        Message(topic, b"b%d" % i, tags=tag, keys=[f"k{i}"], properties={"n": str(i)})
        for i in range(start, start + n)
    ]


def read(spark: SparkSession, cluster: DevClusterThread, topic: str, **options: str) -> DataFrame:
    reader = spark.read.format("rocketmq").option("namesrv", cluster.namesrv_addr)
    return reader.option("topic", topic).options(**options).load()


def positions(rows: list[Any]) -> list[tuple[str, int, int]]:
    return sorted((r.broker, r.queue_id, r.queue_offset) for r in rows)


def test_a_batch_read_returns_exactly_the_messages_sent(
    rmq: SparkSession, cluster: DevClusterThread
) -> None:
    send(cluster, [*sample("Exact", 30), Message("Exact", b"z" * 3000, tags="t")])
    stored = {m.uniq_key: m for m in cluster.messages("Exact")}
    assert any(m.sys_flag & COMPRESSED_FLAG for m in stored.values())  # zlib on the wire
    df = read(rmq, cluster, "Exact")
    assert df.rdd.getNumPartitions() == 8  # one per queue
    rows = df.collect()
    assert sorted(r.msg_id for r in rows) == sorted(stored)
    for row in rows:
        sent = stored[row.msg_id]
        assert row.body == sent.body  # inflated
        assert (row.broker, row.queue_id, row.queue_offset) == (
            sent.broker_name,
            sent.queue_id,
            sent.queue_offset,
        )
        assert (row.keys, row.tags, row.topic) == (sent.keys, sent.tags, "Exact")
        assert row.properties == dict(sent.properties)
        assert row.store_timestamp == sent.store_timestamp
    sliced = read(rmq, cluster, "Exact", maxRecordsPerPartition="2")
    assert sliced.rdd.getNumPartitions() > 8
    assert positions(sliced.collect()) == positions(rows)


def test_offset_ranges_and_a_time_based_start(rmq: SparkSession, cluster: DevClusterThread) -> None:
    send(cluster, sample("Ranges", 24, "old"))
    boundary = max(m.store_timestamp for m in cluster.messages("Ranges")) + 1
    deadline = time.monotonic() + 5
    while time.time() * 1000 < boundary and time.monotonic() < deadline:
        time.sleep(0.001)  # a clock to pass, not a condition to wait for
    send(cluster, sample("Ranges", 24, "new", start=24))
    starting = json.dumps({"broker-a": {"0": 1}, "broker-b": {"1": -1}})
    ending = json.dumps({"broker-a": {"0": 3}})
    rows = read(rmq, cluster, "Ranges", startingOffsets=starting, endingOffsets=ending).collect()
    in_a0 = [
        m for m in cluster.messages("Ranges") if (m.broker_name, m.queue_id) == ("broker-a", 0)
    ]
    others = [
        m
        for m in cluster.messages("Ranges")
        if (m.broker_name, m.queue_id) not in {("broker-a", 0), ("broker-b", 1)}
    ]
    expected = [("broker-a", 0, o) for o in (1, 2)] + [
        (m.broker_name, m.queue_id, m.queue_offset) for m in others
    ]
    assert len(in_a0) > 3
    assert positions(rows) == sorted(expected)
    timed = read(rmq, cluster, "Ranges", startingOffsets=str(boundary)).collect()
    assert sorted(r.tags for r in timed) == ["new"] * 24


def test_tag_filters_are_pushed_down_and_exact(
    rmq: SparkSession, cluster: DevClusterThread
) -> None:
    untagged = [Message("Tags", b"plain") for _ in range(3)]
    send(cluster, [*sample("Tags", 5, "a"), *sample("Tags", 5, "b"), *untagged])
    df = read(rmq, cluster, "Tags")
    assert sorted(r.tags for r in df.where("tags = 'a'").collect()) == ["a"] * 5
    assert df.where("tags in ('a', 'b')").count() == 10
    assert read(rmq, cluster, "Tags", tags="b").count() == 5  # as Java: untagged don't match


def test_an_offset_below_the_minimum_fails_or_is_skipped(
    rmq: SparkSession, cluster: DevClusterThread
) -> None:
    send(cluster, sample("Loss", 40))
    cluster.drop_before("Loss", 2)
    total = cluster.message_count("Loss")
    from_zero = json.dumps({b: {str(q): 0 for q in range(4)} for b in ("broker-a", "broker-b")})
    with pytest.raises(Exception, match="OffsetOutOfRangeError"):
        read(rmq, cluster, "Loss", startingOffsets=from_zero).collect()
    kept = read(rmq, cluster, "Loss", startingOffsets=from_zero, failOnDataLoss="false")
    rows = kept.collect()
    assert len(rows) == total - 16  # 2 dropped in each of the 8 queues
    assert min(r.queue_offset for r in rows) == 2


def test_a_stream_restarted_from_its_checkpoint_writes_each_message_once(
    rmq: SparkSession, cluster: DevClusterThread, tmp_path: Path
) -> None:
    total = 100
    sending = threading.Thread(target=_trickle, args=(cluster, total), daemon=True)

    def run_until(count: int) -> None:
        stream = (
            rmq.readStream.format("rocketmq")
            .option("namesrv", cluster.namesrv_addr)
            .option("topic", "Live")
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "25")
            .load()
            .select("msg_id", "body")
        )
        query = (
            stream.writeStream.format("parquet")
            .option("path", str(tmp_path / "out"))
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(processingTime="200 milliseconds")
            .start()
        )
        try:
            deadline = time.monotonic() + 90
            while _written(rmq, tmp_path) < count and time.monotonic() < deadline:
                query.awaitTermination(0.2)  # bounded wait on the sink's row count
            assert query.exception() is None
        finally:
            query.stop()

    sending.start()
    run_until(30)  # stopped mid-stream, the producer still sending
    run_until(total)  # restarted from the checkpoint
    sending.join(30)
    out = rmq.read.parquet(str(tmp_path / "out")).collect()
    assert len(out) == total
    assert {r.msg_id for r in out} == cluster.unique_msg_ids("Live")


def _trickle(cluster: DevClusterThread, total: int) -> None:
    with Producer("live", cluster.namesrv_addr) as producer:
        for i in range(total):
            producer.send(Message("Live", b"%d" % i))
            time.sleep(0.03)  # a live producer's pace (about 3 s in all), not synchronising


def _written(spark: SparkSession, tmp_path: Path) -> int:
    try:
        return spark.read.parquet(str(tmp_path / "out")).count()
    except AnalysisException:  # no micro-batch committed yet: nothing to infer from
        return 0


def test_a_write_publishes_every_row(rmq: SparkSession, cluster: DevClusterThread) -> None:
    rows = [(f"v{i}", "w", [f"key{i}"]) for i in range(20)]
    df = rmq.createDataFrame(rows, "body string, tags string, keys array<string>")
    writer = df.write.format("rocketmq").option("namesrv", cluster.namesrv_addr)
    writer.option("topic", "Out").mode("append").save()
    stored = cluster.messages("Out")
    assert sorted(m.body for m in stored) == sorted(f"v{i}".encode() for i in range(20))
    assert {m.tags for m in stored} == {"w"}
    assert sorted(k for m in stored for k in m.keys) == sorted(f"key{i}" for i in range(20))
    bad = rmq.createDataFrame([("x",)], "body string").write.format("rocketmq")
    bad = bad.option("namesrv", cluster.namesrv_addr).option("topic", "No Such Topic!")
    with pytest.raises(Exception, match="RowSendError"):
        bad.mode("append").save()
