"""``producer.spark.publish`` and ``retry_failed`` in ``local[2]`` against the dev cluster
(issue 13's tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import PythonException
from pyspark.sql import DataFrame, SparkSession

from producer.errors import InvalidOptionError
from producer.spark import RESULT_COLUMNS, publish, retry_failed
from producer.testing import DevClusterThread, FaultSpec
from tests.spark.conftest import TOPIC, options

pytestmark = pytest.mark.timeout(120)

RESULT_NAMES = [name for name, _ in RESULT_COLUMNS if name != "sent_at_ms"] + ["sent_at"]


def rows(spark: SparkSession, n: int, partitions: int = 2) -> DataFrame:
    return spark.range(n, numPartitions=partitions).selectExpr(
        "id", "concat('body-', id) AS body", "CAST(id % 7 AS STRING) AS shop"
    )


def ok_ids(results: DataFrame) -> list[str]:
    return [r.msg_id for r in results.where("status = 'SEND_OK'").select("msg_id").collect()]


@pytest.mark.parametrize("engine", ["arrow", "rows"])
def test_every_row_gets_one_result_and_the_stored_ids_are_the_successes(
    spark: SparkSession, cluster: DevClusterThread, engine: str
) -> None:
    n = 10_000 if engine == "arrow" else 2_000  # the row engine is the slower one: less
    results = publish(
        rows(spark, n), body_col="body", id_col="id", engine=engine, **options(cluster)
    )
    assert results.columns == RESULT_NAMES
    per_row = results.groupBy("row_id").count()
    assert per_row.count() == n and per_row.where("count != 1").count() == 0
    assert results.where("status != 'SEND_OK'").count() == 0
    assert set(ok_ids(results)) == cluster.unique_msg_ids(TOPIC)
    assert len(ok_ids(results)) == n
    assert {r.partition for r in results.select("partition").distinct().collect()} == {0, 1}
    assert cluster.message_count(TOPIC) == n  # the checkpoint: counting again sent nothing
    assert results.count() == n and cluster.message_count(TOPIC) == n


def test_columns_become_the_message_and_strings_are_utf8(
    spark: SparkSession, cluster: DevClusterThread
) -> None:
    df = spark.createDataFrame(
        [(1, "héllo", "TagA", "k1", ["a", "b"], 5, "o-1"), (2, "x", None, None, None, None, "o-1")],
        "id long, body string, tag string, key string, keys array<string>, qty int, order string",
    )
    results = publish(
        df,
        body_col="body",
        tags_col="tag",
        key_col="key",
        keys_col="keys",
        property_cols=["qty"],
        order_key_col="order",
        id_col="id",
        **options(cluster),
    )
    stored = {m.body: m for m in cluster.messages(TOPIC)}
    first = stored["héllo".encode()]
    assert first.properties["TAGS"] == "TagA"
    assert first.properties["KEYS"] == "k1 a b"
    assert first.properties["qty"] == "5"
    assert "qty" not in stored[b"x"].properties and "TAGS" not in stored[b"x"].properties
    queues = {(r.broker, r.queue_id) for r in results.collect()}
    assert len(queues) == 1  # one order key, one queue


def test_binary_bodies_are_sent_as_they_are(spark: SparkSession, cluster: DevClusterThread) -> None:
    df = spark.createDataFrame([(1, bytearray(b"\x00\xff"))], "id long, body binary")
    publish(df, body_col="body", id_col="id", **options(cluster))
    assert [m.body for m in cluster.messages(TOPIC)] == [b"\x00\xff"]


def test_a_broker_failing_30_percent_with_code_14_costs_retries_not_rows(
    spark: SparkSession, cluster: DevClusterThread
) -> None:
    from producer.spark import latency_report

    cluster.set_fault("broker-b", FaultSpec(error_code=14, error_probability=0.3))
    results = publish(
        rows(spark, 2_000), body_col="body", id_col="id", **options(cluster, concurrency=16)
    )
    assert results.where("status != 'SEND_OK'").count() == 0
    assert set(ok_ids(results)) == cluster.unique_msg_ids(TOPIC)
    report = latency_report(results)
    by_broker = {r.broker: r for r in report.broker_attempts.collect()}
    assert by_broker["broker-b"].failed > 0 and by_broker["broker-b"].failure_codes == [14]
    assert by_broker["broker-a"].failed == 0 and by_broker["broker-c"].failed == 0
    assert report.overall.first().retries == by_broker["broker-b"].failed


def test_all_brokers_down_gives_failure_rows_or_fails_the_job(
    spark: SparkSession, cluster: DevClusterThread
) -> None:
    for name in cluster.broker_names:
        cluster.set_fault(name, FaultSpec(down=True))
    fast = options(cluster, timeout_ms=1_000, producer_options={"routing": "off"})
    results = publish(rows(spark, 40), body_col="body", id_col="id", **fast)
    failures = results.collect()
    assert len(failures) == 40
    assert {r.status for r in failures} == {"FAILED"}
    assert {r.fate for r in failures} == {"not_stored"}
    assert {r.error_type for r in failures} == {"ConnectError"}
    assert all(r.msg_id and r.attempts >= 1 and r.error_message for r in failures)
    with pytest.raises(PythonException, match=r"RowSendError.*ConnectError"):
        publish(rows(spark, 40), body_col="body", id_col="id", fail_on_error=True, **fast)


def test_bad_rows_fail_alone_with_validation_errors(
    spark: SparkSession, cluster: DevClusterThread
) -> None:
    big = "x" * (4 * 1024 * 1024 + 1)
    df = spark.createDataFrame(
        [
            (1, TOPIC, "fine"),
            (2, TOPIC, None),  # null body
            (3, TOPIC, big),  # oversize
            (4, "bad topic!", "x"),  # invalid topic name
            (5, None, "x"),  # null topic
            (6, "Other", "fine too"),
        ],
        "id long, t string, body string",
    )
    results = publish(
        df, namesrv=cluster.namesrv_addr, group="g", topic_col="t", body_col="body", id_col="id"
    )
    by_id = {r.row_id: r for r in results.collect()}
    assert {i for i, r in by_id.items() if r.status == "SEND_OK"} == {"1", "6"}
    for bad in ("2", "3", "4", "5"):
        row = by_id[bad]
        assert row.error_type == "MessageValidationError" or row.error_type == "MessageTypeError"
        assert row.fate == "not_stored" and row.attempts == 0 and row.msg_id is None
    assert "body must be not null" in by_id["2"].error_message
    assert "at most 4194304 bytes" in by_id["3"].error_message
    assert "topic" in by_id["4"].error_message and "topic" in by_id["5"].error_message
    assert cluster.message_count(TOPIC) == 1 and cluster.message_count("Other") == 1


def test_retry_failed_republishes_exactly_the_failed_rows(
    spark: SparkSession, cluster: DevClusterThread, tmp_path: Path
) -> None:
    source = rows(spark, 600)
    common: dict[str, Any] = options(
        cluster,
        body_col="body",
        timeout_ms=300,
        producer_options={"routing": "off", "retry_times_when_send_failed": 0},
    )
    cluster.set_fault("broker-b", FaultSpec(blackhole=True))
    first = publish(source, id_col="id", **common)
    first.write.parquet(str(tmp_path / "first"))  # what was sent is kept, and re-read
    cluster.clear_fault("broker-b")
    reread = spark.read.parquet(str(tmp_path / "first"))
    failed = {r.row_id: r for r in reread.where("fate IS NOT NULL").collect()}
    assert failed and {r.fate for r in failed.values()} == {"unknown"}  # written, no answer
    again = retry_failed(reread, source, id_col="id", **common)
    assert sorted(r.row_id for r in again.collect()) == sorted(failed)
    assert {r.row_id: r.msg_id for r in again.collect()} == {
        row_id: r.msg_id for row_id, r in failed.items()
    }  # same UNIQ_KEY as the unknown first try
    done = first.where("fate IS NULL").unionByName(again.where("fate IS NULL"))
    assert done.select("row_id").distinct().count() == 600
    stored_ids = cluster.unique_msg_ids(TOPIC)
    assert stored_ids == set(ok_ids(done))
    assert len(stored_ids) == 600


def test_bad_arguments_fail_in_the_driver_before_any_send(
    spark: SparkSession, cluster: DevClusterThread
) -> None:
    df = rows(spark, 3)
    base = {"namesrv": cluster.namesrv_addr, "group": "g", "body_col": "body"}
    with pytest.raises(InvalidOptionError, match="exactly one of topic"):
        publish(df, **base)
    with pytest.raises(InvalidOptionError, match="exactly one of topic"):
        publish(df, topic=TOPIC, topic_col="shop", **base)
    with pytest.raises(InvalidOptionError, match=r"no column \['nope'\]"):
        publish(df, topic=TOPIC, key_col="nope", **base)
    with pytest.raises(InvalidOptionError, match="concurrency"):
        publish(df, topic=TOPIC, concurrency=0, **base)
    with pytest.raises(InvalidOptionError, match="engine"):
        publish(df, topic=TOPIC, engine="pandas", **base)  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError):
        publish(df, topic=TOPIC, producer_options={"routing": "sideways"}, **base)
    assert cluster.message_count() == 0
