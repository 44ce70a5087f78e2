"""Pulled commit-log records straight to an Arrow batch of the read columns, column by
column: no Python object per message field.

A pull's body is the broker's records back to back (docs/consuming.md 1.6). Walking it
finds where each record starts (one integer per record); every fixed field is then
gathered for all records at once with numpy, bodies and properties become Arrow views
into the buffer (then one copy into contiguous values), and the properties map, tag,
keys and message id come from Arrow's string kernels. The rows are exactly what
:func:`~producer.spark._queue_read.to_batch` makes of the messages the pull consumer
decodes from the same bytes, with the same rules:

* the tag is re-checked against the read's tags (the broker filters by hash only);
* a compressed body is inflated by the consumer's decoder (that record alone), and one
  that does not inflate raises :class:`~producer.errors.UndecodableBodyError` (its bytes
  are never handed on as the body); so is a message id from the offset id, for a record
  without ``UNIQ_KEY``;
* properties decode as :func:`~producer._remoting.properties.decode_properties` does.

Whatever this fast path does not cover - IPv6 hosts, 5.x records, a retry topic,
duplicate property names, anything malformed - goes through the consumer's decoder
(:func:`~producer.consumer.decode_records`) and ``to_batch``: one definition of every
rule, and a bad record still raises :class:`~producer.errors.RemoteProtocolError`.
Pure: bytes in, a batch out.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from producer.consumer import ReceivedMessage, decode_records, retry_topic

__all__ = ["records_to_batch"]

Ints = npt.NDArray[np.int64]
Slow = Callable[[list[ReceivedMessage]], pa.RecordBatch]  # to_batch: the general path

# The record layout (CommitLog's 4.x format; producer._remoting.store_record decodes it
# record by record, and tests/spark/test_arrow_records.py holds these to its constants).
MAGIC_CODE = -626843481  # MessageDecoder.MESSAGE_MAGIC_CODE
COMPRESSED_FLAG = 0x1  # MessageSysFlag.COMPRESSED_FLAG
V6_FLAGS = 0x30  # BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG
TAGS, KEYS, UNIQ_KEY = "TAGS", "KEYS", "UNIQ_KEY"  # MessageConst property names
PROPERTY_SEPARATOR, NAME_VALUE_SEPARATOR, KEY_SEPARATOR = "\x02", "\x01", " "
RETRY_PREFIX = retry_topic("")
_SIZE = struct.Struct(">i")
BODY_AT = 88  # a 4.x IPv4 record's fixed fields (store_record._FIXED_V4) end here
_MIN_RECORD = BODY_AT + 3  # an empty body, a topic length byte, a properties length
# Where each fixed field sits in a 4.x IPv4 record, and its big-endian type.
_MAGIC, _QUEUE_ID, _QUEUE_OFFSET, _COMMIT_OFFSET = (4, ">i4"), (12, ">i4"), (20, ">i8"), (28, ">i8")
_SYS_FLAG, _BORN_TS, _STORE_TS = (36, ">i4"), (40, ">i8"), (56, ">i8")
_STORE_IP, _STORE_PORT = (64, ">u4"), (68, ">i4")
_RECONSUME, _BODY_LEN = (72, ">i4"), (84, ">i4")


def records_to_batch(
    data: bytes,
    broker: str,
    schema: pa.Schema,
    slow: Slow,
    *,
    below: int | None = None,
    tags: frozenset[str] | None = None,
) -> pa.RecordBatch:
    """The records of ``data`` (pulled from ``broker``) with a queue offset below
    ``below`` and a tag among ``tags`` (None: any), as one batch of ``schema``."""
    starts = _record_starts(data)
    if starts is not None and not len(starts):
        return pa.RecordBatch.from_pylist([], schema=schema)
    if starts is None:
        return _general(data, broker, slow, below, tags)
    buf = np.frombuffer(data, dtype=np.uint8)
    fields = _Fields(buf, starts, broker)
    props = fields.properties()
    if props is None or fields.topic is None or fields.topic.startswith(RETRY_PREFIX):
        return _general(data, broker, slow, below, tags)
    names, values, parent = _pairs(props)
    if _has_duplicates(names, parent):
        return _general(data, broker, slow, below, tags)
    tag = _property(names, values, parent, TAGS, len(starts))
    keep = _kept(fields.get(_QUEUE_OFFSET), tag, below, tags)
    columns = {
        "topic": pa.repeat(pa.scalar(fields.topic), len(starts)),
        "broker": pa.repeat(pa.scalar(broker), len(starts)),
        "queue_id": pa.array(fields.get(_QUEUE_ID).astype(np.int32)),
        "queue_offset": pa.array(fields.get(_QUEUE_OFFSET)),
        "msg_id": _msg_ids(fields, _property(names, values, parent, UNIQ_KEY, len(starts))),
        "keys": _keys(_property(names, values, parent, KEYS, len(starts))),
        "tags": tag,
        "properties": pa.MapArray.from_arrays(_offsets(parent, len(starts)), names, values),
        "body": fields.bodies(),
        "born_timestamp": pa.array(fields.get(_BORN_TS)),
        "store_timestamp": pa.array(fields.get(_STORE_TS)),
        "store_host": fields.store_hosts(),
        "reconsume_times": pa.array(fields.get(_RECONSUME).astype(np.int32)),
    }
    batch = pa.RecordBatch.from_arrays([columns[f.name] for f in schema], schema=schema)
    batch = batch if keep is None else batch.filter(pa.array(keep))
    return _inflated(batch, fields, keep)


def _general(
    data: bytes, broker: str, slow: Slow, below: int | None, tags: frozenset[str] | None
) -> pa.RecordBatch:
    """The consumer's decoder and ``to_batch``, with the consumer's rules."""
    messages = decode_records(data, broker)
    kept = [
        m
        for m in messages
        if (below is None or m.queue_offset < below) and (tags is None or m.tags in tags)
    ]
    for message in kept:
        if message.undecodable is not None:
            raise message.undecodable
    return slow(kept)


def _record_starts(data: bytes) -> Ints | None:
    """Where each record starts, if every one is a well-formed 4.x IPv4 record's size."""
    view, pos, end = memoryview(data), 0, len(data)
    found: list[int] = []
    unpack = _SIZE.unpack_from
    while pos < end:
        if end - pos < _MIN_RECORD:
            return None
        (size,) = unpack(view, pos)
        if size < _MIN_RECORD or size > end - pos:
            return None
        found.append(pos)
        pos += size
    return np.array(found, dtype=np.int64)


class _Fields:
    """Column-wise reads of the records starting at ``starts``; ``properties()`` checks
    that the variable part of every record adds up (else it says None)."""

    def __init__(self, buf: npt.NDArray[np.uint8], starts: Ints, broker: str) -> None:
        self.buf, self.starts, self.broker = buf, starts, broker
        self.ends = np.append(starts[1:], len(buf)).astype(np.int64)
        self.topic: str | None = None
        self.body_at = starts + BODY_AT
        self.body_end = self.body_at + self.get(_BODY_LEN)
        self.sys_flag = self.get(_SYS_FLAG)

    def get(self, field: tuple[int, str], at: Ints | None = None) -> Ints:
        """The field at ``offset`` (relative to each start, or at ``at``) of every record."""
        offset, kind = field
        dtype = np.dtype(kind)
        where = (self.starts + offset) if at is None else at
        raw = self.buf[where[:, None] + np.arange(dtype.itemsize)]
        values: Ints = raw.view(dtype).reshape(-1).astype(np.int64)
        return values

    def properties(self) -> pa.StringArray | None:
        """Every record's properties text, or None when the records are not all plain
        4.x IPv4 ones of one topic with consistent lengths and UTF-8 text."""
        if (self.get(_MAGIC) != MAGIC_CODE).any() or (self.sys_flag & V6_FLAGS).any():
            return None
        if (self.body_at > self.body_end).any() or (self.body_end + 3 > self.ends).any():
            return None
        topic_len = self.buf[self.body_end].astype(np.int64)
        props_at = self.body_end + 1 + topic_len + 2
        if (props_at > self.ends).any() or (topic_len != topic_len[0]).any():
            return None
        props_len = self.get((0, ">i2"), props_at - 2)
        if (props_at + props_len != self.ends).any() or not self._one_topic(int(topic_len[0])):
            return None
        text = _strings(self.buf, props_at, self.ends)
        try:
            text.validate(full=True)  # UTF-8
        except pa.ArrowInvalid:
            return None
        return text

    def _one_topic(self, size: int) -> bool:
        at = self.body_end + 1
        names = self.buf[at[:, None] + np.arange(size)]
        if not (names == names[0]).all():
            return False
        try:
            self.topic = bytes(names[0]).decode()
        except UnicodeDecodeError:
            return False
        return True

    def decoded(self, rows: Ints) -> list[ReceivedMessage]:
        """Records ``rows`` decoded one by one, by the consumer's decoder."""
        data = self.buf.data
        pieces = [data[int(self.starts[r]) : int(self.ends[r])] for r in rows]
        return decode_records(b"".join(pieces), self.broker)

    def bodies(self) -> pa.BinaryArray:
        """The bodies as stored (compressed ones are inflated afterwards)."""
        return _segments(pa.binary_view(), self.buf, self.body_at, self.body_end).cast(pa.binary())

    def store_hosts(self) -> pa.StringArray:
        """``ip:port`` of each record's store host, formatted once per distinct host."""
        key = self.get(_STORE_IP) << 32 | self.get(_STORE_PORT)
        if (key == key[0]).all():  # one broker's records: one host
            return pa.repeat(pa.scalar(_host(int(key[0]))), len(key))
        hosts, index = np.unique(key, return_inverse=True)
        text = [_host(int(h)) for h in hosts]
        return pa.array(text, pa.string()).take(pa.array(index.reshape(-1)))


def _host(key: int) -> str:
    return f"{_ip(key >> 32)}:{key & 0xFFFFFFFF}"


def _ip(value: int) -> str:
    return ".".join(str(b) for b in value.to_bytes(4, "big"))


def _segments(view: pa.DataType, buf: npt.NDArray[np.uint8], at: Ints, end: Ints) -> pa.Array:
    """The bytes ``[at[i], end[i])`` of every record as a ``view`` (binary_view or
    string_view) array over ``buf`` itself: 16 bytes per value, made column-wise. A
    value of up to 12 bytes sits in its view, a longer one is its first 4 bytes, buffer
    0 and its offset (Arrow's columnar format, "Variable-size Binary View Layout")."""
    rows, length = len(at), (end - at).astype(np.int32)
    views = np.zeros((rows, 16), dtype=np.uint8)
    views[:, :4] = length.view(np.uint8).reshape(rows, 4)
    ahead = np.arange(12)
    inline = ahead < length[:, None]
    views[:, 4:] = np.where(inline, buf[np.minimum(at[:, None] + ahead, len(buf) - 1)], 0)
    longer = length > 12
    views[longer, 8:12] = 0
    views[longer, 12:] = at[longer].astype(np.int32).view(np.uint8).reshape(-1, 4)
    return pa.Array.from_buffers(view, rows, [None, pa.py_buffer(views), pa.py_buffer(buf)])


def _strings(buf: npt.NDArray[np.uint8], at: Ints, end: Ints) -> pa.StringArray:
    return _segments(pa.string_view(), buf, at, end).cast(pa.string())


def _pairs(props: pa.StringArray) -> tuple[pa.StringArray, pa.StringArray, Ints]:
    """Every well-formed ``name\\x01value`` pair (both non-empty, as the consumer's
    lenient decoder keeps them), and the record each came from."""
    pieces = pc.split_pattern(props, PROPERTY_SEPARATOR)
    flat = pieces.flatten()
    parent = np.asarray(pc.list_parent_indices(pieces), dtype=np.int64)
    good = np.asarray(pc.greater(pc.find_substring(flat, NAME_VALUE_SEPARATOR), 0))  # named
    flat, parent = flat.filter(pa.array(good)), parent[good]
    both = pc.split_pattern(flat, NAME_VALUE_SEPARATOR, max_splits=1).flatten()
    names = both.take(pa.array(np.arange(0, len(both), 2)))
    values = both.take(pa.array(np.arange(1, len(both), 2)))
    has_value = np.asarray(pc.not_equal(values, ""))
    if not has_value.all():
        names, values = names.filter(pa.array(has_value)), values.filter(pa.array(has_value))
        parent = parent[has_value]
    return names, values, parent


def _has_duplicates(names: pa.StringArray, parent: Ints) -> bool:
    """Whether a record names a property twice (the consumer keeps the last)."""
    coded = pc.dictionary_encode(names)
    key = parent * len(coded.dictionary) + np.asarray(coded.indices, dtype=np.int64)
    return len(np.unique(key)) != len(key)


def _property(
    names: pa.StringArray, values: pa.StringArray, parent: Ints, name: str, rows: int
) -> pa.StringArray:
    """Each record's value of property ``name`` (null where it has none)."""
    hit = np.flatnonzero(np.asarray(pc.equal(names, name)))
    index = np.full(rows, -1, dtype=np.int64)
    index[parent[hit]] = hit
    return values.take(pa.array(index, mask=index < 0))


def _offsets(parent: Ints, rows: int) -> pa.Array:
    offsets = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(np.bincount(parent, minlength=rows), out=offsets[1:])
    return pa.array(offsets)


def _keys(keys: pa.StringArray) -> pa.ListArray:
    """``KEYS`` split on spaces, empty pieces dropped (``split_keys``); [] for none."""
    pieces = pc.split_pattern(pc.fill_null(keys, ""), KEY_SEPARATOR)
    flat = pieces.flatten()
    parent = np.asarray(pc.list_parent_indices(pieces), dtype=np.int64)
    good = np.asarray(pc.not_equal(flat, ""))
    items = flat.filter(pa.array(good))
    return pa.ListArray.from_arrays(_offsets(parent[good], len(keys)), items)


def _msg_ids(fields: _Fields, uniq: pa.StringArray) -> pa.StringArray:
    """``UNIQ_KEY``, else the broker's offset message id (those records decoded alone)."""
    if not uniq.null_count:
        return uniq
    missing = np.asarray(uniq.is_null())
    ids = [m.msg_id for m in fields.decoded(np.flatnonzero(missing))]
    return pc.replace_with_mask(uniq, pa.array(missing), pa.array(ids, pa.string()))


def _kept(
    offsets: Ints, tag: pa.StringArray, below: int | None, tags: frozenset[str] | None
) -> npt.NDArray[np.bool_] | None:
    """Which rows to keep (None: all): below the range's end, with a wanted tag."""
    keep = np.ones(len(offsets), dtype=np.bool_)
    if below is not None:
        keep &= offsets < below
    if tags is not None:
        wanted = pc.is_in(tag, pa.array(sorted(tags), pa.string()))
        keep &= np.asarray(pc.fill_null(wanted, False))
    return None if keep.all() else keep


def _inflated(
    batch: pa.RecordBatch, fields: _Fields, keep: npt.NDArray[np.bool_] | None
) -> pa.RecordBatch:
    """``batch`` with its compressed bodies inflated (those records decoded alone, as the
    consumer decodes them); one that does not inflate raises."""
    rows = np.arange(len(fields.starts)) if keep is None else np.flatnonzero(keep)
    packed = np.flatnonzero(fields.sys_flag[rows] & COMPRESSED_FLAG)
    if not len(packed):
        return batch
    bodies: list[bytes] = []
    for message in fields.decoded(rows[packed]):
        if message.undecodable is not None:
            raise message.undecodable
        bodies.append(message.body)
    mask = np.zeros(batch.num_rows, dtype=np.bool_)
    mask[packed] = True
    at = batch.schema.get_field_index("body")
    body = pc.replace_with_mask(batch.column(at), pa.array(mask), pa.array(bodies, pa.binary()))
    return batch.set_column(at, batch.schema.field(at), body)
