"""``df.write.format("rocketmq")`` (and ``writeStream``): every row published through
``publish``'s partition machinery (one producer per task on a loop thread, the producer's
retry, bounded concurrency, chunked sends). A row that fails fails the task with
:class:`~producer.spark.RowSendError` unless ``failOnError`` is ``false``; then its
outcome is only counted in the commit message.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark import TaskContext
from pyspark.sql import Row
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from producer.errors import InvalidOptionError
from producer.spark._partition import PartitionJob, publish_rows
from producer.spark._read_options import check_option_names
from producer.spark._rows import ROW_ID, Columns

DEFAULT_WRITER_GROUP = "spark-rocketmq-writer"
#: The sink's options (README "Writing DataFrames to topics").
WRITE_OPTIONS = (
    "namesrv",
    "topic",
    "group",
    "bodyColumn",
    "keysColumn",
    "tagsColumn",
    "propertyColumns",
    "concurrency",
    "failOnError",
)


@dataclass(frozen=True)
class Written(WriterCommitMessage):
    sent: int
    failed: int


def write_options(options: Mapping[str, str], schema: StructType) -> PartitionJob:
    """The publish job for ``.option(...)`` values and the DataFrame's columns."""
    check_option_names("the rocketmq sink", options, WRITE_OPTIONS)
    get = {k.lower(): v for k, v in options.items()}.get
    names = set(schema.fieldNames())
    topic, namesrv = get("topic"), get("namesrv")
    if not namesrv:
        raise InvalidOptionError('the rocketmq sink needs .option("namesrv", "host:9876")')
    if not topic and "topic" not in names:
        raise InvalidOptionError('give .option("topic", ...) or a "topic" column to write')
    body = get("bodycolumn") or "body"
    if body not in names:
        raise InvalidOptionError(f"no body column {body!r} (set bodyColumn); columns: {names}")
    columns = Columns(
        body_col=body,
        topic=topic or None,
        topic_col=None if topic else "topic",
        keys_col=get("keyscolumn") or ("keys" if "keys" in names else None),
        tags_col=get("tagscolumn") or ("tags" if "tags" in names else None),
        property_cols=tuple(c for c in (get("propertycolumns") or "").split(",") if c),
    )
    concurrency = int(get("concurrency") or 64)
    fail = (get("failonerror") or "true").lower() != "false"
    group = get("group") or DEFAULT_WRITER_GROUP
    return PartitionJob(namesrv, group, columns, concurrency, None, fail)


def _write(job: PartitionJob, rows: Iterator[Row]) -> Written:
    context = TaskContext.get()
    partition = -1 if context is None else context.partitionId()
    numbered = ({**row.asDict(), ROW_ID: str(i)} for i, row in enumerate(rows))
    sent = failed = 0
    for chunk in publish_rows(numbered, job, partition):
        failed += sum(1 for result in chunk if result["fate"] is not None)
        sent += len(chunk)
    return Written(sent - failed, failed)


class BatchWriter(DataSourceWriter):
    def __init__(self, job: PartitionJob) -> None:
        self.job = job

    def write(self, iterator: Iterator[Row]) -> Written:
        return _write(self.job, iterator)


class StreamWriter(DataSourceStreamWriter):
    """At least once: a micro-batch retried after a failure publishes its rows again."""

    def __init__(self, job: PartitionJob) -> None:
        self.job = job

    def write(self, iterator: Iterator[Row]) -> Written:
        return _write(self.job, iterator)

    def commit(self, messages: list[Any], batchId: int) -> None:  # noqa: N803 - Spark's
        """Nothing to do: the rows were published when they were written."""

    def abort(self, messages: list[Any], batchId: int) -> None:  # noqa: N803
        """Nothing to undo: a published message cannot be taken back."""
