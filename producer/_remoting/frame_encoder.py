"""Frame encoding: ``int32 length | int32 (type << 24 | headerLen) | header | body``.

What we send: JSON headers, or ROCKETMQ binary ones for a command that asks for them.
It knows a command only by its fields (:class:`CommandFields`), so the command can
encode itself without the codec importing it back (decoding lives in :mod:`.frame_decoder`).
"""

from __future__ import annotations

import struct
from typing import Any, Protocol

import msgspec

from producer._remoting.request_codes import LanguageCode, SerializeType
from producer.errors import LocalProtocolError

MAX_FRAME_BYTES = 16 * 1024 * 1024

INT32 = struct.Struct(">i")
_PREFIX = struct.Struct(">ii")
BINARY_FIXED = struct.Struct(">hbhii")  # code, language, version, opaque, flag
_LANGUAGE_NAMES = {lang.value: lang.name for lang in LanguageCode}


class CommandFields(Protocol):
    """What a frame is made of (a :class:`~producer._remoting.command.RemotingCommand`)."""

    @property
    def code(self) -> int: ...
    @property
    def language(self) -> int: ...
    @property
    def version(self) -> int: ...
    @property
    def opaque(self) -> int: ...
    @property
    def flag(self) -> int: ...
    @property
    def remark(self) -> str | None: ...
    @property
    def ext_fields(self) -> dict[str, str] | None: ...
    @property
    def body(self) -> bytes: ...
    @property
    def serialize_type(self) -> SerializeType: ...


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


_json_encoder = msgspec.json.Encoder()


def encode_header(command: CommandFields) -> bytes:
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


def encode_frame(command: CommandFields) -> bytes:
    """The whole frame, length prefix included."""
    return b"".join(command_frame_parts(command))


def command_frame_parts(command: CommandFields) -> list[bytes]:
    """The frame as ``[prefix and header, body]``: the body is not copied."""
    header = encode_header(command)
    return frame_parts(header, command.body, command.serialize_type)


def frame_parts(
    header: bytes, body: bytes, serialize_type: int = SerializeType.JSON
) -> list[bytes]:
    """Length prefix and header joined, then the body as it is."""
    header_len = len(header)
    total = 4 + header_len + len(body)
    if total + 4 > MAX_FRAME_BYTES:
        raise LocalProtocolError(f"frame of {total + 4} bytes exceeds {MAX_FRAME_BYTES}")
    head = _PREFIX.pack(total, (serialize_type << 24) | header_len) + header
    return [head, body] if body else [head]


def _encode_binary_header(command: CommandFields) -> bytes:
    parts = [
        BINARY_FIXED.pack(
            command.code, command.language, command.version, command.opaque, command.flag
        )
    ]
    remark = command.remark.encode() if command.remark is not None else b""
    parts += [INT32.pack(len(remark)), remark]
    fields = bytearray()
    for key, value in (command.ext_fields or {}).items():
        k, v = key.encode(), value.encode()
        fields += struct.pack(">h", len(k)) + k + INT32.pack(len(v)) + v
    parts += [INT32.pack(len(fields)), bytes(fields)]
    return b"".join(parts)


def json_dumps(value: Any) -> bytes:
    """Compact JSON (for bodies such as heartbeats)."""
    return _json_encoder.encode(value)
