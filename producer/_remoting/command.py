"""The remoting command: one request or response, independent of its encoding."""

from __future__ import annotations

from typing import Protocol

from producer._remoting.frame_encoder import command_frame_parts
from producer._remoting.request_codes import (
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    PROTOCOL_VERSION,
    LanguageCode,
    SerializeType,
)

_INT32_MAX = 2**31 - 1


class RemotingCommand:
    """A request or response of the remoting protocol.

    ``ext_fields`` holds the custom header as strings, exactly as both header encodings
    carry it. ``serialize_type`` records the header encoding a decoded frame used (and
    the one to encode with).
    """

    __slots__ = (
        "body",
        "code",
        "ext_fields",
        "flag",
        "language",
        "opaque",
        "remark",
        "serialize_type",
        "version",
    )

    def __init__(
        self,
        code: int,
        *,
        opaque: int = 0,
        flag: int = 0,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        remark: str | None = None,
        language: int = LanguageCode.PYTHON,
        version: int = PROTOCOL_VERSION,
        serialize_type: SerializeType = SerializeType.JSON,
    ) -> None:
        self.code = code
        self.opaque = opaque
        self.flag = flag
        self.ext_fields = ext_fields
        self.body = body
        self.remark = remark
        self.language = language
        self.version = version
        self.serialize_type = serialize_type

    @classmethod
    def decoded(
        cls,
        code: int,
        opaque: int,
        flag: int,
        ext_fields: dict[str, str] | None,
        remark: str | None,
        language: int,
        version: int,
        serialize_type: SerializeType,
    ) -> RemotingCommand:
        """A command as the decoder reads one (its body set after): every field given,
        positionally, no defaults to resolve. Half the cost of ``__init__``'s keywords on
        the path every response takes."""
        command = object.__new__(cls)
        command.code, command.opaque, command.flag = code, opaque, flag
        command.ext_fields, command.remark, command.body = ext_fields, remark, b""
        command.language, command.version, command.serialize_type = (
            language,
            version,
            serialize_type,
        )
        return command

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)

    def frame_parts(self) -> list[bytes]:
        return command_frame_parts(self)

    def add_ext_fields(self, fields: dict[str, str]) -> None:
        if self.ext_fields is None:
            self.ext_fields = {}
        self.ext_fields.update(fields)

    def field(self, name: str) -> str | None:
        """One ext field, or ``None`` when absent."""
        return None if self.ext_fields is None else self.ext_fields.get(name)

    def make_response(
        self,
        code: int,
        *,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        remark: str | None = None,
    ) -> RemotingCommand:
        """A response to this request: same opaque and header encoding, response flag set."""
        return RemotingCommand(
            code,
            opaque=self.opaque,
            flag=FLAG_RESPONSE,
            ext_fields=ext_fields,
            body=body,
            remark=remark,
            language=LanguageCode.JAVA,
            serialize_type=self.serialize_type,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RemotingCommand):
            return NotImplemented
        return all(getattr(self, s) == getattr(other, s) for s in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        kind = "response" if self.is_response else ("oneway" if self.is_oneway else "request")
        return (
            f"RemotingCommand({kind} code={self.code} opaque={self.opaque} "
            f"ext={self.ext_fields!r} remark={self.remark!r} body={len(self.body)}B "
            f"{self.serialize_type.name})"
        )


class OpaqueAllocator:
    """Hands out request ids: increasing, wrapping within the positive int32 range."""

    __slots__ = ("_next",)

    def __init__(self, start: int = 0) -> None:
        self._next = start

    def allocate(self) -> int:
        value = self._next
        self._next = 0 if value >= _INT32_MAX else value + 1
        return value

    def __repr__(self) -> str:
        return f"OpaqueAllocator(next={self._next})"


class OutgoingRequest(Protocol):
    """What a connection writes: a :class:`RemotingCommand`, or a send request whose header
    is mostly pre-encoded (:class:`producer._remoting.preencoded_send.SendRequest`)."""

    opaque: int
    flag: int

    @property
    def code(self) -> int: ...

    @property
    def ext_fields(self) -> dict[str, str] | None: ...

    @property
    def body(self) -> bytes: ...

    def add_ext_fields(self, fields: dict[str, str]) -> None:
        """Add fields to the header before the frame is written (e.g. a signature)."""
        ...

    def frame_parts(self) -> list[bytes]:
        """The whole frame as buffers to write in order (the body is not copied)."""
        ...
