"""Message bodies on the wire: sysFlag bits, compression, batch bodies, offset message ids.

* A single body of at least ``compressMsgBodyOverHowmuch`` (4096) bytes is compressed
  (zlib level 5 by default) and flagged ``COMPRESSED | type << 8``: zlib 769 (golden
  finding 10), LZ4 257, zstd 513 (5.x ``compressType``). The 4.9.4 client sets the type
  bits; older ones left them 0, which also means zlib. The codecs: :mod:`.codecs`.
* A batch body is the messages back to back, each ``int32 totalSize, int32 magic (0),
  int32 bodyCRC (0), int32 flag, int32 bodyLen, body, int16 propsLen, props`` (finding
  11). Batches are never compressed.
* An offset message id is the broker's: store host (4 or 16 bytes) + port (int32) +
  commit-log offset (int64), upper-case hex (finding 9).
"""

from __future__ import annotations

import ipaddress
import re
import struct
from collections.abc import Iterable
from typing import NamedTuple

from producer._remoting.codecs import DEFAULT_CODECS, BodyCodecs, Codec
from producer.errors import (
    CorruptBodyError,
    LocalProtocolError,
    MessageValidationError,
    RemoteProtocolError,
)

# -- sysFlag (MessageSysFlag) -------------------------------------------------------------

COMPRESSED_FLAG = 0x1
MULTI_TAGS_FLAG = 0x1 << 1
TRANSACTION_NOT_TYPE = 0
TRANSACTION_PREPARED_TYPE = 0x1 << 2
TRANSACTION_COMMIT_TYPE = 0x2 << 2
TRANSACTION_ROLLBACK_TYPE = 0x3 << 2
BORNHOST_V6_FLAG = 0x1 << 4
STOREHOSTADDRESS_V6_FLAG = 0x1 << 5
NEED_UNWRAP_FLAG = 0x1 << 6
INNER_BATCH_FLAG = 0x1 << 7
COMPRESSION_LZ4_TYPE = Codec.LZ4 << 8
COMPRESSION_ZSTD_TYPE = Codec.ZSTD << 8
COMPRESSION_ZLIB_TYPE = Codec.ZLIB << 8
COMPRESSION_TYPE_MASK = 0x7 << 8


CompressionType = Codec  # Java's name for the type in sysFlag bits 8-10


def compression_type(sys_flag: int) -> Codec:
    """The codec a compressed body used; type bits 0 mean zlib (pre-4.9.4 senders)."""
    bits = (sys_flag & COMPRESSION_TYPE_MASK) >> 8
    if bits == 0:
        return Codec.ZLIB
    try:
        return Codec(bits)
    except ValueError:
        raise CorruptBodyError(f"unknown compression type {bits} in sysFlag {sys_flag}") from None


def is_compressed(sys_flag: int) -> bool:
    return bool(sys_flag & COMPRESSED_FLAG)


# -- compression --------------------------------------------------------------------------

DEFAULT_COMPRESS_THRESHOLD = 4096  # compressMsgBodyOverHowmuch
DEFAULT_COMPRESS_LEVEL = 5  # compressLevel (zlib and zstd; LZ4 has none)


def compress_body(
    body: bytes,
    threshold: int = DEFAULT_COMPRESS_THRESHOLD,
    level: int = DEFAULT_COMPRESS_LEVEL,
    codec: Codec = Codec.ZLIB,
    codecs: BodyCodecs = DEFAULT_CODECS,
) -> tuple[bytes, int]:
    """``(body to send, sysFlag bits)``: compressed at ``len(body) >= threshold`` and
    flagged ``COMPRESSED | codec << 8`` (zlib: 769, LZ4: 257, zstd: 513), else as is.

    Like Java, the compressed body is used even when it is not smaller: the flag must
    describe the bytes, and a consumer relies on it either way.
    """
    if len(body) < threshold:
        return body, 0
    return codecs.compress(body, codec, level), COMPRESSED_FLAG | codec << 8


def decompress_body(
    body: bytes,
    sys_flag: int,
    *,
    max_size: int | None = None,
    codecs: BodyCodecs = DEFAULT_CODECS,
) -> bytes:
    """The original body of a (possibly) compressed one, as a broker or consumer sees it.

    ``max_size`` bounds the inflated size, so a small hostile frame cannot make us
    allocate gigabytes. Corrupt data or a size over the bound raise
    :class:`CorruptBodyError`; LZ4 or zstd without its library installed raises
    :class:`CodecUnavailableError` (naming the extra to install).
    """
    if not sys_flag & COMPRESSED_FLAG:
        return body
    return codecs.decompress(body, compression_type(sys_flag), max_size)


# -- batch bodies -------------------------------------------------------------------------


class BatchItem(NamedTuple):
    """One message of a batch body: its flag, (uncompressed) body and encoded properties."""

    flag: int
    body: bytes
    properties: str


MAX_PROPERTIES_BYTES = 32767  # the int16 length field; brokers refuse longer ones too
_BATCH_HEAD = struct.Struct(">iiiii")  # totalSize, magic, bodyCRC, flag, bodyLen
_INT16 = struct.Struct(">h")
_FIXED = _BATCH_HEAD.size + _INT16.size


def encode_batch(items: Iterable[BatchItem]) -> bytes:
    """``MessageDecoder.encodeMessages``: the batch body for SEND_BATCH_MESSAGE."""
    parts: list[bytes] = []
    for flag, body, properties in items:
        props = properties.encode()
        body_len, props_len = len(body), len(props)  # each once: this runs per message
        if props_len > MAX_PROPERTIES_BYTES:
            raise MessageValidationError(
                "properties", f"{props_len} bytes", f"at most {MAX_PROPERTIES_BYTES} bytes"
            )
        total = _FIXED + body_len + props_len
        parts += (
            _BATCH_HEAD.pack(total, 0, 0, flag, body_len),
            body,
            _INT16.pack(props_len),
            props,
        )
    return b"".join(parts)


def decode_batch(data: bytes | bytearray | memoryview) -> list[BatchItem]:
    """Split a batch body; any inconsistency raises :class:`RemoteProtocolError`.

    Magic code and body CRC are not checked: the Java client writes 0 for both and the
    broker ignores them.
    """
    view = memoryview(data)
    items: list[BatchItem] = []
    pos, end = 0, len(view)
    while pos < end:
        if end - pos < _FIXED:
            raise RemoteProtocolError(f"batch entry at byte {pos} is truncated")
        total, _magic, _crc, flag, body_len = _BATCH_HEAD.unpack_from(view, pos)
        if body_len < 0 or total < _FIXED + body_len or total > end - pos:
            raise RemoteProtocolError(
                f"batch entry at byte {pos}: totalSize {total}, bodyLen {body_len} "
                f"do not fit the {end - pos} bytes left"
            )
        body_end = pos + _BATCH_HEAD.size + body_len
        (props_len,) = _INT16.unpack_from(view, body_end)
        if props_len < 0 or total != _FIXED + body_len + props_len:
            raise RemoteProtocolError(
                f"batch entry at byte {pos}: totalSize {total} does not match "
                f"bodyLen {body_len} + propertiesLen {props_len}"
            )
        props_start = body_end + _INT16.size
        try:
            properties = str(view[props_start : props_start + props_len], "utf-8")
        except UnicodeDecodeError as exc:
            raise RemoteProtocolError(f"batch entry at byte {pos}: properties: {exc}") from None
        items.append(BatchItem(flag, bytes(view[pos + _BATCH_HEAD.size : body_end]), properties))
        pos += total
    return items


# -- offset message ids -------------------------------------------------------------------

_OFFSET_ID_TAIL = struct.Struct(">iq")  # port, commit-log offset
_HEX = re.compile(r"[0-9A-Fa-f]+")


class OffsetMessageId(NamedTuple):
    host: str
    port: int
    commit_offset: int


def make_offset_msg_id(host_ipv4: str, port: int, commit_offset: int) -> str:
    """The broker's message id for a stored message (IPv6 hosts give the 28-byte form)."""
    try:
        packed = ipaddress.ip_address(host_ipv4).packed
        tail = _OFFSET_ID_TAIL.pack(port, commit_offset)
    except (ValueError, struct.error) as exc:
        raise LocalProtocolError(f"cannot make an offset message id: {exc}") from None
    return (packed + tail).hex().upper()


def parse_offset_msg_id(msg_id: str) -> OffsetMessageId:
    """Host, port and commit-log offset of an offset message id (32 or 56 hex digits)."""
    if len(msg_id) not in (32, 56) or not _HEX.fullmatch(msg_id):
        raise RemoteProtocolError(f"offset message id {msg_id!r} is not 32 or 56 hex digits")
    raw = bytes.fromhex(msg_id)
    ip_len = len(raw) - _OFFSET_ID_TAIL.size
    port, offset = _OFFSET_ID_TAIL.unpack_from(raw, ip_len)
    return OffsetMessageId(str(ipaddress.ip_address(raw[:ip_len])), port, offset)
