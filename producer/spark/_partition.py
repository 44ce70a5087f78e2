"""What one Spark task does with its partition: one producer, on its own loop thread (the
blocking facade), sending with bounded concurrency and streaming result rows back chunk by
chunk. Both the Arrow and the row-at-a-time entry points end here."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from producer import Producer as AsyncProducer
from producer.blocking import Producer as BlockingProducer
from producer.errors import ProducerError
from producer.spark._rows import Columns, failure_row, message_for, success_row, topic_of

Row = Mapping[str, Any]
ResultRow = dict[str, Any]


class RowSendError(ProducerError):
    """A row failed and ``fail_on_error=True``: the Spark task fails with it."""


@dataclass(frozen=True)
class PartitionJob:
    """Everything a task needs; pickled to the executors."""

    namesrv: str | tuple[str, ...]
    group: str
    columns: Columns
    concurrency: int
    timeout_ms: float | None
    fail_on_error: bool
    producer_options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def chunk_rows(self) -> int:
        # Big enough to keep `concurrency` sends busy, small enough to stream results.
        return max(256, 4 * self.concurrency)


def publish_rows(
    rows: Iterable[Row], job: PartitionJob, partition: int
) -> Iterator[list[ResultRow]]:
    """Send every row; yield chunks of result rows, one per input row, in input order.

    The producer is closed when the partition ends, also when Spark stops reading early or
    a row fails under ``fail_on_error``."""
    with BlockingProducer(job.group, job.namesrv, **job.producer_options) as producer:
        gate = producer.submit(_new_gate(job.concurrency)).result()
        pending: deque[Future[list[ResultRow]]] = deque()
        for chunk in _chunks(rows, job.chunk_rows):
            pending.append(producer.submit(_chunk_sender(chunk, job, partition, gate)))
            # One chunk queued behind the one being read: no lull at chunk boundaries.
            while len(pending) > 1:
                yield _checked(pending.popleft().result(), job)
        while pending:
            yield _checked(pending.popleft().result(), job)


def _new_gate(concurrency: int) -> Any:
    async def make(_: AsyncProducer) -> asyncio.Semaphore:
        return asyncio.Semaphore(concurrency)  # made on the producer's loop, used only there

    return make


def _chunks(rows: Iterable[Row], size: int) -> Iterator[list[Row]]:
    chunk: list[Row] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _chunk_sender(
    chunk: list[Row], job: PartitionJob, partition: int, gate: asyncio.Semaphore
) -> Any:
    async def send_chunk(producer: AsyncProducer) -> list[ResultRow]:
        sends = (_send_row(producer, row, job, partition, gate) for row in chunk)
        return list(await asyncio.gather(*sends))

    return send_chunk


async def _send_row(
    producer: AsyncProducer, row: Row, job: PartitionJob, partition: int, gate: asyncio.Semaphore
) -> ResultRow:
    async with gate:
        started_ms = time.time() * 1000.0
        began = time.perf_counter()
        try:
            message = message_for(row, job.columns)
            order_key = (
                None if job.columns.order_key_col is None else row[job.columns.order_key_col]
            )
            result = await producer.send(
                message,
                timeout_ms=job.timeout_ms,
                order_key=None if order_key is None else str(order_key),
            )
        except ProducerError as error:
            took_ms = (time.perf_counter() - began) * 1000.0
            topic = topic_of(row, job.columns)
            return failure_row(row, partition, topic, error, started_ms, took_ms)
        took_ms = (time.perf_counter() - began) * 1000.0
        return success_row(row, partition, result, started_ms, took_ms)


def _checked(results: list[ResultRow], job: PartitionJob) -> list[ResultRow]:
    if job.fail_on_error:
        for row in results:
            if row["fate"] is not None:
                raise RowSendError(
                    f"row {row['row_id']!r} was not published: {row['error_type']}: "
                    f"{row['error_message']} (fate {row['fate']}; fail_on_error=True)",
                    code=row["error_code"],
                )
    return results
