"""Send-side compression as Java 5.3: ``compress_type``, ``compress_level``, ``compress_over``."""

from __future__ import annotations

import zlib

import lz4.frame
import pytest
import zstandard

from producer import Message, Producer
from producer.errors import InvalidOptionError
from producer.testing import DevClusterThread

pytestmark = pytest.mark.anyio
BODY = b'{"order": 1, "lines": []} ' * 400  # over compress_over (4096)


@pytest.mark.parametrize(
    ("compress_type", "flag", "decode"),
    [
        ("zlib", 769, zlib.decompress),
        ("lz4", 257, lz4.frame.decompress),
        ("zstd", 513, lambda b: zstandard.ZstdDecompressor().decompressobj().decompress(b)),
    ],
)
async def test_each_compress_type_is_stored_with_java_5_flags(
    compress_type: str, flag: int, decode: object
) -> None:
    with DevClusterThread(brokers=1, topics={"Orders": 1}, broker_version="5.x") as cluster:
        async with Producer("pg", cluster.namesrv_addr, compress_type=compress_type) as p:  # type: ignore[arg-type]
            await p.send(Message("Orders", BODY))
            await p.send(Message("Orders", b"small"))  # under the threshold: as is
        big, small = cluster.messages("Orders")
    assert big.sys_flag == flag and big.wire_body is not None
    assert decode(big.wire_body) == BODY == big.body  # type: ignore[operator]
    if compress_type == "lz4":  # lz4-java's frame header: independent 4 MiB blocks
        assert big.wire_body[:7] == bytes.fromhex("04224d18607073")
    assert (small.sys_flag, small.wire_body, small.body) == (0, None, b"small")


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
