"""A Spark pipeline on RocketMQ: publish orders, read the topic back into a DataFrame,
total the orders per customer, publish the totals to another topic, read the latency
report of that write, and read the totals topic back.

Runs in ``local[2]`` against the embedded dev cluster (2 brokers x 4 queues), or against
a cluster of yours with ``--namesrv``::

    python examples/spark_pipeline.py [--orders 2000] [--namesrv host:9876]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator

from pyspark.sql import SparkSession
from pyspark.sql import functions as sf

from producer.spark import latency_report, publish, register, render_report
from producer.testing import DevClusterThread

ORDERS, TOTALS = "Orders", "OrderTotals"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    spark = _session()
    try:
        with _cluster(args.namesrv) as namesrv:
            outcome = run(spark, namesrv, args.orders)
    finally:
        spark.stop()
    ok, line = verdict(outcome, args.orders)
    print(line)
    return 0 if ok else 1


def verdict(outcome: dict[str, object], orders: int) -> tuple[bool, str]:
    """The last line: every order totalled exactly once, and the totals write's latency."""
    totals: list[dict[str, int]] = outcome["totals"]  # type: ignore[assignment]
    latency: dict[str, float] = outcome["latency"]  # type: ignore[assignment]
    counted = sum(t["orders"] for t in totals)
    customers = len({t["customer"] for t in totals})
    ok = counted == orders and customers == len(totals)
    return ok, (
        f"{'OK' if ok else 'FAIL'}: {counted} of {orders} orders totalled once, for "
        f"{customers} customers; the totals' write: p50 {latency['p50_ms']:.1f} ms, "
        f"p99 {latency['p99_ms']:.1f} ms"
    )


def run(spark: SparkSession, namesrv: str, orders: int) -> dict[str, object]:
    register(spark)  # spark.read/readStream/write.format("rocketmq")
    source = spark.range(orders).select(
        (sf.col("id") % 7).cast("string").alias("customer"),
        (sf.col("id") % 100 + 1).alias("amount"),
    )
    body = sf.to_json(sf.struct("customer", "amount"))
    publish(
        source.withColumn("body", body),
        namesrv=namesrv,
        group="orders-in",
        topic=ORDERS,
        body_col="body",
        key_col="customer",
        fail_on_error=True,
    )

    read = spark.read.format("rocketmq").option("namesrv", namesrv).option("topic", ORDERS)
    order = sf.from_json(sf.col("body").cast("string"), "customer string, amount long")
    totals = (
        read.load()
        .select(order.alias("o"))
        .groupBy("o.customer")
        .agg(sf.sum("o.amount").alias("total"), sf.count("*").alias("orders"))
    )
    out = totals.select(sf.col("customer"), sf.to_json(sf.struct("*")).alias("body"))
    results = publish(
        out,
        namesrv=namesrv,
        group="totals-out",
        topic=TOTALS,
        body_col="body",
        key_col="customer",
        fail_on_error=True,
    )
    report = latency_report(results)
    render_report(report)  # figures rounded for reading, tables whole when piped

    back = spark.read.format("rocketmq").option("namesrv", namesrv).option("topic", TOTALS)
    written = [json.loads(r.body) for r in back.load().select("body").collect()]
    for row in sorted(written, key=lambda r: r["customer"]):
        print(f"customer {row['customer']}: {row['orders']} orders, total {row['total']}")
    return {"totals": written, "latency": report.overall.collect()[0].asDict()}


def _session() -> SparkSession:
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("rocketmq-pipeline")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextlib.contextmanager
def _cluster(namesrv: str | None) -> Iterator[str]:
    if namesrv is not None:
        yield namesrv
        return
    with DevClusterThread(brokers=2, topics={ORDERS: 4, TOTALS: 4}) as cluster:
        yield cluster.namesrv_addr


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--orders", type=int, default=2000)
    parser.add_argument("--namesrv", help="a name server of yours (default: a dev cluster)")
    return parser


if __name__ == "__main__":
    sys.exit(main())
