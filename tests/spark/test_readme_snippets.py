"""The README's Spark examples run as written (issue 46): each ``python`` block that imports
``producer.spark`` is taken from README.md and executed in the directory's ``local[2]``
session against the dev cluster; only its addresses and storage paths are replaced (each
replacement must find its text, so a drifted example fails here rather than being skipped).
The publishing example fills ``Orders``; the data-source example reads it back, totals it
and writes the totals to ``Totals`` through the sink."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from producer.errors import InvalidOptionError
from producer.testing import DevClusterThread

pytestmark = pytest.mark.timeout(1800)  # a hang guard only: Spark starts slowly under load
README = Path(__file__).resolve().parents[2] / "README.md"
KINDS = ("paid", "refunded", "paid", "cancelled")  # one in four is filtered out by the read
ROWS = 40


def spark_snippets() -> list[str]:
    """The README's ``python`` blocks that import ``producer.spark``, in order."""
    blocks: list[str] = []
    block: list[str] | None = None
    for line in README.read_text().splitlines(keepends=True):
        if block is None and line.rstrip() == "```python":
            block = []
        elif block is not None and line.startswith("```"):
            blocks.append("".join(block))
            block = None
        elif block is not None:
            block.append(line)
    return [b for b in blocks if "from producer.spark import" in b]


def as_run(snippet: str, replacements: dict[str, str]) -> str:
    for old, new in replacements.items():  # longest first where one contains another
        assert old in snippet, f"the README's example no longer has {old!r}"
        snippet = snippet.replace(old, new)
    return snippet


def orders_file(spark: SparkSession, path: Path) -> None:
    """The backfill the publishing example reads: payload, order_id, kind, region."""
    rows = [(f"order {i}", f"o-{i}", KINDS[i % 4], "eu") for i in range(ROWS)]
    spark.createDataFrame(rows, "payload string, order_id string, kind string, region string")\
        .write.parquet(str(path))  # fmt: skip


def test_the_readme_spark_examples_run_as_written(spark: SparkSession, tmp_path: Path) -> None:
    publish_example, source_example = spark_snippets()
    orders_file(spark, tmp_path / "orders")
    with DevClusterThread(brokers=2, topics={"Orders": 2, "Totals": 1}) as cluster:
        ns = cluster.namesrv_addr
        exec(
            as_run(
                publish_example,
                {
                    "s3://bucket/orders-backfill-results": str(tmp_path / "results"),
                    "s3://bucket/orders-backfill": str(tmp_path / "orders"),
                    "ns1:9876;ns2:9876": ns,
                    "latency.png": str(tmp_path / "latency.png"),
                },
            ),
            {"spark": spark},
        )
        assert cluster.message_count("Orders") == ROWS
        results = spark.read.parquet(str(tmp_path / "results")).collect()
        assert Counter(r["status"] for r in results) == {"SEND_OK": ROWS}
        assert (tmp_path / "latency.png").stat().st_size > 0
        exec(as_run(source_example, {"ns1:9876": ns}), {"spark": spark})
        totals = {m.properties.get("TAGS"): int(m.body) for m in cluster.messages("Totals")}
    assert totals == {"paid": ROWS // 2, "refunded": ROWS // 4}


def test_the_sink_refuses_to_overwrite_a_topic(spark: SparkSession) -> None:
    """As Spark's Kafka sink: a topic is appended to, never emptied."""
    from producer.spark import register

    register(spark)
    with DevClusterThread(brokers=1, topics={"Totals": 1}) as cluster:
        df = spark.createDataFrame([("x",)], "body string")
        writer = df.write.format("rocketmq").option("namesrv", cluster.namesrv_addr)
        refused = rf"{InvalidOptionError.__name__}: the rocketmq sink cannot overwrite a topic"
        with pytest.raises(Exception, match=refused):
            writer.option("topic", "Totals").mode("overwrite").save()
        assert cluster.message_count("Totals") == 0
