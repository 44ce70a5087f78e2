"""Publishing a DataFrame, then its latency report: ``python -m examples.spark_publish_report``.

Needs the ``[spark]`` extra (and Java). Spark runs in ``local[2]``; its Python workers run
this interpreter (``producer.spark`` sees to it in local mode). One broker is browned out
by 100 ms, and the report shows where the sends went and how long they took.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from producer.spark import latency_report, publish, render_report
from producer.testing import DevClusterThread, FaultSpec


def main() -> None:
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("rocketmq-example")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")  # no progress bars amid the tables
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        with DevClusterThread(brokers=3, topics={"Orders": 4}) as cluster:
            cluster.set_fault("broker-b", FaultSpec(latency_ms=100))
            orders = spark.range(2000, numPartitions=2).selectExpr(
                "id AS order_id", "CONCAT('order ', id) AS payload"
            )
            results = publish(
                orders,
                namesrv=cluster.namesrv_addr,
                group="backfill",
                topic="Orders",
                body_col="payload",
                id_col="order_id",
            )
            report = latency_report(results)
            render_report(report)
            stored = cluster.message_count("Orders")
        failed = results.where("status != 'SEND_OK'").count()
        print(f"OK: {results.count()} rows published, {failed} failed, {stored} stored")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
