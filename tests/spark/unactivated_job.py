"""Run by ``test_unactivated_venv.py`` as a user runs a script: ``.venv/bin/python
tests/spark/unactivated_job.py``, no virtual environment activated, no ``PYSPARK_*`` set.

Writes two rows with the ``rocketmq`` sink, reads them back with the source, and ends with
``OK`` and the bodies read.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from producer.spark import register
from producer.testing import DevClusterThread


def main() -> None:
    with DevClusterThread(brokers=1, topics={"Unactivated": 2}) as cluster:
        spark = (
            SparkSession.builder.master("local[1]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        try:
            register(spark)
            rows = spark.createDataFrame([("a",), ("b",)], "body string")
            write = rows.write.format("rocketmq").option("namesrv", cluster.namesrv_addr)
            write.option("topic", "Unactivated").mode("append").save()
            read = spark.read.format("rocketmq").option("namesrv", cluster.namesrv_addr)
            bodies = sorted(
                r.body.decode() for r in read.option("topic", "Unactivated").load().collect()
            )
        finally:
            spark.stop()
    print("OK", ",".join(bodies))


if __name__ == "__main__":
    main()
