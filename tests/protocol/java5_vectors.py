"""Compressed bodies laid out byte by byte as a RocketMQ 5.x Java producer writes them.

Built by hand from the formats' specifications, not by the libraries under test:

* LZ4: the LZ4 Frame format spec 1.6 (lz4/lz4 doc/lz4_Frame_format.md) and the LZ4 block
  format (doc/lz4_Block_format.md), with the options lz4-java's ``LZ4FrameOutputStream``
  uses when RocketMQ's ``Lz4Compressor`` calls its one-argument constructor: version 01,
  block independence set, no block or content checksum, no content size, BD ``0x70``
  (4 MiB blocks); a block stored compressed, or raw with the high bit of its size set
  when compressing does not help; ``close()`` writes the 0 end mark. (The real 5.2.0
  bytes of issue 22 start ``04 22 4D 18 60 70``.) A content-checksum variant covers
  that flag too.
* zstd: RFC 8878 (Zstandard frame format), as zstd-jni's ``ZstdOutputStream`` writes a
  stream: no content size, not single-segment, no checksum (zstd-jni's default), a window
  descriptor; ``flush()`` ends a block and ``close()`` ends the frame with a last block.
"""

from __future__ import annotations

import struct

_P1, _P2, _P3, _P4, _P5 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F, 0x165667B1
_M = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 as its specification (Cyan4973/xxHash doc/xxhash_spec.md) defines it."""
    n, i = len(data), 0
    if n >= 16:
        lanes = [(seed + _P1 + _P2) & _M, (seed + _P2) & _M, seed, (seed - _P1) & _M]
        while i + 16 <= n:
            for k in range(4):
                (word,) = struct.unpack_from("<I", data, i + 4 * k)
                lanes[k] = (_rotl((lanes[k] + word * _P2) & _M, 13) * _P1) & _M
            i += 16
        h = sum(_rotl(v, r) for v, r in zip(lanes, (1, 7, 12, 18), strict=True)) & _M
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while i + 4 <= n:
        (word,) = struct.unpack_from("<I", data, i)
        h = (_rotl((h + word * _P3) & _M, 17) * _P4) & _M
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M, 11) * _P1) & _M
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M
    h ^= h >> 13
    h = (h * _P3) & _M
    return h ^ (h >> 16)


def _lz4_length(extra: int) -> bytes:
    """The bytes after a token nibble of 15: 255s, then the rest."""
    return b"\xff" * (extra // 255) + bytes([extra % 255])


def lz4_periodic_block(unit: bytes, total: int) -> bytes:
    """An LZ4 block of ``unit`` repeated to ``total`` bytes: the unit as literals, one
    overlapping match at offset ``len(unit)``, the last 5 bytes as literals (the spec's
    end-of-block rules: the last 5 bytes are literals, the last match starts >= 12 before
    the end)."""
    assert 15 <= len(unit) < 255 + 15 and total >= len(unit) + 12 + 5
    body = (unit * (total // len(unit) + 1))[:total]
    match_len = total - len(unit) - 5
    token = 0xF0 | 0x0F
    block = bytes([token]) + _lz4_length(len(unit) - 15) + unit
    block += struct.pack("<H", len(unit)) + _lz4_length(match_len - 4 - 15)
    return block + bytes([0x50]) + body[-5:]


def lz4_frame(content: bytes, block: bytes | None, *, content_checksum: bool = False) -> bytes:
    """A whole LZ4 frame: ``block`` compressed, or ``None`` to store ``content`` raw."""
    flg = 0x40 | 0x20 | (0x04 if content_checksum else 0)
    descriptor = bytes([flg, 0x70])
    frame = struct.pack("<I", 0x184D2204) + descriptor + bytes([(xxh32(descriptor) >> 8) & 0xFF])
    if block is None:
        frame += struct.pack("<I", len(content) | 0x80000000) + content
    else:
        frame += struct.pack("<I", len(block)) + block
    frame += struct.pack("<I", 0)  # end mark
    if content_checksum:
        frame += struct.pack("<I", xxh32(content))
    return frame


def _zstd_block(kind: int, size: int, payload: bytes, *, last: bool) -> bytes:
    header = int(last) | kind << 1 | size << 3
    return header.to_bytes(3, "little") + payload


def zstd_frame(raw: bytes, rle_byte: int, rle_count: int) -> bytes:
    """A zstd frame of ``raw`` then ``rle_count`` x ``rle_byte``: a Raw block, an RLE
    block (each ended by a flush), and the empty last Raw block ``close()`` writes.
    Window_Descriptor 0x58: exponent 11, so windowLog 21 (2 MiB, level 5's)."""
    frame = struct.pack("<I", 0xFD2FB528) + bytes([0x00, 0x58])
    frame += _zstd_block(0, len(raw), raw, last=False)
    frame += _zstd_block(1, rle_count, bytes([rle_byte]), last=False)
    return frame + _zstd_block(0, 0, b"", last=True)


# The bodies the tests send: an 8,208-byte JSON-ish body (issue 22's size).
UNIT = b'{"order":12345,"x":1}'[:16]
LZ4_CONTENT = (UNIT * 600)[:8208]
LZ4_BODY = lz4_frame(LZ4_CONTENT, lz4_periodic_block(UNIT, 8208))
LZ4_CHECKSUMMED_BODY = lz4_frame(LZ4_CONTENT, lz4_periodic_block(UNIT, 8208), content_checksum=True)
LZ4_RAW_CONTENT = bytes(range(7, 40))  # incompressible: stored raw
LZ4_RAW_BODY = lz4_frame(LZ4_RAW_CONTENT, None)
ZSTD_CONTENT = b'{"order":12345,"pad":"' + b" " * 8186
ZSTD_BODY = zstd_frame(ZSTD_CONTENT[:22], ord(" "), 8186)
SYS_FLAG_LZ4 = 0x1 | 0x100  # 257, as the 5.2.0 capture
SYS_FLAG_ZSTD = 0x1 | 0x200  # 513
