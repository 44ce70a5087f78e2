"""Commit-log records: what a pull returns and what a broker stores (docs/consuming.md 1.6).

A PULL_MESSAGE body is the broker's raw commit-log records back to back, so one codec
serves both sides: :func:`decode_records` for the consumer, :func:`encode_record` for the
dev cluster's store (which keeps real records so that ``PHYSICALOFFSET``, ``TOTALSIZE``
and offset message ids are what a 4.9.4 broker would give).

Layout (big-endian; IPv4 hosts take 8 bytes, IPv6 hosts 20 when their sysFlag bit is set):
TOTALSIZE 4, MAGICCODE 4, BODYCRC 4, QUEUEID 4, FLAG 4, QUEUEOFFSET 8, PHYSICALOFFSET 8,
SYSFLAG 4, BORNTIMESTAMP 8, BORNHOST 8|20, STORETIMESTAMP 8, STOREHOST 8|20,
RECONSUMETIMES 4, PREPARED_TX_OFFSET 8, BODY 4+n, TOPIC 1+n, PROPERTIES 2+n.
"""

from __future__ import annotations

import ipaddress
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from producer._remoting.codecs import DEFAULT_CODECS, BodyCodecs
from producer._remoting.message_codec import (
    BORNHOST_V6_FLAG,
    STOREHOSTADDRESS_V6_FLAG,
    decompress_body,
)
from producer._remoting.properties import decode_properties, encode_properties
from producer.errors import LocalProtocolError, RemoteProtocolError

__all__ = [
    "MAGIC_CODE",
    "MAGIC_CODE_V2",
    "StoreRecord",
    "body_crc",
    "decode_records",
    "decode_with",
    "encode_record",
    "record_size",
]

MAGIC_CODE = -626843481  # 0xDAA320A7, MessageDecoder.MESSAGE_MAGIC_CODE
MAGIC_CODE_V2 = -626843477  # 0xDAA320AB: 5.x records with a 2-byte topic length
MAX_TOPIC_BYTES = 127  # the 1-byte length field of a 4.x record

_HEAD = struct.Struct(">iiiiiqqiq")  # size, magic, crc, queue, flag, qoffset, phys, sys, born
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_INT16 = struct.Struct(">h")
_UINT16 = struct.Struct(">H")
_MID = struct.Struct(">iq")  # reconsumeTimes, preparedTransactionOffset
# The common record (4.x magic, IPv4 hosts) up to the body, in one unpack: the head,
# BORNHOST ip+port, STORETIMESTAMP, STOREHOST ip+port, reconsumeTimes, prepared, bodyLen.
_FIXED_V4 = struct.Struct(">iiiiiqqiq4siq4siiqi")
_V6_FLAGS = BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG
_CACHE_LIMIT = 1024  # distinct hosts/topics remembered while decoding; then start over

T = TypeVar("T")
# What :func:`decode_with` calls per record, positionally: topic, queue_id, queue_offset,
# commit_log_offset, body (as stored), properties (their wire text), born_timestamp,
# born_host, store_timestamp, store_host, sys_flag, flag, reconsume_times,
# prepared_transaction_offset, body_crc - :class:`StoreRecord`'s field order.
Build = Callable[..., T]


def body_crc(body: bytes) -> int:
    """``UtilAll.crc32``: the CRC-32 of the stored body, kept non-negative."""
    return zlib.crc32(body) & 0x7FFFFFFF


@dataclass(frozen=True, slots=True)
class StoreRecord:
    """One commit-log record. ``body`` is as stored (compressed if ``sys_flag`` says so).

    Hosts are ``"ip:port"``; ``properties`` is the decoded map in its stored order.
    """

    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    body: bytes
    properties: dict[str, str]
    born_timestamp: int
    born_host: str
    store_timestamp: int
    store_host: str
    sys_flag: int = 0
    flag: int = 0
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    body_crc: int = 0

    @property
    def store_size(self) -> int:
        """TOTALSIZE of this record as :func:`encode_record` writes it."""
        return record_size(self)

    def inflated_body(
        self, max_size: int | None = None, codecs: BodyCodecs = DEFAULT_CODECS
    ) -> bytes:
        """The body a consumer hands to its listener (decompressed by the codec its
        sysFlag names; see :func:`decompress_body` for what raises)."""
        return decompress_body(self.body, self.sys_flag, max_size=max_size, codecs=codecs)


def _pack_host(host: str, v6: bool) -> bytes:
    ip, sep, port = host.rpartition(":")
    if not sep or not port.isdigit():
        raise LocalProtocolError(f"host {host!r} is not ip:port")
    try:
        packed = ipaddress.ip_address(ip.strip("[]")).packed
    except ValueError as exc:
        raise LocalProtocolError(f"host {host!r}: {exc}") from None
    if len(packed) != (16 if v6 else 4):
        raise LocalProtocolError(f"host {host!r} does not match the record's sysFlag")
    return packed + _INT32.pack(int(port))


def _host_len(sys_flag: int, bit: int) -> int:
    return 20 if sys_flag & bit else 8


def record_size(record: StoreRecord) -> int:
    """``CommitLog.calMsgLength`` for ``record``."""
    return (
        4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8
        + _host_len(record.sys_flag, BORNHOST_V6_FLAG)
        + 8
        + _host_len(record.sys_flag, STOREHOSTADDRESS_V6_FLAG)
        + 4 + 8
        + 4 + len(record.body)
        + 1 + len(record.topic.encode())
        + 2 + len(encode_properties(record.properties).encode())
    )  # fmt: skip


def encode_record(record: StoreRecord) -> bytes:
    """The record's bytes, as ``CommitLog.MessageExtEncoder`` writes them (4.x layout)."""
    topic = record.topic.encode()
    if len(topic) > MAX_TOPIC_BYTES:
        raise LocalProtocolError(f"topic of {len(topic)} bytes does not fit a 4.x record")
    props = encode_properties(record.properties).encode()
    if len(props) > 32767:
        raise LocalProtocolError(f"properties of {len(props)} bytes do not fit a record")
    total = record_size(record)
    parts = (
        _HEAD.pack(
            total,
            MAGIC_CODE,
            record.body_crc,
            record.queue_id,
            record.flag,
            record.queue_offset,
            record.commit_log_offset,
            record.sys_flag,
            record.born_timestamp,
        ),
        _pack_host(record.born_host, bool(record.sys_flag & BORNHOST_V6_FLAG)),
        _INT64.pack(record.store_timestamp),
        _pack_host(record.store_host, bool(record.sys_flag & STOREHOSTADDRESS_V6_FLAG)),
        _MID.pack(record.reconsume_times, record.prepared_transaction_offset),
        _INT32.pack(len(record.body)),
        record.body,
        bytes((len(topic),)),
        topic,
        _INT16.pack(len(props)),
        props,
    )
    return b"".join(parts)


class _Reader:
    """Bounds-checked reads from one record; a short record raises RemoteProtocolError."""

    __slots__ = ("end", "pos", "view")

    def __init__(self, view: memoryview, pos: int, end: int) -> None:
        self.view, self.pos, self.end = view, pos, end

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > self.end:
            raise RemoteProtocolError(f"record truncated at byte {self.pos} (needs {n} more)")
        piece = self.view[self.pos : self.pos + n]
        self.pos += n
        return piece

    def unpack(self, fmt: struct.Struct) -> tuple[int, ...]:
        return fmt.unpack(self.take(fmt.size))

    def host(self, v6: bool) -> str:
        raw = self.take(16 if v6 else 4)
        (port,) = self.unpack(_INT32)
        ip = ipaddress.ip_address(bytes(raw))
        return f"[{ip}]:{port}" if v6 else f"{ip}:{port}"


def decode_records(data: bytes | bytearray | memoryview) -> list[StoreRecord]:
    """Every record of a pull body; any inconsistency raises :class:`RemoteProtocolError`.

    Unlike Java's decoder, which stops at the first bad record and drops the rest
    silently, a bad body is an error: a consumer must not skip messages it was sent.
    """
    return decode_with(data, _store_record)


def _store_record(
    topic: str,
    queue_id: int,
    queue_offset: int,
    commit_log_offset: int,
    body: bytes,
    properties: str,
    born_timestamp: int,
    born_host: str,
    store_timestamp: int,
    store_host: str,
    *flags: int,  # sys_flag, flag, reconsume_times, prepared_transaction_offset, body_crc
) -> StoreRecord:
    return StoreRecord(
        topic,
        queue_id,
        queue_offset,
        commit_log_offset,
        body,
        decode_properties(properties),
        born_timestamp,
        born_host,
        store_timestamp,
        store_host,
        *flags,
    )


def decode_with(data: bytes | bytearray | memoryview, build: Build[T]) -> list[T]:
    """``build(...)`` of every record of a pull body, in order (the fields as
    :data:`Build` lists them); any inconsistency raises :class:`RemoteProtocolError`.
    The one record decoder: :func:`decode_records` and the consumer's messages use it."""
    view = memoryview(data)
    out: list[T] = []
    pos, end = 0, len(view)
    while pos < end:
        if end - pos < _HEAD.size:
            raise RemoteProtocolError(f"record at byte {pos} is truncated")
        (total,) = _INT32.unpack_from(view, pos)
        if total < _HEAD.size or total > end - pos:
            raise RemoteProtocolError(
                f"record at byte {pos}: TOTALSIZE {total} does not fit the {end - pos} bytes left"
            )
        item = _decode_v4(view, pos, pos + total, build)
        out.append(_decode_one(_Reader(view, pos, pos + total), build) if item is None else item)
        pos += total
    return out


def _decode_v4(view: memoryview, start: int, end: int, build: Build[T]) -> T | None:
    """The common record in one pass (hosts and topic names cached: they repeat), or
    ``None`` for the general reader (IPv6 hosts, 5.x magic, or anything short)."""
    if end - start < _FIXED_V4.size + 3:
        return None
    fields = _FIXED_V4.unpack_from(view, start)
    if fields[1] != MAGIC_CODE or fields[7] & _V6_FLAGS:
        return None
    body_at = start + _FIXED_V4.size
    body_end = body_at + fields[16]
    if fields[16] < 0 or body_end + 3 > end:
        return None
    topic_end = body_end + 1 + view[body_end]
    if topic_end + 2 > end:
        return None
    (props_len,) = _INT16.unpack_from(view, topic_end)
    if topic_end + 2 + props_len != end:
        return None  # the general reader says what is wrong
    raw_topic = bytes(view[body_end + 1 : topic_end])
    topic = _TOPICS.get(raw_topic) or _remember(
        _TOPICS, raw_topic, _text(view[body_end + 1 : topic_end], start, "topic")
    )
    props = _text(view[topic_end + 2 : end], start, "properties") if props_len else ""
    return build(
        topic,
        fields[3],  # queue_id
        fields[5],  # queue_offset
        fields[6],  # commit_log_offset
        bytes(view[body_at:body_end]),
        props,
        fields[8],  # born_timestamp
        _host_v4(fields[9], fields[10]),
        fields[11],  # store_timestamp
        _host_v4(fields[12], fields[13]),
        fields[7],  # sys_flag
        fields[4],  # flag
        fields[14],  # reconsume_times
        fields[15],  # prepared_transaction_offset
        fields[2],  # body_crc
    )


_TOPICS: dict[bytes, str] = {}
_HOSTS: dict[tuple[bytes, int], str] = {}


def _remember(cache: dict[bytes, str], key: bytes, value: str) -> str:
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[key] = value
    return value


def _host_v4(ip: bytes, port: int) -> str:
    found = _HOSTS.get((ip, port))
    if found is None:
        if len(_HOSTS) >= _CACHE_LIMIT:
            _HOSTS.clear()
        found = _HOSTS[(ip, port)] = f"{ip[0]}.{ip[1]}.{ip[2]}.{ip[3]}:{port}"
    return found


def _decode_one(reader: _Reader, build: Build[T]) -> T:
    start = reader.pos
    _total, magic, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts = reader.unpack(_HEAD)
    if magic not in (MAGIC_CODE, MAGIC_CODE_V2):
        raise RemoteProtocolError(f"record at byte {start}: bad magic code {magic:#x}")
    born_host = reader.host(bool(sys_flag & BORNHOST_V6_FLAG))
    (store_ts,) = reader.unpack(_INT64)
    store_host = reader.host(bool(sys_flag & STOREHOSTADDRESS_V6_FLAG))
    reconsume_times, prepared = reader.unpack(_MID)
    (body_len,) = reader.unpack(_INT32)
    body = bytes(reader.take(body_len))
    if magic == MAGIC_CODE_V2:
        (topic_len,) = reader.unpack(_UINT16)
    else:
        topic_len = reader.take(1)[0]
    topic = _text(reader.take(topic_len), start, "topic")
    (props_len,) = reader.unpack(_INT16)
    properties = _text(reader.take(props_len), start, "properties")
    if reader.pos != reader.end:
        raise RemoteProtocolError(
            f"record at byte {start}: TOTALSIZE says {reader.end - start} bytes, "
            f"fields take {reader.pos - start}"
        )
    return build(
        topic,
        queue_id,
        queue_offset,
        phys,
        body,
        properties,
        born_ts,
        born_host,
        store_ts,
        store_host,
        sys_flag,
        flag,
        reconsume_times,
        prepared,
        crc,
    )


def _text(raw: memoryview, start: int, what: str) -> str:
    try:
        return str(raw, "utf-8")
    except UnicodeDecodeError as exc:
        raise RemoteProtocolError(f"record at byte {start}: {what}: {exc}") from None
