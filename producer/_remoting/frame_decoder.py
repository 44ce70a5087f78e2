"""Frame codec: ``int32 length | int32 (type << 24 | headerLen) | header | body``.

Decodes both JSON and ROCKETMQ binary headers (brokers answer in the encoding of the
request; 5.x brokers may prefer binary); encoding is :mod:`.frame_encoder`'s.
:class:`FrameDecoder` turns a byte stream into commands incrementally.
"""

from __future__ import annotations

import struct

import msgspec

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_encoder import (
    BINARY_FIXED,
    INT32,
    MAX_FRAME_BYTES,
)
from producer._remoting.request_codes import LanguageCode, SerializeType
from producer.errors import RemoteProtocolError

# Encoding lives in frame_encoder (the command encodes itself through it); its names
# are here too, so that one module says how frames are read and written.
__all__ = [
    "FrameDecoder",
    "decode_frame",
    "decode_payload",
]

_LANGUAGE_CODES = dict(LanguageCode.__members__)  # name -> member (__members__ copies per call)
_OTHER = LanguageCode.OTHER  # enum members read once: each class lookup costs
_JSON = SerializeType.JSON


class _JsonHeaderIn(msgspec.Struct):
    code: int
    language: str = "JAVA"
    version: int = 0
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    extFields: dict[str, str] | None = None  # noqa: N815 - wire name


_json_header_decoder = msgspec.json.Decoder(_JsonHeaderIn)


# -- decoding ---------------------------------------------------------------------------


def decode_frame(frame: bytes) -> RemotingCommand:
    """Decode exactly one whole frame (length prefix included); anything else is an error."""
    if len(frame) < 8:
        raise RemoteProtocolError(f"frame of {len(frame)} bytes is shorter than its prefix")
    (length,) = INT32.unpack_from(frame, 0)
    if length + 4 > MAX_FRAME_BYTES:
        raise RemoteProtocolError(f"frame of {length + 4} bytes exceeds {MAX_FRAME_BYTES}")
    if length + 4 != len(frame):
        raise RemoteProtocolError(
            f"frame length field says {length + 4} bytes but {len(frame)} were given"
        )
    return decode_payload(memoryview(frame)[4:])


def decode_payload(payload: memoryview | bytes) -> RemotingCommand:
    """Decode a frame without its length prefix: ``type|headerLen, header, body``."""
    size = len(payload)
    if size < 4:
        raise RemoteProtocolError("frame too short for its header length word")
    (word,) = INT32.unpack_from(payload, 0)
    serialize_code, header_len = (word >> 24) & 0xFF, word & 0xFFFFFF
    if header_len > size - 4:
        raise RemoteProtocolError(
            f"header length {header_len} exceeds the frame's {size - 4} bytes"
        )
    header = payload[4 : 4 + header_len]
    body = bytes(payload[4 + header_len :])
    if serialize_code == SerializeType.JSON:  # the JSON header, decoded inline: every answer
        try:
            h = _json_header_decoder.decode(header)
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            raise RemoteProtocolError(f"malformed JSON header: {exc}") from None
        command = RemotingCommand.decoded(
            h.code,
            h.opaque,
            h.flag,
            h.extFields,
            h.remark,
            _LANGUAGE_CODES.get(h.language, _OTHER),
            h.version,
            _JSON,
        )
    elif serialize_code == SerializeType.ROCKETMQ:
        command = _decode_binary_header(header)
    else:
        raise RemoteProtocolError(f"unknown header serialize type {serialize_code}")
    command.body = body
    return command


def _decode_binary_header(header: memoryview | bytes) -> RemotingCommand:
    try:
        return _parse_binary_header(bytes(header))
    except (struct.error, UnicodeDecodeError, IndexError) as exc:
        raise RemoteProtocolError(f"malformed ROCKETMQ header: {exc}") from None


def _parse_binary_header(data: bytes) -> RemotingCommand:
    code, language, version, opaque, flag = BINARY_FIXED.unpack_from(data, 0)
    pos = BINARY_FIXED.size
    remark, pos = _read_sized(data, pos, INT32)
    (fields_len,) = INT32.unpack_from(data, pos)
    pos += 4
    end = pos + fields_len
    if fields_len < 0 or end != len(data):
        raise RemoteProtocolError(f"ROCKETMQ header ext fields length {fields_len} is wrong")
    ext_fields: dict[str, str] | None = {} if fields_len else None
    while pos < end:
        key, pos = _read_sized(data, pos, _INT16)
        value, pos = _read_sized(data, pos, INT32)
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
        return (None if size is INT32 else ""), pos
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
        if buffer:
            buffer += data
            source: bytes | bytearray | memoryview = buffer
        else:  # reads mostly end on a frame's end: decode them where they are, no copy
            source = data
        commands: list[RemotingCommand] = []
        pos, size = 0, len(source)
        view = memoryview(source)
        try:
            while size - pos >= 4:
                (length,) = INT32.unpack_from(view, pos)
                if length < 4 or length + 4 > self.max_frame_bytes:
                    self._check_length(length)  # raises
                if size - pos - 4 < length:
                    break
                commands.append(decode_payload(view[pos + 4 : pos + 4 + length]))
                pos += 4 + length
            if source is not buffer and pos < size:
                buffer += view[pos:]  # the start of a frame the next read ends
        except RemoteProtocolError:
            self._failed = True
            raise
        finally:
            view.release()
        if source is buffer and pos:
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
