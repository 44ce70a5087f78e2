"""Read topics into Spark DataFrames (batch and streaming), write DataFrames to topics, and
analyse send latency on Spark.

Needs the ``spark`` extra (``pip install 'rocketmq-aio-producer[spark]'``)::

    from producer.spark import publish, latency_report
    results = publish(df, namesrv="ns:9876", group="backfill", topic="Orders",
                      body_col="payload", key_col="order_id", id_col="order_id")
    results.write.parquet("s3://.../publish-results")
    latency_report(results).per_broker.show()

    register(spark)                                   # the "rocketmq" data source (PySpark 4)
    df = spark.read.format("rocketmq").option("namesrv", "ns:9876").option("topic", "Orders").load()
"""

from __future__ import annotations

try:
    import pyarrow  # noqa: F401
    import pyspark  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        f"producer.spark needs PySpark and PyArrow ({exc.name} is missing): "
        'pip install "rocketmq-aio-producer[spark]"'
    ) from exc

from producer.spark import _queue_read, _rows
from producer.spark._partition import RowSendError
from producer.spark._publish import publish, retry_failed
from producer.spark._render import plot_over_time, render_report
from producer.spark._report import LatencyReport, latency_report
from producer.spark._source import RocketMQDataSource, register

READ_COLUMNS = _queue_read.READ_COLUMNS
"""The columns of ``spark.read.format("rocketmq")``, as ``(name, Spark type)`` pairs in
order (README "Reading topics into Spark")."""
RESULT_COLUMNS = _rows.RESULT_COLUMNS
"""The columns of :func:`publish`'s result rows, as ``(name, Spark type)`` pairs in order:
one row per input row (README "Spark")."""

__all__ = [
    "READ_COLUMNS",
    "RESULT_COLUMNS",
    "LatencyReport",
    "RocketMQDataSource",
    "RowSendError",
    "latency_report",
    "plot_over_time",
    "publish",
    "register",
    "render_report",
    "retry_failed",
]
