"""Sink mode: a broker that answers sends as fast as Python can, storing nothing.

Per request it reads only the header's code, opaque, flag and (for counting) topic, and
answers with a pre-encoded SUCCESS frame in the request's serialize type with the opaque
patched in. Every answer says queue 0, offset 0 and the same offset message id; other
request codes get a bare SUCCESS (with ``offset=0`` for GET_MAX_OFFSET probes). Faults
still apply; their (rare) answers take the ordinary encoder.
"""

from __future__ import annotations

import struct

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_encoder import encode_frame, encode_header
from producer._remoting.message_codec import make_offset_msg_id
from producer._remoting.request_codes import FLAG_ONEWAY, RequestCode, SerializeType
from producer._remoting.send_header import DEFAULT_REGION
from producer.errors import RemoteProtocolError
from producer.testing._faults import FaultDecision
from producer.testing._server import Channel, Decider, ServerReply

__all__ = ["SinkBroker"]

_INT32 = struct.Struct(">i")
_PREFIX = struct.Struct(">ii")
_BINARY_OPAQUE = 5  # code int16, language int8, version int16, then opaque
_PLACEHOLDER = 1987654321
_SEND = frozenset({10, 310, 320})  # SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE
_BATCH = int(RequestCode.SEND_BATCH_MESSAGE)
_JSON, _ROCKETMQ = int(SerializeType.JSON), int(SerializeType.ROCKETMQ)
_BINARY_FIXED = struct.Struct(">hbhii")  # code, language, version, opaque, flag


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

    def handle(self, payload: bytes, decider: Decider, channel: Channel) -> ServerReply | None:
        if len(payload) < 4:
            raise RemoteProtocolError("frame too short")
        (word,) = _INT32.unpack_from(payload, 0)
        serialize_type, header_len = word >> 24, word & 0xFFFFFF
        if serialize_type == _ROCKETMQ and header_len >= 13:
            code, _, _, opaque, flag = _BINARY_FIXED.unpack_from(payload, 4)
        elif serialize_type == _JSON:
            header = payload[4 : 4 + header_len]
            code = _json_int(header, b'"code":')
            opaque = _json_int(header, b'"opaque":')
            flag = _json_int(header, b'"flag":')
        else:
            raise RemoteProtocolError(f"unreadable header (type {serialize_type})")
        is_send = code in _SEND
        decision = decider(is_send)
        if is_send and decision.error_code is None:
            self._count(payload, header_len, code, serialize_type)
        if flag & FLAG_ONEWAY:
            return None
        if is_send and (decision.error_code or decision.store_status):
            frame = self._slow(decision, opaque, serialize_type)
        else:
            templates = self._send_templates if is_send else self._other_templates
            frame = templates[serialize_type].render(opaque, serialize_type)
        return ServerReply(frame, decision.delay)

    def _count(self, payload: bytes, header_len: int, code: int, serialize_type: int) -> None:
        count = 1
        if code == _BATCH:
            count, pos, end = 0, 4 + header_len, len(payload)
            while pos + 4 <= end:
                (size,) = _INT32.unpack_from(payload, pos)
                if size <= 0:
                    break
                pos += size
                count += 1
        self.messages += count
        topic = _topic(payload, header_len, serialize_type)
        self.by_topic[topic] = self.by_topic.get(topic, 0) + count

    def _slow(self, decision: FaultDecision, opaque: int, serialize_type: int) -> bytes:
        """An injected error, or a non-OK store status, through the ordinary encoder."""
        ok = decision.error_code is None
        code = decision.store_status if ok else decision.error_code
        trace = {"MSG_REGION": DEFAULT_REGION, "TRACE_ON": "true"}
        command = RemotingCommand(
            code or 0,
            opaque=opaque,
            flag=1,
            ext_fields=dict(self._send_fields) if ok else trace,
            remark=None if ok else f"[dev cluster] injected error {code}",
            language=0,
            serialize_type=SerializeType(serialize_type),
        )
        return encode_frame(command)


def _json_int(header: bytes, key: bytes) -> int:
    at = header.find(key)
    if at < 0:
        raise RemoteProtocolError(f"JSON header without {key.decode()}")
    start = at + len(key)
    digits = header[start : start + 12].partition(b",")[0].partition(b"}")[0]
    try:
        return int(digits)
    except ValueError:
        raise RemoteProtocolError(f"JSON header {key.decode()} is not a number") from None


def _topic(payload: bytes, header_len: int, serialize_type: int) -> str:
    """The send's topic (``b`` or, for SEND_MESSAGE, ``topic``); names hold no quotes."""
    end = 4 + header_len
    if serialize_type == _JSON:
        for key in (b'"b":"', b'"topic":"'):
            at = payload.find(key, 4, end)
            if at >= 0:
                start = at + len(key)
                return payload[start : payload.find(b'"', start, end)].decode()
        return ""
    # ROCKETMQ ext fields: (int16 key length, key, int32 value length, value)*.
    for key in (b"\x00\x01b", b"\x00\x05topic"):
        at = payload.find(key, 4, end)
        if at >= 0:
            start = at + len(key)
            (length,) = _INT32.unpack_from(payload, start)
            return payload[start + 4 : start + 4 + length].decode(errors="replace")
    return ""
