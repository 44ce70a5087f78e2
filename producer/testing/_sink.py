"""Sink mode: a broker that answers sends as fast as Python can, storing nothing.

Per request it reads only the header's code, opaque, flag and (for counting) topic, and
answers with a pre-encoded SUCCESS frame in the request's serialize type with the opaque
patched in. Every answer says queue 0, offset 0 and the same offset message id; other
request codes get a bare SUCCESS (with ``offset=0`` for GET_MAX_OFFSET probes). Faults
still apply; their (rare) answers take the ordinary encoder.
"""

from __future__ import annotations

import re
import struct

from producer._protocol.codes import FLAG_ONEWAY, RequestCode, SerializeType
from producer._protocol.command import RemotingCommand
from producer._protocol.frame import encode_frame, encode_header
from producer._protocol.message_codec import make_offset_msg_id
from producer._protocol.send_header import DEFAULT_REGION
from producer.errors import RemoteProtocolError
from producer.testing._server import Decider, Reply

__all__ = ["SinkBroker"]

_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_PREFIX = struct.Struct(">ii")
_BINARY_OPAQUE = 5  # code int16, language int8, version int16, then opaque
_BINARY_FLAG = 9
_PLACEHOLDER = 1987654321
_JSON_FIELD = {
    name: re.compile(rb'"' + name.encode() + rb'":(-?[0-9]+)')
    for name in ("code", "opaque", "flag")
}
_JSON_TOPIC = re.compile(rb'"(?:b|topic)":"((?:[^"\\]|\\.)*)"')
_SEND = frozenset(
    {RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE}
)


class _Template:
    """A response frame for one serialize type with the opaque left to patch in."""

    def __init__(self, command: RemotingCommand) -> None:
        command.opaque = _PLACEHOLDER
        header = encode_header(command)
        self.type_word = command.serialize_type << 24
        if command.serialize_type is SerializeType.JSON:
            self.json_head, _, self.json_tail = header.partition(str(_PLACEHOLDER).encode())
            self.binary = bytearray()
        else:
            self.binary = bytearray(_PREFIX.pack(4 + len(header), self.type_word | len(header)))
            self.binary += header

    def render(self, opaque: int, serialize_type: int) -> bytes:
        if serialize_type == SerializeType.JSON:
            digits = str(opaque).encode()
            header_len = len(self.json_head) + len(digits) + len(self.json_tail)
            return b"".join(
                (_PREFIX.pack(4 + header_len, header_len), self.json_head, digits, self.json_tail)
            )
        frame = self.binary
        _INT32.pack_into(frame, 8 + _BINARY_OPAQUE, opaque)
        return bytes(frame)


def _templates(ext_fields: dict[str, str] | None) -> tuple[_Template, _Template]:
    return tuple(  # type: ignore[return-value]
        _Template(RemotingCommand(0, flag=1, ext_fields=ext_fields, language=0, serialize_type=t))
        for t in (SerializeType.JSON, SerializeType.ROCKETMQ)
    )


class SinkBroker:
    """A :class:`~producer.testing._server.RequestHandler` that only counts sends."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.messages = 0
        self.by_topic: dict[str, int] = {}
        self._send_fields = {"MSG_REGION": DEFAULT_REGION, "TRACE_ON": "true"}
        self._send_templates = _templates(self._send_fields)
        self._other_templates = _templates({"offset": "0"})

    def __repr__(self) -> str:
        return f"SinkBroker({self.name}, messages={self.messages})"

    def set_store_host(self, host: str, port: int) -> None:
        self._send_fields = {
            "msgId": make_offset_msg_id(host, port, 0),
            "queueId": "0",
            "queueOffset": "0",
            "MSG_REGION": DEFAULT_REGION,
            "TRACE_ON": "true",
        }
        self._send_templates = _templates(self._send_fields)

    def message_count(self, topic: str | None = None) -> int:
        return self.messages if topic is None else self.by_topic.get(topic, 0)

    def handle(self, payload: bytes, decider: Decider, peer: str) -> Reply | None:
        if len(payload) < 4:
            raise RemoteProtocolError("frame too short")
        (word,) = _INT32.unpack_from(payload, 0)
        serialize_type, header_len = (word >> 24) & 0xFF, word & 0xFFFFFF
        header = payload[4 : 4 + header_len]
        if serialize_type == SerializeType.ROCKETMQ and header_len >= 13:
            (code,) = _INT16.unpack_from(header, 0)
            (opaque,) = _INT32.unpack_from(header, _BINARY_OPAQUE)
            (flag,) = _INT32.unpack_from(header, _BINARY_FLAG)
        elif serialize_type == SerializeType.JSON:
            code, opaque, flag = (_json_int(header, name) for name in ("code", "opaque", "flag"))
        else:
            raise RemoteProtocolError(f"unreadable header (type {serialize_type})")
        is_send = code in _SEND
        decision = decider(is_send)
        if is_send and decision.error_code is None:
            self._count(payload, 4 + header_len, code, _topic(header, serialize_type))
        if flag & FLAG_ONEWAY:
            return None
        answer_code = decision.error_code if is_send else None
        answer_code = answer_code or (decision.store_status if is_send else None)
        if answer_code is not None:
            frame = self._slow(answer_code, opaque, serialize_type, ok=decision.error_code is None)
        else:
            templates = self._send_templates if is_send else self._other_templates
            frame = templates[serialize_type].render(opaque, serialize_type)
        return Reply(frame, decision.delay)

    def _count(self, payload: bytes, body_start: int, code: int, topic: str) -> None:
        count = 1
        if code == RequestCode.SEND_BATCH_MESSAGE:
            count, pos, end = 0, body_start, len(payload)
            while pos + 4 <= end:
                (size,) = _INT32.unpack_from(payload, pos)
                if size <= 0:
                    break
                pos += size
                count += 1
        self.messages += count
        self.by_topic[topic] = self.by_topic.get(topic, 0) + count

    def _slow(self, code: int, opaque: int, serialize_type: int, *, ok: bool) -> bytes:
        trace = {"MSG_REGION": DEFAULT_REGION, "TRACE_ON": "true"}
        fields = dict(self._send_fields) if ok else trace
        command = RemotingCommand(
            code,
            opaque=opaque,
            flag=1,
            ext_fields=fields,
            remark=None if ok else f"[dev cluster] injected error {code}",
            language=0,
            serialize_type=SerializeType(serialize_type),
        )
        return encode_frame(command)


def _json_int(header: bytes, name: str) -> int:
    match = _JSON_FIELD[name].search(header)
    if match is None:
        raise RemoteProtocolError(f"JSON header without {name}")
    return int(match.group(1))


def _topic(header: bytes, serialize_type: int) -> str:
    if serialize_type == SerializeType.JSON:
        match = _JSON_TOPIC.search(header)
        return match.group(1).decode() if match else ""
    # ROCKETMQ: ext fields are (int16 key len, key, int32 value len, value)*; find "b".
    for key in (b"\x00\x01b", b"\x00\x05topic"):
        at = header.find(key)
        if at >= 0:
            start = at + len(key)
            (length,) = _INT32.unpack_from(header, start)
            return header[start + 4 : start + 4 + length].decode(errors="replace")
    return ""
