"""Compression, batch bodies and offset message ids."""

from __future__ import annotations

import contextlib
import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from producer._remoting.message_codec import (
    COMPRESSED_FLAG,
    COMPRESSION_ZLIB_TYPE,
    BatchItem,
    CompressionType,
    compress_body,
    compression_type,
    decode_batch,
    decompress_body,
    encode_batch,
    make_offset_msg_id,
    parse_offset_msg_id,
)
from producer.errors import LocalProtocolError, MessageValidationError, RemoteProtocolError

from .support import deterministic

# -- compression ----------------------------------------------------------------------------


def test_bodies_below_the_threshold_are_sent_as_is() -> None:
    body = b"x" * 4095
    assert compress_body(body) == (body, 0)


def test_bodies_at_the_threshold_are_zlib_level_5_with_sys_flag_769() -> None:
    body = b"golden " * 600
    data, sys_flag = compress_body(body)
    assert sys_flag == 769 == COMPRESSED_FLAG | COMPRESSION_ZLIB_TYPE
    assert data[:2] == b"\x78\x5e"
    assert data == zlib.compress(body, 5)
    assert decompress_body(data, sys_flag) == body
    assert compress_body(b"x" * 10, threshold=5, level=9)[0][:2] == b"\x78\xda"


def test_uncompressed_bodies_pass_through() -> None:
    assert decompress_body(b"\x00garbage", 0) == b"\x00garbage"


def test_compressed_flag_without_type_bits_means_zlib() -> None:
    assert compression_type(COMPRESSED_FLAG) is CompressionType.ZLIB
    assert decompress_body(zlib.compress(b"old"), COMPRESSED_FLAG) == b"old"


def test_unknown_compression_type_is_a_protocol_error() -> None:
    with pytest.raises(RemoteProtocolError, match="unknown compression type 5"):
        decompress_body(b"", COMPRESSED_FLAG | 5 << 8)


@pytest.mark.parametrize("data", [b"", b"not zlib", zlib.compress(b"abcdef" * 50)[:-5]])
def test_corrupt_or_truncated_zlib_raises(data: bytes) -> None:
    with pytest.raises(RemoteProtocolError):
        decompress_body(data, COMPRESSED_FLAG | COMPRESSION_ZLIB_TYPE)


def test_inflated_size_is_bounded() -> None:
    bomb = zlib.compress(bytes(1_000_000), 9)
    assert len(bomb) < 2000
    with pytest.raises(RemoteProtocolError, match="beyond 999999"):
        decompress_body(bomb, 769, max_size=999_999)
    assert len(decompress_body(bomb, 769, max_size=1_000_000)) == 1_000_000


@deterministic
@given(st.binary(max_size=64))
def test_garbage_decompresses_or_raises_remote_protocol_error(data: bytes) -> None:
    with contextlib.suppress(RemoteProtocolError):
        decompress_body(data, 769, max_size=1000)


# -- batch bodies -----------------------------------------------------------------------------

_items = st.lists(
    st.builds(
        BatchItem,
        flag=st.integers(-(2**31), 2**31 - 1),
        body=st.binary(max_size=40),
        properties=st.text(st.characters(exclude_categories=("Cs",)), max_size=20),
    ),
    max_size=5,
)


def test_batch_layout_is_java_encode_messages() -> None:
    body = encode_batch([BatchItem(7, b"hello", "A\x01b")])
    assert body == struct.pack(">iiiii", 4 * 5 + 5 + 2 + 3, 0, 0, 7, 5) + b"hello" + (
        struct.pack(">h", 3) + b"A\x01b"
    )


@deterministic
@given(_items)
def test_batch_round_trip(items: list[BatchItem]) -> None:
    assert decode_batch(encode_batch(items)) == items


@deterministic
@given(_items.filter(bool), st.integers(0, 200))
def test_truncated_batches_raise(items: list[BatchItem], cut: int) -> None:
    body = encode_batch(items)
    last = len(encode_batch(items[-1:]))
    # drop 1..last-1 bytes: always inside the last entry, never at the boundary before it
    # (that would leave a valid shorter batch, or an empty one)
    with pytest.raises(RemoteProtocolError):
        decode_batch(body[: len(body) - 1 - cut % (last - 1)])


@deterministic
@given(_items.filter(bool), st.binary(min_size=1, max_size=21))
def test_trailing_bytes_raise(items: list[BatchItem], extra: bytes) -> None:
    with pytest.raises(RemoteProtocolError):
        decode_batch(encode_batch(items) + extra)


@deterministic
@given(st.binary(max_size=120))
def test_garbage_batches_raise_only_remote_protocol_error(data: bytes) -> None:
    with contextlib.suppress(RemoteProtocolError):
        decode_batch(data)


def test_inconsistent_total_size_is_rejected() -> None:
    good = encode_batch([BatchItem(0, b"ab", "x\x01y")])
    bad = struct.pack(">i", len(good) + 1) + good[4:]
    with pytest.raises(RemoteProtocolError, match="totalSize"):
        decode_batch(bad + b"\x00")
    with pytest.raises(RemoteProtocolError, match="properties"):
        decode_batch(good[:-3] + b"\xff\xfe\xfd")


def test_properties_over_int16_cannot_be_batched() -> None:
    with pytest.raises(MessageValidationError, match="32767"):
        encode_batch([BatchItem(0, b"x", "p\x01" + "v" * 32766)])


def test_empty_batch_body_is_no_messages() -> None:
    assert decode_batch(b"") == []
    assert encode_batch([]) == b""


# -- offset message ids ---------------------------------------------------------------------


def test_offset_msg_id_matches_the_broker() -> None:
    assert make_offset_msg_id("127.0.0.2", 10911, 0) == "7F00000200002A9F0000000000000000"
    assert make_offset_msg_id("127.0.0.2", 10911, 0x3E5) == "7F00000200002A9F00000000000003E5"
    parsed = parse_offset_msg_id("7F00000200002AA900000000000000D3")
    assert parsed == ("127.0.0.2", 10921, 0xD3)
    assert parse_offset_msg_id("7f00000200002aa900000000000000d3") == parsed


def test_ipv6_offset_msg_ids_have_28_bytes() -> None:
    msg_id = make_offset_msg_id("::1", 10911, 5)
    assert len(msg_id) == 56
    assert parse_offset_msg_id(msg_id) == ("::1", 10911, 5)


@deterministic
@given(st.ip_addresses(v=4).map(str), st.integers(0, 65535), st.integers(-(2**63), 2**63 - 1))
def test_offset_msg_id_round_trip(host: str, port: int, offset: int) -> None:
    msg_id = make_offset_msg_id(host, port, offset)
    assert len(msg_id) == 32
    assert msg_id == msg_id.upper()
    assert parse_offset_msg_id(msg_id) == (host, port, offset)


@pytest.mark.parametrize("bad", ["", "XYZ", "7F" * 15 + " 1", "0" * 33, "+" + "0" * 31])
def test_bad_offset_msg_ids_are_rejected(bad: str) -> None:
    with pytest.raises(RemoteProtocolError):
        parse_offset_msg_id(bad)


def test_bad_offset_msg_id_inputs_are_local_errors() -> None:
    with pytest.raises(LocalProtocolError):
        make_offset_msg_id("broker-a", 1, 0)
    with pytest.raises(LocalProtocolError):
        make_offset_msg_id("127.0.0.1", 2**31, 0)
