"""``spark.readStream.format("rocketmq")``: offsets per queue as the stream's offset.

Spark checkpoints ``{broker: {queue_id: offset}}`` after each micro-batch and plans the
next from it, so a restarted query reads exactly the ranges it has not committed: with an
idempotent sink nothing is lost or repeated. Each trigger looks up the topic's queues
again, so new queues are read from their first offset. ``maxOffsetsPerTrigger`` caps a
micro-batch (Spark's admission control, ``ReadMaxRows``), shared fairly by the queues.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows

from producer.blocking import PullConsumer
from producer.consumer import MessageQueue
from producer.errors import OffsetOutOfRangeError
from producer.spark._queue_read import (
    QueueSlice,
    driver_consumer,
    read_slice,
    resolve,
    slices,
)
from producer.spark._read_options import (
    EARLIEST,
    LATEST,
    ReadOptions,
    StreamOffset,
    offset_in,
    to_offsets,
)


class StreamReader(DataSourceStreamReader):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self._consumer: PullConsumer | None = None  # the driver's; never pickled

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options, "_consumer": None}

    def initialOffset(self) -> StreamOffset:  # noqa: N802 - Spark's names
        consumer = self._driver()
        queues = consumer.queues(self.options.topic)
        return to_offsets(resolve(consumer, queues, self.options.starting, LATEST))

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802
        cap = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if cap is None else ReadMaxRows(cap)

    def latestOffset(self, start: StreamOffset, limit: ReadLimit) -> StreamOffset:  # noqa: N802
        consumer = self._driver()
        queues = consumer.queues(self.options.topic)  # new queues show up here
        starts = self._starts(consumer, queues, start)
        ends = resolve(consumer, queues, LATEST, LATEST)
        if isinstance(limit, ReadMaxRows):
            ends = capped(starts, ends, limit.max_rows)
        return to_offsets(ends)

    def partitions(self, start: StreamOffset, end: StreamOffset) -> Sequence[InputPartition]:
        consumer = self._driver()
        queues = [MessageQueue(self.options.topic, b, int(q)) for b in end for q in end[b]]
        starts = self._starts(consumer, queues, start)
        ends = {q: offset_in(end, q) or 0 for q in queues}
        return slices(starts, ends, self.options.max_records_per_partition)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, QueueSlice)
        yield from read_slice(self.options, partition)

    def commit(self, end: StreamOffset) -> None:
        """Nothing to do: the offsets live in Spark's checkpoint, not in a group."""

    def stop(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def _starts(
        self, consumer: PullConsumer, queues: Sequence[MessageQueue], start: StreamOffset
    ) -> dict[MessageQueue, int]:
        """Where each queue's next range begins: the stream's offset, or a new queue's
        first offset. An offset below the queue's minimum lost messages: that fails with
        ``failOnDataLoss``, else the range starts at the minimum."""
        known = {q: o for q in queues if (o := offset_in(start, q)) is not None}
        new = [q for q in queues if q not in known]
        found = {**known, **(resolve(consumer, new, EARLIEST, EARLIEST) if new else {})}
        mins = resolve(consumer, list(known), EARLIEST, EARLIEST) if known else {}
        for queue, low in mins.items():
            if found[queue] < low:
                if self.options.fail_on_data_loss:
                    raise OffsetOutOfRangeError(str(queue), found[queue], low, low, low)
                found[queue] = low
        return found

    def _driver(self) -> PullConsumer:
        if self._consumer is None:
            self._consumer = driver_consumer(self.options)
        return self._consumer


def capped(
    starts: dict[MessageQueue, int], ends: dict[MessageQueue, int], max_rows: int
) -> dict[MessageQueue, int]:
    """Ends moved back so that at most ``max_rows`` offsets are read, each queue getting a
    share in proportion to its backlog (the rest handed out one by one, in queue order)."""
    backlog = {q: max(0, ends[q] - starts.get(q, ends[q])) for q in ends}
    total = sum(backlog.values())
    if total <= max_rows:
        return dict(ends)
    share = {q: backlog[q] * max_rows // total for q in backlog}
    spare = max_rows - sum(share.values())
    for queue in sorted(backlog, key=lambda q: (q.broker_name, q.queue_id)):
        if spare and share[queue] < backlog[queue]:
            share[queue] += 1
            spare -= 1
    return {q: starts.get(q, ends[q]) + share[q] for q in ends}
