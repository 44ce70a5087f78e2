"""Frame codec: ``int32 length | int32 (type << 24 | headerLen) | header | body``.

Encodes JSON headers (what we send) and decodes both JSON and ROCKETMQ binary headers
(brokers answer in the encoding of the request; 5.x brokers may prefer binary).
:class:`FrameDecoder` turns a byte stream into commands incrementally.
"""

from __future__ import annotations

import struct
from typing import Any

import msgspec

from producer._remoting.codes import LanguageCode, SerializeType
from producer._remoting.command import RemotingCommand
from producer.errors import LocalProtocolError, RemoteProtocolError

MAX_FRAME_BYTES = 16 * 1024 * 1024

_INT32 = struct.Struct(">i")
_PREFIX = struct.Struct(">ii")
_BINARY_FIXED = struct.Struct(">hbhii")  # code, language, version, opaque, flag
_LANGUAGE_NAMES = {lang.value: lang.name for lang in LanguageCode}
_LANGUAGE_CODES = dict(LanguageCode.__members__)  # name -> member (__members__ copies per call)


class _JsonHeaderOut(msgspec.Struct, omit_defaults=True, kw_only=True):
    # Keys in fastjson's (alphabetical) order, so our headers read like Java's. Only the
    # null-able fields have defaults: omit_defaults drops exactly those when null.
    code: int
    extFields: dict[str, str] | None = None  # noqa: N815 - wire name
    flag: int
    language: str
    opaque: int
    remark: str | None = None
    serializeTypeCurrentRPC: str  # noqa: N815 - wire name
    version: int


class _JsonHeaderIn(msgspec.Struct):
    code: int
    language: str = "JAVA"
    version: int = 0
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    extFields: dict[str, str] | None = None  # noqa: N815 - wire name


_json_encoder = msgspec.json.Encoder()
_json_header_decoder = msgspec.json.Decoder(_JsonHeaderIn)


# -- encoding ---------------------------------------------------------------------------


def encode_header(command: RemotingCommand) -> bytes:
    if command.serialize_type is SerializeType.ROCKETMQ:
        return _encode_binary_header(command)
    header = _JsonHeaderOut(
        code=command.code,
        language=_LANGUAGE_NAMES.get(command.language, "OTHER"),
        version=command.version,
        opaque=command.opaque,
        flag=command.flag,
        remark=command.remark,
        extFields=command.ext_fields,
        serializeTypeCurrentRPC="JSON",
    )
    return _json_encoder.encode(header)


def encode_frame(command: RemotingCommand) -> bytes:
    """The whole frame, length prefix included."""
    return b"".join(command_frame_parts(command))


def command_frame_parts(command: RemotingCommand) -> list[bytes]:
    """The frame as ``[prefix and header, body]``: the body is not copied."""
    header = encode_header(command)
    return frame_parts(header, command.body, command.serialize_type)


def frame_parts(
    header: bytes, body: bytes, serialize_type: int = SerializeType.JSON
) -> list[bytes]:
    """Length prefix and header joined, then the body as it is."""
    total = 4 + len(header) + len(body)
    if total + 4 > MAX_FRAME_BYTES:
        raise LocalProtocolError(f"frame of {total + 4} bytes exceeds {MAX_FRAME_BYTES}")
    head = _PREFIX.pack(total, (serialize_type << 24) | len(header)) + header
    return [head, body] if body else [head]


def _encode_binary_header(command: RemotingCommand) -> bytes:
    parts = [
        _BINARY_FIXED.pack(
            command.code, command.language, command.version, command.opaque, command.flag
        )
    ]
    remark = command.remark.encode() if command.remark is not None else b""
    parts += [_INT32.pack(len(remark)), remark]
    fields = bytearray()
    for key, value in (command.ext_fields or {}).items():
        k, v = key.encode(), value.encode()
        fields += struct.pack(">h", len(k)) + k + _INT32.pack(len(v)) + v
    parts += [_INT32.pack(len(fields)), bytes(fields)]
    return b"".join(parts)


# -- decoding ---------------------------------------------------------------------------


def decode_frame(frame: bytes) -> RemotingCommand:
    """Decode exactly one whole frame (length prefix included); anything else is an error."""
    if len(frame) < 8:
        raise RemoteProtocolError(f"frame of {len(frame)} bytes is shorter than its prefix")
    (length,) = _INT32.unpack_from(frame, 0)
    if length + 4 > MAX_FRAME_BYTES:
        raise RemoteProtocolError(f"frame of {length + 4} bytes exceeds {MAX_FRAME_BYTES}")
    if length + 4 != len(frame):
        raise RemoteProtocolError(
            f"frame length field says {length + 4} bytes but {len(frame)} were given"
        )
    return decode_payload(memoryview(frame)[4:])


def decode_payload(payload: memoryview | bytes) -> RemotingCommand:
    """Decode a frame without its length prefix: ``type|headerLen, header, body``."""
    if len(payload) < 4:
        raise RemoteProtocolError("frame too short for its header length word")
    (word,) = _INT32.unpack_from(payload, 0)
    serialize_code, header_len = (word >> 24) & 0xFF, word & 0xFFFFFF
    if header_len > len(payload) - 4:
        raise RemoteProtocolError(
            f"header length {header_len} exceeds the frame's {len(payload) - 4} bytes"
        )
    header = payload[4 : 4 + header_len]
    body = bytes(payload[4 + header_len :])
    if serialize_code == SerializeType.JSON:
        command = _decode_json_header(header)
    elif serialize_code == SerializeType.ROCKETMQ:
        command = _decode_binary_header(header)
    else:
        raise RemoteProtocolError(f"unknown header serialize type {serialize_code}")
    command.body = body
    return command


def _decode_json_header(header: memoryview | bytes) -> RemotingCommand:
    try:
        h = _json_header_decoder.decode(header)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise RemoteProtocolError(f"malformed JSON header: {exc}") from None
    language = _LANGUAGE_CODES.get(h.language, LanguageCode.OTHER)
    return RemotingCommand(
        h.code,
        opaque=h.opaque,
        flag=h.flag,
        ext_fields=h.extFields,
        remark=h.remark,
        language=language,
        version=h.version,
        serialize_type=SerializeType.JSON,
    )


def _decode_binary_header(header: memoryview | bytes) -> RemotingCommand:
    try:
        return _parse_binary_header(bytes(header))
    except (struct.error, UnicodeDecodeError, IndexError) as exc:
        raise RemoteProtocolError(f"malformed ROCKETMQ header: {exc}") from None


def _parse_binary_header(data: bytes) -> RemotingCommand:
    code, language, version, opaque, flag = _BINARY_FIXED.unpack_from(data, 0)
    pos = _BINARY_FIXED.size
    remark, pos = _read_sized(data, pos, _INT32)
    (fields_len,) = _INT32.unpack_from(data, pos)
    pos += 4
    end = pos + fields_len
    if fields_len < 0 or end != len(data):
        raise RemoteProtocolError(f"ROCKETMQ header ext fields length {fields_len} is wrong")
    ext_fields: dict[str, str] | None = {} if fields_len else None
    while pos < end:
        key, pos = _read_sized(data, pos, _INT16)
        value, pos = _read_sized(data, pos, _INT32)
        ext_fields[key or ""] = value or ""  # type: ignore[index]
    return RemotingCommand(
        code,
        opaque=opaque,
        flag=flag,
        ext_fields=ext_fields,
        remark=remark,
        language=language,
        version=version,
        serialize_type=SerializeType.ROCKETMQ,
    )


_INT16 = struct.Struct(">h")


def _read_sized(data: bytes, pos: int, size: struct.Struct) -> tuple[str | None, int]:
    (length,) = size.unpack_from(data, pos)
    pos += size.size
    if length < 0 or pos + length > len(data):
        raise RemoteProtocolError(f"ROCKETMQ header string length {length} out of bounds")
    if length == 0:
        return (None if size is _INT32 else ""), pos
    return data[pos : pos + length].decode(), pos + length


class FrameDecoder:
    """Incremental decoder: feed it bytes as they arrive, get complete commands back.

    Handles frames split across reads and many frames per read. A length over
    ``max_frame_bytes`` or undecodable bytes raise :class:`RemoteProtocolError`; after
    that the stream is unusable (there is no resynchronising a length-prefixed stream).
    """

    __slots__ = ("_buffer", "_failed", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        self._buffer = bytearray()
        self._failed = False
        self.max_frame_bytes = max_frame_bytes

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a complete frame."""
        return len(self._buffer)

    def feed(self, data: bytes | bytearray | memoryview) -> list[RemotingCommand]:
        if self._failed:
            raise RemoteProtocolError("decoder already failed on this stream")
        buffer = self._buffer
        buffer += data
        commands: list[RemotingCommand] = []
        pos, size = 0, len(buffer)
        view = memoryview(buffer)
        try:
            while size - pos >= 4:
                (length,) = _INT32.unpack_from(buffer, pos)
                self._check_length(length)
                if size - pos - 4 < length:
                    break
                commands.append(decode_payload(view[pos + 4 : pos + 4 + length]))
                pos += 4 + length
        except RemoteProtocolError:
            self._failed = True
            raise
        finally:
            view.release()
        if pos:
            del buffer[:pos]
        return commands

    def _check_length(self, length: int) -> None:
        if length < 4 or length + 4 > self.max_frame_bytes:
            self._failed = True
            raise RemoteProtocolError(
                f"frame length {length} outside [4, {self.max_frame_bytes - 4}]"
            )

    def __repr__(self) -> str:
        return f"FrameDecoder(buffered={len(self._buffer)}, failed={self._failed})"


def json_dumps(value: Any) -> bytes:
    """Compact JSON (for bodies such as heartbeats)."""
    return _json_encoder.encode(value)
