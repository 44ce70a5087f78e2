"""A send request whose JSON header is encoded once, not once per attempt.

A SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE header has 12 ext fields; only the queue id
(``e``) and born timestamp (``g``) change between attempts, and the opaque and flag
between writes. So the header is kept as three pre-encoded pieces:

* ``head`` - from ``{"code":310,"extFields":{"a":...`` through ``"e":"``: the group and
  topic part, shared by every message of that topic (:class:`HeaderPrefixes`);
* ``middle`` - ``","f":...,"g":"``: this message's sys flag;
* ``tail`` - ``","h":...,"m":"false"``: its flag and properties;

and each write splices in the queue id, born time, flag and opaque. The bytes equal what
the generic encoder (:func:`producer._remoting.frame_decoder.encode_frame`) writes for the same
command: fastjson's key order, the ext fields in ``a``..``m`` order. A test holds them equal.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_encoder import frame_parts
from producer._remoting.request_codes import FLAG_ONEWAY, PROTOCOL_VERSION, RequestCode

_json = msgspec.json.Encoder()
_END = b',"language":"PYTHON","opaque":'
_CLOSE = b',"serializeTypeCurrentRPC":"JSON","version":%d}' % PROTOCOL_VERSION


def _string(value: str) -> bytes:
    return _json.encode(value)


class HeaderPrefixes:
    """The encoded ``head`` per (topic, batch) of one producer group."""

    __slots__ = ("_after_topic", "_before_topic", "_by_topic", "_limit")

    def __init__(
        self, group: str, default_topic: str, default_topic_queue_nums: int, limit: int = 4096
    ) -> None:
        self._before_topic = b',"extFields":{"a":' + _string(group) + b',"b":'
        self._after_topic = (
            b',"c":' + _string(default_topic) + b',"d":"%d' % default_topic_queue_nums
        )
        self._by_topic: dict[tuple[str, bool], bytes] = {}
        self._limit = limit

    def head(self, topic: str, batch: bool) -> bytes:
        key = (topic, batch)
        found = self._by_topic.get(key)
        if found is None:
            if len(self._by_topic) >= self._limit:  # endless generated topics: start over
                self._by_topic.clear()
            code = RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2
            found = b"".join(
                (
                    b'{"code":',
                    b"%d" % code,
                    self._before_topic,
                    _string(topic),
                    self._after_topic,
                    b'","e":"',
                )
            )
            self._by_topic[key] = found
        return found


_NOT_A_RETRY = b',"j":"0","k":"false","m":"'


def message_pieces(
    sys_flag: int,
    flag: int,
    properties: str,
    batch: bool,
    *,
    reconsume_times: int = 0,
    max_reconsume_times: int | None = None,
) -> tuple[bytes, bytes]:
    """``middle`` and ``tail`` of one message's header (see the module doc). Only a
    consumer's send to ``%RETRY%<group>`` carries a count (``j``) and a maximum (``l``)."""
    middle = b'","f":"%d","g":"' % sys_flag
    retry = _NOT_A_RETRY
    if reconsume_times or max_reconsume_times is not None:
        limit = b"" if max_reconsume_times is None else b'"l":"%d",' % max_reconsume_times
        retry = b',"j":"%d","k":"false",' % reconsume_times + limit + b'"m":"'
    tail = b'","h":"%d","i":%b%b%b"}' % (
        flag,
        _json.encode(properties),  # _string's encoding, one call fewer on every send
        retry,
        b"true" if batch else b"false",
    )
    return middle, tail


class SendRequest(msgspec.Struct):
    """One attempt's SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE, encoded on write. A struct
    (made in C): one is made for every attempt."""

    code: int
    head: bytes
    middle: bytes
    tail: bytes
    body: bytes
    queue_id: int
    born_timestamp: int
    flag: int = 0  # FLAG_ONEWAY for a oneway send
    opaque: int = 0  # set by the connection that writes it

    _EXTRA_TAIL: ClassVar[bytes] = b"}"  # a tail ends with the ``}`` that closes the ext fields

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)

    def add_ext_fields(self, fields: dict[str, str]) -> None:
        """Splice more ext fields into the tail, after ``m`` (their order is free: a
        broker reads a map, and a signature is computed over sorted names)."""
        extra = b"".join(
            b"," + _string(name) + b":" + _string(value) for name, value in fields.items()
        )
        self.tail = self.tail[: -len(self._EXTRA_TAIL)] + extra + self._EXTRA_TAIL

    _HEADER: ClassVar[bytes] = b'%b%d%b%d%b,"flag":%d%b%d%b'

    def frame_parts(self) -> list[bytes]:
        # The header in one %-format, no call per number nor a header() call: this runs
        # for every attempt.
        header = self._HEADER % (
            self.head,
            self.queue_id,
            self.middle,
            self.born_timestamp,
            self.tail,
            self.flag,
            _END,
            self.opaque,
            _CLOSE,
        )
        return frame_parts(header, self.body)

    def header(self) -> bytes:
        """The JSON header as written (after the frame's 8-byte prefix)."""
        return self.frame_parts()[0][8:]

    @property
    def ext_fields(self) -> dict[str, str]:
        """The ext fields as a dict (decoded from the header: for tests and diagnostics)."""
        fields: dict[str, str] = msgspec.json.decode(self.header())["extFields"]
        return fields

    def to_command(self) -> RemotingCommand:
        """The same request as a generic command (what a broker decodes)."""
        return RemotingCommand(
            self.code,
            opaque=self.opaque,
            flag=self.flag,
            ext_fields=self.ext_fields,
            body=self.body,
        )

    def __repr__(self) -> str:
        return (
            f"SendRequest(code={self.code} queue_id={self.queue_id} opaque={self.opaque} "
            f"body={len(self.body)}B)"
        )
