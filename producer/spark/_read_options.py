"""The ``rocketmq`` data source's read options, checked once on the driver (no Spark here).

Offsets are ``{broker: {queue_id: offset}}``: the JSON users give as ``startingOffsets`` /
``endingOffsets`` and the shape a stream's offset takes in Spark's checkpoint (JSON keys
are strings, so queue ids are too).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from producer.consumer import MessageQueue
from producer.errors import InvalidOptionError

EARLIEST, LATEST = "earliest", "latest"
EARLIEST_IN_JSON, LATEST_IN_JSON = -2, -1  # as Spark's Kafka source spells them in JSON
DEFAULT_GROUP = "spark-rocketmq-reader"  # pulls need a group; nothing is committed for it

#: The source's options (Spark hands their names over in any case).
READ_OPTIONS = (
    "namesrv",
    "topic",
    "group",
    "startingOffsets",
    "endingOffsets",
    "tags",
    "maxRecordsPerPartition",
    "maxOffsetsPerTrigger",
    "failOnDataLoss",
    "pollTimeoutMs",
)
#: Options Spark itself may pass to any source or sink.
SPARK_OPTIONS = ("path", "checkpointLocation")

#: "earliest", "latest", a wall-clock time in ms, or explicit offsets per broker and queue.
OffsetSpec = str | int | dict[str, dict[str, int]]
StreamOffset = dict[str, dict[str, int]]


@dataclass(frozen=True)
class ReadOptions:
    """Everything a read needs; pickled to the executors, so plain."""

    namesrv: str
    topic: str
    group: str
    starting: OffsetSpec
    ending: OffsetSpec
    tags: frozenset[str] | None  # None: every message
    max_records_per_partition: int | None
    max_offsets_per_trigger: int | None
    fail_on_data_loss: bool
    poll_timeout_ms: int

    @property
    def expression(self) -> str:
        """The broker's tag filter (``TagA || TagB``, ``*`` for all)."""
        return "*" if self.tags is None else " || ".join(sorted(self.tags))

    def with_tags(self, tags: frozenset[str]) -> ReadOptions:
        """Narrowed to ``tags`` (a pushed-down filter): the intersection with the option's."""
        kept = tags if self.tags is None else self.tags & tags
        return ReadOptions(**{**self.__dict__, "tags": kept})


def read_options(options: Mapping[str, str], *, streaming: bool) -> ReadOptions:
    """Parse the user's ``.option(...)`` values (Spark hands them over as strings)."""
    check_option_names("the rocketmq source", options, READ_OPTIONS)
    get = {k.lower(): v for k, v in options.items()}.get
    namesrv, topic = get("namesrv"), get("topic")
    if not namesrv or not topic:
        raise InvalidOptionError(
            'the rocketmq source needs .option("namesrv", "host:9876") and .option("topic", ...)'
        )
    tags = get("tags")
    return ReadOptions(
        namesrv=namesrv,
        topic=topic,
        group=get("group") or DEFAULT_GROUP,
        starting=offset_spec("startingOffsets", get("startingoffsets") or _start(streaming)),
        ending=offset_spec("endingOffsets", get("endingoffsets") or LATEST),
        tags=None if tags in (None, "", "*") else frozenset(_split_tags(tags)),
        max_records_per_partition=_positive(
            "maxRecordsPerPartition", get("maxrecordsperpartition")
        ),
        max_offsets_per_trigger=_positive("maxOffsetsPerTrigger", get("maxoffsetspertrigger")),
        fail_on_data_loss=_bool("failOnDataLoss", get("failondataloss") or "true"),
        poll_timeout_ms=_positive("pollTimeoutMs", get("polltimeoutms")) or 1000,
    )


def check_option_names(where: str, given: Iterable[str], known: Sequence[str]) -> None:
    """Refuse an option ``where`` does not take, naming the nearest one (a typo such as
    ``startingOffset`` would otherwise be ignored in silence)."""
    names = (*known, *SPARK_OPTIONS)
    lower = {name.lower() for name in names}
    for name in given:
        if name.lower() not in lower:
            raise InvalidOptionError.unknown(where, name, names)


def _start(streaming: bool) -> str:
    return LATEST if streaming else EARLIEST  # as Spark's Kafka source


def _split_tags(value: str) -> list[str]:
    return [t.strip() for t in value.split("||") if t.strip()]


def offset_spec(name: str, value: str) -> OffsetSpec:
    """``earliest``, ``latest``, a timestamp in ms (digits), or the JSON of offsets."""
    text = value.strip()
    if text.lower() in (EARLIEST, LATEST):
        return text.lower()
    if text.isdigit():
        return int(text)
    try:
        parsed = json.loads(text)
        return {
            str(broker): {str(int(q)): int(o) for q, o in queues.items()}
            for broker, queues in parsed.items()
        }
    except (ValueError, TypeError, AttributeError):
        raise InvalidOptionError(
            f"{name} must be 'earliest', 'latest', a timestamp in ms, or JSON like "
            f'{{"broker-a": {{"0": 42}}}}; got {value!r}'
        ) from None


def offset_in(offsets: StreamOffset, queue: MessageQueue) -> int | None:
    return offsets.get(queue.broker_name, {}).get(str(queue.queue_id))


def to_offsets(found: Mapping[MessageQueue, int]) -> StreamOffset:
    """``{queue: offset}`` as the JSON-ready ``{broker: {queue_id: offset}}``."""
    offsets: StreamOffset = {}
    for queue in sorted(found, key=lambda q: (q.broker_name, q.queue_id)):
        offsets.setdefault(queue.broker_name, {})[str(queue.queue_id)] = found[queue]
    return offsets


def _positive(name: str, value: str | None) -> int | None:
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise InvalidOptionError(f"{name} must be a whole number >= 1, got {value!r}")
    return number


def _bool(name: str, value: str) -> bool:
    if value.lower() not in ("true", "false"):
        raise InvalidOptionError(f"{name} must be true or false, got {value!r}")
    return value.lower() == "true"
