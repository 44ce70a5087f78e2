"""``spark.read.format("rocketmq")``: the data source and its batch reader.

The driver resolves the offset range of every queue of the topic (one blocking pull
consumer, closed at once); each Spark partition then reads one queue's range (or a slice
of it) on an executor with a pull consumer of its own. ``tags = 'x'`` and
``tags IN (...)`` filters are pushed down to the broker's tag filter.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    EqualTo,
    Filter,
    In,
    InputPartition,
)
from pyspark.sql.types import StructType

from producer.errors import InvalidOptionError
from producer.spark._queue_read import (
    READ_DDL,
    QueueSlice,
    driver_consumer,
    read_slice,
    resolve,
    slices,
)
from producer.spark._read_options import EARLIEST, LATEST, ReadOptions, read_options
from producer.spark._sink import BatchWriter, StreamWriter, write_options
from producer.spark._stream import StreamReader
from producer.spark._workers import use_driver_python_in_local_mode

FORMAT = "rocketmq"
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"  # off by default in PySpark 4


def register(spark: SparkSession) -> None:
    """Make ``spark.read/readStream/write/writeStream.format("rocketmq")`` available, with
    tag filters pushed down (turns on ``spark.sql.python.filterPushdown.enabled``)."""
    # First: registering captures the context's worker interpreter for every Python process
    # that plans, reads or writes for this source (PySpark's _wrap_function).
    use_driver_python_in_local_mode(spark.sparkContext)
    spark.dataSource.register(RocketMQDataSource)
    spark.conf.set(PUSHDOWN_CONF, "true")


class RocketMQDataSource(DataSource):
    """Options: README "Reading topics into Spark"."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return READ_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(read_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802
        return StreamReader(read_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """``mode("append")`` only: a topic is appended to and never emptied, so Overwrite is
        refused, as Spark's Kafka sink refuses it. (Kafka's sink also takes Spark's default,
        ErrorIfExists, as an append; Spark refuses that mode to every Python data source
        before asking it, so a write here says ``.mode("append")``.)"""
        if overwrite:
            raise InvalidOptionError(
                "the rocketmq sink cannot overwrite a topic (messages are only appended): "
                'write with .mode("append")'
            )
        return BatchWriter(write_options(self.options, schema))

    def streamWriter(  # noqa: N802 - Spark's name
        self, schema: StructType, overwrite: bool
    ) -> DataSourceStreamWriter:
        return StreamWriter(write_options(self.options, schema))


class BatchReader(DataSourceReader):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:  # noqa: N802 - Spark's
        """``tags = 'x'`` / ``tags IN ('x', 'y')`` narrow the broker's tag filter (the
        consumer re-checks the tag itself, as Java's does, so the rows are exact). Each
        filter is still handed back for Spark to apply too: cheap, and the result stays
        right whatever the broker's filter lets through."""
        for found in filters:
            tags = tag_values(found)
            if tags is not None:
                self.options = self.options.with_tags(tags)
            yield found

    def partitions(self) -> Sequence[InputPartition]:
        options = self.options
        with driver_consumer(options) as consumer:
            queues = consumer.queues(options.topic)
            starts = resolve(consumer, queues, options.starting, EARLIEST)
            ends = resolve(consumer, queues, options.ending, LATEST)
            latest = resolve(consumer, queues, LATEST, LATEST)
        ends = {q: min(ends[q], latest[q]) for q in queues}  # nothing beyond what is there
        return slices(starts, ends, options.max_records_per_partition) or [EMPTY]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, QueueSlice) and partition.end > partition.start:
            yield from read_slice(self.options, partition)


EMPTY = QueueSlice("", 0, 0, 0)  # Spark wants at least one partition


def tag_values(found: Filter) -> frozenset[str] | None:
    """The tags an ``EqualTo``/``In`` on the ``tags`` column allows; None for others."""
    if getattr(found, "attribute", None) != ("tags",):
        return None
    if isinstance(found, EqualTo) and isinstance(found.value, str):
        return frozenset([found.value])
    if isinstance(found, In) and all(isinstance(v, str) for v in found.value):
        return frozenset(found.value)
    return None
