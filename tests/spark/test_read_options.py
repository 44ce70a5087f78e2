"""The data source's options, tag pushdown and micro-batch caps, without a JVM."""

from __future__ import annotations

import pytest
from pyspark.sql.datasource import EqualTo, GreaterThan, In

from producer.consumer import MessageQueue
from producer.errors import InvalidOptionError
from producer.spark._read_options import read_options
from producer.spark._source import BatchReader
from producer.spark._stream import capped

BASE = {"namesrv": "127.0.0.1:9876", "topic": "T"}


def test_offset_specs_and_defaults() -> None:
    batch = read_options(BASE, streaming=False)
    assert (batch.starting, batch.ending, batch.fail_on_data_loss) == ("earliest", "latest", True)
    assert read_options(BASE, streaming=True).starting == "latest"  # as Spark's Kafka source
    given = {**BASE, "startingOffsets": '{"broker-a": {"0": 5}}', "endingOffsets": "1700000000000"}
    parsed = read_options(given, streaming=False)
    assert (parsed.starting, parsed.ending) == ({"broker-a": {"0": 5}}, 1_700_000_000_000)


@pytest.mark.parametrize(
    ("option", "value", "named"),
    [
        ("startingOffsets", "{not json", "startingOffsets"),
        ("maxRecordsPerPartition", "0", "maxRecordsPerPartition"),
        ("failOnDataLoss", "maybe", "failOnDataLoss"),
    ],
)
def test_bad_options_name_themselves(option: str, value: str, named: str) -> None:
    with pytest.raises(InvalidOptionError, match=named):
        read_options({**BASE, option: value}, streaming=False)
    with pytest.raises(InvalidOptionError, match="namesrv"):
        read_options({"topic": "T"}, streaming=False)


def test_tag_filters_narrow_the_broker_filter() -> None:
    reader = BatchReader(read_options({**BASE, "tags": "a || b || c"}, streaming=False))
    pushed = [EqualTo(("tags",), "a"), GreaterThan(("queue_id",), 1)]
    assert list(reader.pushFilters(pushed)) == pushed  # all still checked by Spark
    assert reader.options.expression == "a"
    other = BatchReader(read_options(BASE, streaming=False))
    list(other.pushFilters([In(("tags",), ("x", "y"))]))
    assert other.options.expression == "x || y"


def test_a_micro_batch_cap_is_shared_by_the_backlogs() -> None:
    a, b, c = (MessageQueue("T", "broker-a", i) for i in range(3))
    starts = {a: 0, b: 10, c: 5}
    ends = {a: 100, b: 20, c: 5}
    assert capped(starts, ends, 1000) == ends
    limited = capped(starts, ends, 11)
    assert sum(limited[q] - starts[q] for q in ends) == 11
    assert limited == {a: 10, b: 11, c: 5}
