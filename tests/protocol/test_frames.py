"""The frame codec: round trips in both header encodings, streams, limits and garbage."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from producer._remoting.command import OpaqueAllocator, RemotingCommand
from producer._remoting.frame_decoder import FrameDecoder, decode_frame, decode_payload
from producer._remoting.frame_encoder import MAX_FRAME_BYTES, encode_frame
from producer._remoting.request_codes import LanguageCode, SerializeType
from producer.errors import LocalProtocolError, RemoteProtocolError

from .support import deterministic

_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=20)
_int32 = st.integers(-(2**31), 2**31 - 1)
_int16 = st.integers(-(2**15), 2**15 - 1)


@st.composite
def commands(draw: st.DrawFn, serialize_type: SerializeType | None = None) -> RemotingCommand:
    kind = serialize_type or draw(st.sampled_from(SerializeType))
    binary = kind is SerializeType.ROCKETMQ
    # Binary headers cannot tell null from empty (length 0 means null), so round trips
    # use null or non-empty values there.
    remark = draw(st.none() | (_text.filter(bool) if binary else _text))
    fields = st.dictionaries(_text, _text, min_size=1 if binary else 0, max_size=5)
    return RemotingCommand(
        draw(_int16 if binary else _int32),
        opaque=draw(_int32),
        flag=draw(_int32),
        ext_fields=draw(st.none() | fields),
        body=draw(st.binary(max_size=64)),
        remark=remark,
        language=draw(st.sampled_from(LanguageCode)),
        version=draw(_int16 if binary else _int32),
        serialize_type=kind,
    )


@deterministic
@given(commands())
def test_frames_round_trip_in_both_header_encodings(command: RemotingCommand) -> None:
    frame = encode_frame(command)
    assert decode_frame(frame) == command
    (length, word) = struct.unpack_from(">ii", frame)
    assert length == len(frame) - 4
    assert word >> 24 == command.serialize_type


@settings(deterministic, max_examples=40)
@given(st.lists(commands(), min_size=1, max_size=6), st.integers(1, 7))
def test_a_stream_decodes_whole_in_chunks_and_byte_by_byte(
    batch: list[RemotingCommand], chunk: int
) -> None:
    stream = b"".join(map(encode_frame, batch))
    assert FrameDecoder().feed(stream) == batch
    for size in (1, chunk):
        decoder, out = FrameDecoder(), []
        for start in range(0, len(stream), size):
            out += decoder.feed(stream[start : start + size])
        assert out == batch
        assert decoder.buffered == 0


@settings(deterministic, max_examples=40)
@given(commands(), st.binary(min_size=1, max_size=8))
def test_decode_frame_rejects_trailing_and_missing_bytes(
    command: RemotingCommand, extra: bytes
) -> None:
    frame = encode_frame(command)
    with pytest.raises(RemoteProtocolError):
        decode_frame(frame + extra)
    with pytest.raises(RemoteProtocolError):
        decode_frame(frame[:-1])


@settings(deterministic, max_examples=40)
@given(commands(), st.binary(min_size=1, max_size=3))
def test_stream_decoder_keeps_a_partial_trailing_frame(
    command: RemotingCommand, extra: bytes
) -> None:
    decoder = FrameDecoder()
    assert decoder.feed(encode_frame(command) + extra) == [command]
    assert decoder.buffered == len(extra)


@settings(deterministic, max_examples=300)
@given(st.binary(max_size=300))
def test_garbage_raises_only_remote_protocol_error(data: bytes) -> None:
    for decode in (decode_frame, decode_payload, FrameDecoder().feed):
        with contextlib.suppress(RemoteProtocolError):
            decode(data)


@settings(deterministic, max_examples=300)
@given(st.sampled_from([0, 1]), st.binary(max_size=120))
def test_garbage_headers_raise_only_remote_protocol_error(kind: int, header: bytes) -> None:
    """A well-framed payload whose header is junk, in each encoding."""
    payload = struct.pack(">i", kind << 24 | len(header)) + header
    frame = struct.pack(">i", len(payload)) + payload
    with contextlib.suppress(RemoteProtocolError):
        decode_frame(frame)


def test_frames_over_16_mib_are_rejected() -> None:
    decoder = FrameDecoder()
    with pytest.raises(RemoteProtocolError):
        decoder.feed(struct.pack(">ii", MAX_FRAME_BYTES - 3, 0))
    with pytest.raises(RemoteProtocolError):  # a failed stream stays failed
        decoder.feed(b"")
    assert FrameDecoder().feed(struct.pack(">i", MAX_FRAME_BYTES - 4)) == []  # exactly 16 MiB
    too_big = RemotingCommand(10, body=bytes(MAX_FRAME_BYTES))
    with pytest.raises(LocalProtocolError):
        encode_frame(too_big)
    header = b'{"code":0}'
    body = bytes(MAX_FRAME_BYTES + 1 - 8 - len(header))
    oversized = struct.pack(">ii", MAX_FRAME_BYTES - 3, len(header)) + header + body
    with pytest.raises(RemoteProtocolError, match="exceeds"):
        decode_frame(oversized)
    exact = struct.pack(">ii", MAX_FRAME_BYTES - 4, len(header)) + header + body[:-1]
    assert decode_frame(exact).code == 0


@pytest.mark.parametrize("length", [-1, 0, 3])
def test_impossible_lengths_are_rejected(length: int) -> None:
    with pytest.raises(RemoteProtocolError):
        FrameDecoder().feed(struct.pack(">i", length) + bytes(8))


def test_unknown_serialize_type_is_rejected() -> None:
    with pytest.raises(RemoteProtocolError, match="serialize type"):
        decode_frame(struct.pack(">ii", 6, 2 << 24 | 2) + b"{}")


def test_json_header_carries_every_field_in_java_order() -> None:
    command = RemotingCommand(105, opaque=7, ext_fields={"topic": "T"}, remark="r")
    header = encode_frame(command)[8:]
    assert header == (
        b'{"code":105,"extFields":{"topic":"T"},"flag":0,"language":"PYTHON","opaque":7,'
        b'"remark":"r","serializeTypeCurrentRPC":"JSON","version":401}'
    )


def test_opaque_allocator_increases_and_wraps_within_int32() -> None:
    allocator = OpaqueAllocator(2**31 - 2)
    assert [allocator.allocate() for _ in range(3)] == [2**31 - 2, 2**31 - 1, 0]
