"""LZ4 and zstd bodies as the 5.x Java producer writes them, both ways, always bounded."""

from __future__ import annotations

import contextlib
from types import ModuleType

import lz4.frame
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from producer._remoting.codecs import BodyCodecs, Codec
from producer._remoting.message_codec import compress_body, decompress_body
from producer.errors import CodecUnavailableError, CorruptBodyError

from .java5_vectors import (
    LZ4_BODY,
    LZ4_CHECKSUMMED_BODY,
    LZ4_CONTENT,
    LZ4_RAW_BODY,
    LZ4_RAW_CONTENT,
    SYS_FLAG_LZ4,
    SYS_FLAG_ZSTD,
    ZSTD_BODY,
    ZSTD_CONTENT,
)
from .support import deterministic


def refusing(*names: str) -> BodyCodecs:
    """Codecs on an install without ``names`` (the seam a bare install takes)."""

    def import_module(name: str) -> ModuleType:
        if name.split(".")[0] in names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return __import__(name, fromlist=["_"])

    return BodyCodecs(import_module)


@pytest.mark.parametrize(
    ("body", "content"),
    [(LZ4_BODY, LZ4_CONTENT), (LZ4_CHECKSUMMED_BODY, LZ4_CONTENT), (LZ4_RAW_BODY, LZ4_RAW_CONTENT)],
    ids=["compressed-block", "content-checksum", "raw-block"],
)
def test_java_lz4_frames_decode(body: bytes, content: bytes) -> None:
    assert body[:7] == bytes.fromhex("04224d18607073") or body[4] == 0x64
    assert lz4.frame.decompress(body) == content  # the vector is a valid frame
    assert decompress_body(body, SYS_FLAG_LZ4, max_size=len(content)) == content


def test_java_zstd_frame_decodes() -> None:
    assert zstandard.ZstdDecompressor().decompressobj().decompress(ZSTD_BODY) == ZSTD_CONTENT
    assert decompress_body(ZSTD_BODY, SYS_FLAG_ZSTD, max_size=len(ZSTD_CONTENT)) == ZSTD_CONTENT


@pytest.mark.parametrize(
    ("codec", "flag"), [(Codec.LZ4, 257), (Codec.ZSTD, 513), (Codec.ZLIB, 769)]
)
def test_compress_body_writes_what_java_reads(codec: Codec, flag: int) -> None:
    body = b"a 5.x body " * 500
    data, sys_flag = compress_body(body, 4096, 5, codec)
    assert sys_flag == flag
    assert decompress_body(data, sys_flag) == body
    if codec is Codec.LZ4:  # lz4-java's frame options: independent 4 MiB blocks
        assert data[:7] == LZ4_BODY[:7]


@pytest.mark.parametrize(
    ("flag", "bomb"),
    [
        (SYS_FLAG_LZ4, lz4.frame.compress(bytes(4_000_000))),
        (SYS_FLAG_ZSTD, zstandard.ZstdCompressor().compress(bytes(4_000_000))),
    ],
    ids=["lz4", "zstd"],
)
def test_inflated_size_is_bounded(flag: int, bomb: bytes) -> None:
    assert len(bomb) < 20_000
    with pytest.raises(CorruptBodyError, match="beyond 3999999"):
        decompress_body(bomb, flag, max_size=3_999_999)
    assert len(decompress_body(bomb, flag, max_size=4_000_000)) == 4_000_000


@pytest.mark.parametrize(
    ("flag", "body"),
    [
        (SYS_FLAG_LZ4, LZ4_BODY[:-4]),  # no end mark
        (SYS_FLAG_LZ4, LZ4_CHECKSUMMED_BODY[:-1] + b"\x00"),  # content checksum wrong
        (SYS_FLAG_LZ4, LZ4_BODY[:5] + b"\x00" + LZ4_BODY[6:]),  # header checksum wrong
        (SYS_FLAG_ZSTD, ZSTD_BODY[:-3]),  # no last block
        (SYS_FLAG_ZSTD, b"\x28\xb5\x2f\xfd garbage"),
    ],
    ids=["lz4-truncated", "lz4-checksum", "lz4-header", "zstd-truncated", "zstd-garbage"],
)
def test_corrupt_or_truncated_frames_raise(flag: int, body: bytes) -> None:
    with pytest.raises(CorruptBodyError):
        decompress_body(body, flag, max_size=1_000_000)


@pytest.mark.parametrize(("flag", "name"), [(SYS_FLAG_LZ4, "lz4"), (SYS_FLAG_ZSTD, "zstandard")])
def test_a_missing_library_names_the_extra(flag: int, name: str) -> None:
    codecs = refusing("lz4", "zstandard")
    with pytest.raises(CodecUnavailableError, match=r"rocketmq-aio-producer\[compression\]"):
        decompress_body(LZ4_BODY, flag, codecs=codecs)
    with pytest.raises(CodecUnavailableError, match=repr(name)):
        codecs.require(Codec(flag >> 8))
    assert decompress_body(compress_body(b"z" * 5000)[0], 769, codecs=codecs) == b"z" * 5000


@deterministic
@given(st.sampled_from([SYS_FLAG_LZ4, SYS_FLAG_ZSTD]), st.binary(max_size=64))
def test_garbage_decodes_or_raises_corrupt_body(flag: int, data: bytes) -> None:
    with contextlib.suppress(CorruptBodyError):
        decompress_body(data, flag, max_size=1000)
