"""Every golden frame decodes to exactly what its ``.json`` description records.

Covers the header (code, flag, opaque, language, version, remark, extFields, serialize
type), the body (exact text or hex) and the parsed helpers the capture tool added:
properties (``extFields_i_properties_parsed``), the zlib-decompressed body, the decoded
batch and the route JSON. ROCKETMQ binary frames must also re-encode byte for byte.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_decoder import FrameDecoder, decode_frame
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.message_codec import decode_batch, decompress_body
from producer._remoting.properties import decode_properties
from producer._remoting.request_codes import LanguageCode, SerializeType
from producer._remoting.route import TopicRouteData, encode_route_data, parse_route_data
from producer._remoting.send_header import SendMessageRequestHeader, parse_send_request_header

from .golden import GoldenFrame, all_frames, frame_names, golden_dir

NAMES = frame_names()


def _golden(name: str) -> GoldenFrame:
    return next(f for f in all_frames() if f.name == name)


def _language(command: RemotingCommand) -> str:
    return LanguageCode(command.language).name


def test_golden_directory_is_complete() -> None:
    root = golden_dir()
    assert len(all_frames()) == 84
    for run in ("java-json", "java-rocketmq", "probe"):
        assert (root / run).is_dir()


@pytest.mark.parametrize("name", NAMES)
def test_header_matches_description(name: str) -> None:
    golden = _golden(name)
    info = golden.info
    command = decode_frame(golden.raw)
    assert len(golden.raw) == info["frame_bytes"]
    assert command.serialize_type is SerializeType[info["serialize_type"]]
    assert command.code == info["code"]
    assert command.flag == info["flag"]
    assert command.is_response == info["is_response"]
    assert command.is_oneway == info["is_oneway"]
    assert command.opaque == info["opaque"]
    assert _language(command) == info["language"]
    assert command.version == info["version"]
    assert command.remark == info["remark"]
    assert command.ext_fields == info["extFields"]
    assert len(command.body) == info["body_length"]


@pytest.mark.parametrize("name", NAMES)
def test_body_matches_description(name: str) -> None:
    info = _golden(name).info
    body = decode_frame(_golden(name).raw).body
    if "body_text_exact" in info:
        assert body.decode() == info["body_text_exact"]
    elif "body_hex" in info:
        assert body.hex() == info["body_hex"]
    else:
        assert body == b""


HELPERS = (
    "extFields_i_properties_parsed",
    "body_zlib_decompressed_text",
    "body_batch_decoded",
    "body_parsed",
)
# Only the frames whose description carries a parsed helper: each case checks something.
WITH_HELPERS = [n for n in NAMES if any(key in _golden(n).info for key in HELPERS)]


def test_frames_with_parsed_helpers_are_the_ones_expected() -> None:
    assert len(WITH_HELPERS) >= 30  # sends (properties), batches, compressed, routes
    assert any("route" in n for n in WITH_HELPERS) and any("batch" in n for n in WITH_HELPERS)


@pytest.mark.parametrize("name", WITH_HELPERS)
def test_parsed_helpers(name: str) -> None:
    info = _golden(name).info
    command = decode_frame(_golden(name).raw)
    if "extFields_i_properties_parsed" in info:
        header = parse_send_request_header(command)
        assert header.sys_flag == info["extFields_f_sysFlag"]
        assert decode_properties(header.properties or "") == info["extFields_i_properties_parsed"]
    if "body_zlib_decompressed_text" in info:
        sys_flag = int(command.field("f") or 0)
        plain = decompress_body(command.body, sys_flag, max_size=4 * 1024 * 1024)
        assert plain.decode() == info["body_zlib_decompressed_text"]
    if "body_batch_decoded" in info:
        _check_batch(command.body, info["body_batch_decoded"])
    if "body_parsed" in info:
        route = parse_route_data(command.body)
        assert _route_as_json(route) == info["body_parsed"]


def _check_batch(body: bytes, expected: list[dict[str, Any]]) -> None:
    items = decode_batch(body)
    assert len(items) == len(expected)
    for item, want in zip(items, expected, strict=True):
        assert want["magicCode"] == 0
        assert want["bodyCRC"] == 0
        assert item.flag == want["flag"]
        assert item.body.decode() == want["body_text"]
        assert item.properties == want["properties_raw"]
        assert decode_properties(item.properties) == want["properties"]
        assert len(item.properties.encode()) == want["propertiesLength"]


def _route_as_json(route: TopicRouteData) -> Any:
    return json.loads(encode_route_data(route, legacy=False))


@pytest.mark.parametrize("name", [n for n in NAMES if "java-rocketmq" in n or "binary" in n])
def test_binary_frames_reencode_byte_for_byte(name: str) -> None:
    golden = _golden(name)
    command = decode_frame(golden.raw)
    assert command.serialize_type is SerializeType.ROCKETMQ
    assert encode_frame(command) == golden.raw


@pytest.mark.parametrize("name", [n for n in NAMES if "header_text_exact" in _golden(n).info])
def test_json_frames_reencode_to_the_same_header(name: str) -> None:
    golden = _golden(name)
    command = decode_frame(golden.raw)
    ours = encode_frame(command)
    assert decode_frame(ours) == command
    # The same JSON document; only the key order differs (fastjson sorts, we do not).
    header_len = int.from_bytes(ours[4:8], "big") & 0xFFFFFF
    assert json.loads(ours[8 : 8 + header_len]) == json.loads(golden.info["header_text_exact"])


def test_send_request_headers_parse_in_both_encodings() -> None:
    for run in ("java-json", "java-rocketmq"):
        command = decode_frame(_golden(f"{run}/08_send_batch_3.request").raw)
        header = parse_send_request_header(command)
        assert header == SendMessageRequestHeader.from_v2_fields(command.ext_fields)
        assert header.batch is True
        assert header.properties == "WAIT\x01true"
        assert header.max_reconsume_times is None


def test_whole_sessions_decode_through_the_stream_decoder() -> None:
    """Each recorded connection direction, replayed as one stream in uneven chunks."""
    root = golden_dir() / "sessions"
    for run in ("java-json", "java-rocketmq", "probe"):
        records = [json.loads(line) for line in (root / run / "frames.jsonl").open()]
        streams: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
        for record in records:
            streams.setdefault((record["route"], record["conn"], record["dir"]), []).append(record)
        for stream_records in streams.values():
            data = b"".join((root / run / r["file"]).read_bytes() for r in stream_records)
            decoder = FrameDecoder()
            decoded: list[RemotingCommand] = []
            pos, step = 0, 1
            while pos < len(data):
                decoded += decoder.feed(data[pos : pos + step])
                pos, step = pos + step, step * 3 % 1021 + 1
            assert decoder.buffered == 0
            summary = [(c.code, c.opaque, c.flag) for c in decoded]
            assert summary == [(r["code"], r["opaque"], r["flag"]) for r in stream_records]
