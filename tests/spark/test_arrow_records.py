"""Pulled records straight to Arrow (no JVM): the batch is row for row what the consumer's
decoder and ``to_batch`` make of the same bytes - every column, properties decoded as the
consumer decodes them, compressed bodies inflated, the range's end and the tag filter
applied - and an undecodable body or a malformed record is refused, never handed on."""

from __future__ import annotations

import zlib
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from producer._consume.received import decode_pulled
from producer._remoting import message_codec, properties, retry_topics, store_record
from producer._remoting.message_codec import COMPRESSED_FLAG, STOREHOSTADDRESS_V6_FLAG
from producer._remoting.store_record import StoreRecord, encode_record
from producer._types.consumer.received import ReceivedMessage
from producer.errors import RemoteProtocolError, UndecodableBodyError
from producer.spark import _arrow_records as fast
from producer.spark._arrow_records import records_to_batch
from producer.spark._queue_read import ARROW_SCHEMA, to_batch


def _record(n: int, **overrides: Any) -> StoreRecord:
    fields: dict[str, Any] = {
        "topic": "Orders",
        "queue_id": 3,
        "queue_offset": 7 + n,
        "commit_log_offset": 1000 * n,
        "body": b"body-%d" % n,
        "properties": {"TAGS": "a", "KEYS": "k1  k2", "UNIQ_KEY": f"K{n}", "n": str(n)},
        "born_timestamp": 1 + n,
        "born_host": "10.0.0.1:5000",
        "store_timestamp": 2 + n,
        "store_host": "10.0.0.2:10911",
        "reconsume_times": n % 3,
    }
    return StoreRecord(**{**fields, **overrides})


def _bytes(records: list[StoreRecord]) -> bytes:
    return b"".join(map(encode_record, records))


def _expected(
    data: bytes, below: int | None = None, tags: frozenset[str] | None = None
) -> list[dict[str, Any]]:
    kept = [
        m
        for m in decode_pulled(data, "broker-a")
        if (below is None or m.queue_offset < below) and (tags is None or m.tags in tags)
    ]
    return to_batch(kept).to_pylist()


def _fast_only(messages: list[ReceivedMessage]) -> pa.RecordBatch:
    raise AssertionError("these records should not need the general path")


def _rows(batch: pa.RecordBatch) -> list[dict[str, Any]]:
    assert batch.schema.equals(ARROW_SCHEMA)
    return batch.to_pylist()


def test_every_column_matches_the_consumers_decoding() -> None:
    records = [_record(n) for n in range(5)]
    records.append(_record(5, properties={}))  # no UNIQ_KEY: the offset message id
    records.append(_record(6, properties={"TAGS": "b"}, body=b""))  # no keys, empty body
    records.append(_record(7, store_host="10.0.0.9:10911"))
    data = _bytes(records)
    batch = records_to_batch(data, "broker-a", ARROW_SCHEMA, _fast_only)
    assert _rows(batch) == _expected(data)
    assert batch.column("msg_id")[5].as_py() == decode_pulled(data, "b")[5].offset_msg_id
    assert batch.column("keys")[0].as_py() == ["k1", "k2"]


def test_java_style_and_malformed_properties_decode_as_the_consumer_does() -> None:
    java = _record(0, properties=[("TAGS", "a"), ("UNIQ_KEY", "K0\x02")])  # trailing \x02
    odd = _record(1, properties=[("a", ""), ("", "b"), ("x\x02y", "v"), ("c", "d\x01e")])
    data = _bytes([java, odd])
    batch = records_to_batch(data, "broker-a", ARROW_SCHEMA, _fast_only)
    assert _rows(batch) == _expected(data)
    assert batch.column("properties")[1].as_py() == [("y", "v"), ("c", "d\x01e")]


def test_the_ranges_end_and_the_tag_filter_leave_rows_out() -> None:
    tagged = [_record(n, properties={"TAGS": "ab"[n % 2], "UNIQ_KEY": f"K{n}"}) for n in range(6)]
    data = _bytes([*tagged, _record(6, properties={"UNIQ_KEY": "K6"})])
    for below, tags in ((10, None), (None, frozenset({"b"})), (12, frozenset({"a", "z"}))):
        batch = records_to_batch(data, "broker-a", ARROW_SCHEMA, _fast_only, below=below, tags=tags)
        assert _rows(batch) == _expected(data, below, tags)
        assert batch.num_rows < 7


def test_compressed_bodies_are_inflated_and_an_undecodable_one_is_refused() -> None:
    packed = _record(1, body=zlib.compress(b"x" * 5000), sys_flag=COMPRESSED_FLAG)
    data = _bytes([_record(0), packed, _record(2)])
    batch = records_to_batch(data, "broker-a", ARROW_SCHEMA, _fast_only)
    assert batch.column("body").to_pylist() == [b"body-0", b"x" * 5000, b"body-2"]
    assert _rows(batch) == _expected(data)
    corrupt = _record(3, body=b"not zlib", sys_flag=COMPRESSED_FLAG)
    data = _bytes([_record(0), corrupt])
    with pytest.raises(UndecodableBodyError, match="K3"):
        records_to_batch(data, "broker-a", ARROW_SCHEMA, _fast_only)
    # Left out by the tag filter, it is not this read's business (as in the consumer).
    other = _record(3, body=b"not zlib", sys_flag=COMPRESSED_FLAG, properties={"TAGS": "z"})
    data = _bytes([_record(0), other])
    kept = records_to_batch(data, "broker-a", ARROW_SCHEMA, _fast_only, tags=frozenset("a"))
    assert kept.column("body").to_pylist() == [b"body-0"]


def test_what_the_fast_path_does_not_cover_goes_the_consumers_way() -> None:
    v6 = _record(1, store_host="[::1]:10911", sys_flag=STOREHOSTADDRESS_V6_FLAG)
    retry = _record(2, topic="%RETRY%g", properties={"RETRY_TOPIC": "Orders", "UNIQ_KEY": "R"})
    twice = _record(3, properties=[("n", "1"), ("n", "2"), ("UNIQ_KEY", "T")])
    for odd in (v6, retry, twice):
        data = _bytes([_record(0), odd])
        batch = records_to_batch(data, "broker-a", ARROW_SCHEMA, to_batch)
        assert _rows(batch) == _expected(data)
    assert batch.column("properties")[1].as_py() == [("n", "2"), ("UNIQ_KEY", "T")]
    bad = _bytes([_record(0)])[:-1] + b"\xff"  # the properties' last byte not UTF-8
    with pytest.raises(RemoteProtocolError):
        records_to_batch(bad, "broker-a", ARROW_SCHEMA, to_batch)
    with pytest.raises(RemoteProtocolError):
        records_to_batch(_bytes([_record(0)])[:-3], "broker-a", ARROW_SCHEMA, to_batch)


text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=6)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.binary(max_size=40), st.lists(st.tuples(text, text), max_size=4)),
        min_size=1,
        max_size=8,
    )
)
def test_random_records_match_the_consumers_decoding(
    drawn: list[tuple[bytes, list[tuple[str, str]]]],
) -> None:
    records = [_record(n, body=body, properties=props) for n, (body, props) in enumerate(drawn)]
    data = _bytes(records)
    batch = records_to_batch(data, "broker-a", ARROW_SCHEMA, to_batch)
    assert _rows(batch) == _expected(data)


def test_the_layout_is_the_record_decoders() -> None:
    """The column-wise reader's constants are the record-by-record decoder's."""
    assert store_record._FIXED_V4.size == fast.BODY_AT
    assert fast.MAGIC_CODE == store_record.MAGIC_CODE
    assert fast.COMPRESSED_FLAG == message_codec.COMPRESSED_FLAG
    v6 = message_codec.BORNHOST_V6_FLAG | message_codec.STOREHOSTADDRESS_V6_FLAG
    assert v6 == fast.V6_FLAGS
    names = (properties.TAGS, properties.KEYS, properties.UNIQ_KEY)
    assert names == (fast.TAGS, fast.KEYS, fast.UNIQ_KEY)
    separators = (properties.PROPERTY_SEPARATOR, properties.NAME_VALUE_SEPARATOR)
    assert separators == (fast.PROPERTY_SEPARATOR, fast.NAME_VALUE_SEPARATOR)
    assert fast.KEY_SEPARATOR == properties.KEY_SEPARATOR
    assert fast.RETRY_PREFIX == retry_topics.RETRY_PREFIX
