"""The driver side of publishing: check the arguments, run every partition's sends once,
and hand back the results as a DataFrame that never sends again."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

from producer import Producer as AsyncProducer
from producer.errors import InvalidOptionError
from producer.spark._partition import PartitionJob, publish_rows
from producer.spark._rows import (
    ATTEMPT_TYPE,
    PRESET_MSG_ID,
    RESULT_COLUMNS,
    ROW_ID,
    Columns,
)
from producer.spark._workers import use_driver_python_in_local_mode

Engine = Literal["arrow", "rows"]
RESULT_DDL = ", ".join(f"{name} {kind}" for name, kind in RESULT_COLUMNS)


def publish(
    df: DataFrame,
    *,
    namesrv: str | Sequence[str],
    group: str,
    body_col: str,
    topic: str | None = None,
    topic_col: str | None = None,
    key_col: str | None = None,
    keys_col: str | None = None,
    tags_col: str | None = None,
    property_cols: Sequence[str] = (),
    order_key_col: str | None = None,
    id_col: str | None = None,
    concurrency: int = 64,
    timeout_ms: float | None = None,
    producer_options: Mapping[str, Any] | None = None,
    fail_on_error: bool = False,
    engine: Engine = "arrow",
) -> DataFrame:
    """Send one message per row of ``df``; one result row per input row (see the README).

    Eager: the sends happen here, once. The returned DataFrame is checkpointed, so counting,
    showing or writing it never publishes again.
    """
    columns = Columns(
        body_col=body_col,
        topic=topic,
        topic_col=topic_col,
        key_col=key_col,
        keys_col=keys_col,
        tags_col=tags_col,
        property_cols=tuple(property_cols),
        order_key_col=order_key_col,
    )
    job = _job(namesrv, group, columns, concurrency, timeout_ms, producer_options, fail_on_error)
    _check_columns(df, [*columns.used(), *([] if id_col is None else [id_col])])
    row_id: Column = (sf.monotonically_increasing_id() if id_col is None else sf.col(id_col)).cast(
        "string"
    )
    extra = [PRESET_MSG_ID] if PRESET_MSG_ID in df.columns else []
    selected = df.select(row_id.alias(ROW_ID), *columns.used(), *extra)
    use_driver_python_in_local_mode(df.sparkSession.sparkContext)
    if engine == "arrow":
        sent = selected.mapInArrow(_arrow_task(job), RESULT_DDL)
    elif engine == "rows":
        rdd = selected.rdd.mapPartitions(_rows_task(job))
        sent = selected.sparkSession.createDataFrame(rdd, RESULT_DDL)
    else:
        raise InvalidOptionError(f"engine must be 'arrow' or 'rows', got {engine!r}")
    results = sent.withColumn("sent_at", sf.timestamp_millis("sent_at_ms")).drop("sent_at_ms")
    return results.localCheckpoint(eager=True)


def _job(
    namesrv: str | Sequence[str],
    group: str,
    columns: Columns,
    concurrency: int,
    timeout_ms: float | None,
    producer_options: Mapping[str, Any] | None,
    fail_on_error: bool,
) -> PartitionJob:
    if (columns.topic is None) == (columns.topic_col is None):
        raise InvalidOptionError("give exactly one of topic= (one topic) or topic_col=")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise InvalidOptionError(f"concurrency must be an int >= 1, got {concurrency!r}")
    options = dict(producer_options or {})
    AsyncProducer(group, namesrv, **options)  # bad options fail here, not in every task
    servers = namesrv if isinstance(namesrv, str) else tuple(namesrv)
    return PartitionJob(servers, group, columns, concurrency, timeout_ms, fail_on_error, options)


def _check_columns(df: DataFrame, names: Sequence[str]) -> None:
    missing = [name for name in names if name not in df.columns]
    if missing:
        raise InvalidOptionError(f"no column {missing} in the DataFrame (it has {df.columns})")


def _arrow_task(job: PartitionJob) -> Any:
    schema = arrow_result_schema()

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = (row for batch in batches for row in batch.to_pylist())
        for chunk in publish_rows(rows, job, _partition_id()):
            yield pa.RecordBatch.from_pylist(chunk, schema=schema)

    return run


def _rows_task(job: PartitionJob) -> Any:
    names = [name for name, _ in RESULT_COLUMNS]

    def run(rows: Iterator[Any]) -> Iterator[tuple[Any, ...]]:
        dicts = (row.asDict() for row in rows)
        for chunk in publish_rows(dicts, job, _partition_id()):
            yield from (tuple(result[name] for name in names) for result in chunk)

    return run


def _partition_id() -> int:
    context = TaskContext.get()
    return -1 if context is None else context.partitionId()


_ARROW_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "int": pa.int32(),
    "bigint": pa.int64(),
    "double": pa.float64(),
}


def arrow_result_schema() -> pa.Schema:
    """The result columns as Arrow types (what mapInArrow must yield)."""
    attempt = pa.struct(
        [
            (part.split(":")[0], _ARROW_TYPES[part.split(":")[1]])
            for part in ATTEMPT_TYPE.removeprefix("struct<").removesuffix(">").split(",")
        ]
    )
    return pa.schema(
        [
            (name, pa.list_(attempt) if kind.startswith("array") else _ARROW_TYPES[kind])
            for name, kind in RESULT_COLUMNS
        ]
    )


def retry_failed(
    results: DataFrame, source: DataFrame, *, id_col: str, **options: Any
) -> DataFrame:
    """Publish again the rows of ``source`` whose result fate is ``not_stored`` or
    ``unknown``; the new results, one row per row re-sent.

    ``results`` must come from ``publish(source, id_col=id_col, ...)`` (ids generated by
    ``publish`` cannot be matched to the source again). A row whose fate was unknown goes
    out under its first ``msg_id`` (UNIQ_KEY), so consumers can de-duplicate if the first
    copy was stored after all. ``options`` are ``publish``'s.
    """
    _check_columns(source, [id_col])
    unknown = sf.col("fate") == sf.lit("unknown")
    failed = results.where(sf.col("fate").isin("not_stored", "unknown")).select(
        sf.col("row_id").alias(ROW_ID), sf.when(unknown, sf.col("msg_id")).alias(PRESET_MSG_ID)
    )
    matched = sf.col(id_col).cast("string") == sf.col(ROW_ID)
    again = source.join(failed, matched, "inner").drop(ROW_ID)
    return publish(again, id_col=id_col, **options)
