"""Reading one queue's offset range into Arrow batches (on an executor), and turning offset
specs into offsets (on the driver). Both use the blocking pull consumer: the async one on
a loop thread of its own, closed when the work is done."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from producer.blocking import PullConsumer
from producer.consumer import MessageQueue, ReceivedMessage
from producer.consumer import PullConsumer as AsyncPullConsumer
from producer.spark._arrow_records import records_to_batch
from producer.spark._read_options import (
    EARLIEST,
    EARLIEST_IN_JSON,
    LATEST,
    LATEST_IN_JSON,
    OffsetSpec,
    ReadOptions,
    offset_in,
)

# The columns of a read, modelled on Spark's Kafka source where they mean the same.
READ_COLUMNS: tuple[tuple[str, str], ...] = (
    ("topic", "string"),
    ("broker", "string"),
    ("queue_id", "int"),
    ("queue_offset", "bigint"),
    ("msg_id", "string"),
    ("keys", "array<string>"),
    ("tags", "string"),
    ("properties", "map<string,string>"),
    ("body", "binary"),
    ("born_timestamp", "bigint"),  # ms since the epoch (timestamp_millis() for a timestamp)
    ("store_timestamp", "bigint"),
    ("store_host", "string"),
    ("reconsume_times", "int"),
)
READ_DDL = ", ".join(f"{name} {kind}" for name, kind in READ_COLUMNS)
ARROW_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("broker", pa.string()),
        ("queue_id", pa.int32()),
        ("queue_offset", pa.int64()),
        ("msg_id", pa.string()),
        ("keys", pa.list_(pa.string())),
        ("tags", pa.string()),
        ("properties", pa.map_(pa.string(), pa.string())),
        ("body", pa.binary()),
        ("born_timestamp", pa.int64()),
        ("store_timestamp", pa.int64()),
        ("store_host", pa.string()),
        ("reconsume_times", pa.int32()),
    ]
)
CHUNK_BYTES = 1 << 20  # records per Arrow batch (~4,000 small messages): pulled on the
# consumer's loop while Spark takes the last


@dataclass(frozen=True)
class QueueSlice(InputPartition):
    """Offsets ``[start, end)`` of one queue: one Spark partition."""

    broker: str
    queue_id: int
    start: int
    end: int


def slices(
    starts: dict[MessageQueue, int], ends: dict[MessageQueue, int], max_records: int | None
) -> list[QueueSlice]:
    """One partition per queue with something to read, cut every ``max_records`` offsets."""
    found: list[QueueSlice] = []
    for queue in sorted(starts, key=lambda q: (q.broker_name, q.queue_id)):
        start, end = starts[queue], ends.get(queue, starts[queue])
        step = max_records or max(end - start, 1)
        for low in range(start, end, step):
            found.append(QueueSlice(queue.broker_name, queue.queue_id, low, min(low + step, end)))
    return found


def resolve(
    consumer: PullConsumer, queues: Sequence[MessageQueue], spec: OffsetSpec, default: str
) -> dict[MessageQueue, int]:
    """Offsets for ``spec``; a queue the JSON does not name takes ``default`` (an edge)."""
    if spec in (EARLIEST, LATEST):
        return _edges(consumer, queues, str(spec))
    if isinstance(spec, int):
        return consumer.submit(lambda c: c.offsets_for_time(queues, spec)).result()
    assert isinstance(spec, dict)
    edge_of = {EARLIEST_IN_JSON: EARLIEST, LATEST_IN_JSON: LATEST}
    found: dict[MessageQueue, int] = {}
    by_edge: dict[str, list[MessageQueue]] = {EARLIEST: [], LATEST: []}
    for queue in queues:
        offset = offset_in(spec, queue)
        if offset is None or offset in edge_of:
            by_edge[default if offset is None else edge_of[offset]].append(queue)
        else:
            found[queue] = offset
    for edge, chosen in by_edge.items():
        found.update(_edges(consumer, chosen, edge) if chosen else {})
    return found


def _edges(
    consumer: PullConsumer, queues: Sequence[MessageQueue], edge: str
) -> dict[MessageQueue, int]:
    if edge == EARLIEST:
        return consumer.submit(lambda c: c.beginning_offsets(queues)).result()
    return consumer.submit(lambda c: c.end_offsets(queues)).result()


def driver_consumer(options: ReadOptions) -> PullConsumer:
    return PullConsumer(options.group, options.namesrv)


def read_slice(options: ReadOptions, part: QueueSlice) -> Iterator[pa.RecordBatch]:
    """The slice's messages as Arrow batches, built column by column from the pulled
    records (``records_to_batch``). Below the queue's minimum offset: an
    OffsetOutOfRangeError with ``failOnDataLoss`` (the task fails), else the broker's
    minimum and on. The consumer is closed however the read ends."""
    queue = MessageQueue(options.topic, part.broker, part.queue_id)
    with PullConsumer(
        options.group,
        options.namesrv,
        offset_out_of_range="raise" if options.fail_on_data_loss else "reset",
    ) as consumer:
        consumer.assign([queue], options.expression)
        consumer.seek(queue, part.start)
        pending: Future[bytes] | None = consumer.submit(_chunk(queue, part.end))
        while pending is not None:
            records = pending.result()
            # The next chunk is pulled while this one is converted and handed to Spark.
            pending = consumer.submit(_chunk(queue, part.end)) if records else None
            if records:
                batch = records_to_batch(
                    records, part.broker, ARROW_SCHEMA, to_batch, below=part.end, tags=options.tags
                )
                if batch.num_rows:
                    yield batch


def _chunk(queue: MessageQueue, end: int):  # type: ignore[no-untyped-def]
    async def pull(consumer: AsyncPullConsumer) -> bytes:
        """About CHUNK_BYTES of records from the position on; b"" when the range is done.
        Records at or beyond ``end`` may come along: the batch leaves them out."""
        got: list[bytes] = []
        size = 0
        while size < CHUNK_BYTES and await consumer.position(queue) < end:
            records = await consumer.pull_records(queue)
            got.append(records)
            size += len(records)
            # Nothing at the position though the range says more: the tag filter skipped
            # to it (NO_MATCHED moves on), or the queue ends early: stop there.
            if not records and not await _moved_on(consumer, queue):
                break
        return b"".join(got)

    return pull


async def _moved_on(consumer: AsyncPullConsumer, queue: MessageQueue) -> bool:
    """Whether the queue still has offsets beyond the position (else stop reading)."""
    ends = await consumer.end_offsets([queue])
    return await consumer.position(queue) < ends[queue]


def to_batch(messages: list[ReceivedMessage]) -> pa.RecordBatch:
    """Messages as one Arrow batch of the read columns: the general path of
    ``records_to_batch`` (which builds the same rows without a message object)."""
    columns = [
        [m.topic for m in messages],
        [m.queue.broker_name for m in messages],
        [m.queue.queue_id for m in messages],
        [m.queue_offset for m in messages],
        [m.msg_id for m in messages],
        [m.keys for m in messages],
        [m.tags for m in messages],
        [list(m.properties.items()) for m in messages],
        [m.body for m in messages],
        [m.born_timestamp for m in messages],
        [m.store_timestamp for m in messages],
        [m.store_host for m in messages],
        [m.reconsume_times for m in messages],
    ]
    return pa.RecordBatch.from_arrays(
        [pa.array(c, type=f.type) for c, f in zip(columns, ARROW_SCHEMA, strict=True)],
        schema=ARROW_SCHEMA,
    )
