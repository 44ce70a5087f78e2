"""Send-side compression as Java 5.3: ``compress_type``, ``compress_level``, ``compress_over``;
stored as sent by the dev cluster in both of its broker versions."""

from __future__ import annotations

import hashlib
import zlib

import lz4.frame
import pytest
import zstandard

from producer import Message, Producer
from producer.errors import InvalidOptionError
from producer.testing import DevClusterThread

pytestmark = pytest.mark.anyio
BODY = b'{"order": 1, "lines": []} ' * 400  # over compress_over (4096)
# Part incompressible, so each level below compresses it to different bytes.
MIXED = b"".join(hashlib.sha256(b"%d" % i).digest() for i in range(100)) * 2 + BODY
VERSIONS = pytest.mark.parametrize("version", ["4.9.4", "5.x"])


@pytest.mark.parametrize(
    ("compress_type", "flag", "decode"),
    [
        ("zlib", 769, zlib.decompress),
        ("lz4", 257, lz4.frame.decompress),
        ("zstd", 513, lambda b: zstandard.ZstdDecompressor().decompressobj().decompress(b)),
    ],
)
@VERSIONS
async def test_each_compress_type_is_stored_with_java_5_flags(
    compress_type: str, flag: int, decode: object, version: str
) -> None:
    with DevClusterThread(brokers=1, topics={"Orders": 1}, broker_version=version) as cluster:
        async with Producer("pg", cluster.namesrv_addr, compress_type=compress_type) as p:  # type: ignore[arg-type]
            await p.send(Message("Orders", BODY))
            await p.send(Message("Orders", b"small"))  # under the threshold: as is
        big, small = cluster.messages("Orders")
    assert big.sys_flag == flag and big.wire_body is not None
    assert decode(big.wire_body) == BODY == big.body  # type: ignore[operator]
    if compress_type == "lz4":  # lz4-java's frame header: independent 4 MiB blocks
        assert big.wire_body[:7] == bytes.fromhex("04224d18607073")
    assert (small.sys_flag, small.wire_body, small.body) == (0, None, b"small")


def compressed(compress_type: str, level: int) -> bytes:
    """MIXED compressed by the reference library at ``level`` (zlib / one-shot zstd)."""
    if compress_type == "zlib":
        return zlib.compress(MIXED, level)
    return zstandard.ZstdCompressor(level=level).compress(MIXED)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("compress_type", "level"),
    [("zlib", None), ("zlib", 1), ("zlib", 9), ("zstd", None), ("zstd", 19)],
)
async def test_compress_level_reaches_the_codec(compress_type: str, level: int | None) -> None:
    options = {} if level is None else {"compress_level": level}
    with DevClusterThread(brokers=1, topics={"Orders": 1}) as cluster:
        async with Producer(
            "pg",
            cluster.namesrv_addr,
            compress_type=compress_type,  # type: ignore[arg-type]
            **options,
        ) as p:
            await p.send(Message("Orders", MIXED))
        (stored,) = cluster.messages("Orders")
    assert stored.wire_body == compressed(compress_type, level or 5)  # 5: Java's default
    if level is not None:  # the bytes tell this level from the default's
        assert compressed(compress_type, level) != compressed(compress_type, 5)


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"compress_type": "snappy"}, "compress_type must be one of"),
        ({"compress_type": "zstd", "compress_level": 23}, "not a zstd level"),
        ({"compress_level": 10}, "not a zlib level"),
        ({"timer_max_delay_ms": 0}, "timer_max_delay_ms must be an int > 0"),
    ],
)
def test_bad_compression_options_are_refused(options: dict[str, object], error: str) -> None:
    with pytest.raises(InvalidOptionError, match=error):
        Producer("pg", "127.0.0.1:9876", **options)  # type: ignore[arg-type]
