"""Request-reply on the wire, as the 4.9.4 Java client and broker speak it (no I/O).

A request is an ordinary SEND_MESSAGE_V2 whose properties carry ``CORRELATION_ID`` (a
fresh UUID), ``REPLY_TO_CLIENT`` (the requester's client id) and ``TTL`` (its timeout in
ms); it has no ``MSG_TYPE`` (golden a_request_reply #58, ``DefaultMQProducerImpl.
prepareSendRequest``). The broker that stores it adds ``CLUSTER``. The replier's
``create_reply`` (Java ``MessageUtil.createReplyMessage``) names the reply topic
``<CLUSTER>_REPLY_TOPIC`` and copies the three; the reply goes out as
SEND_REPLY_MESSAGE_V2 (325) with exactly ``MSG_TYPE=reply``, ``REPLY_TO_CLIENT``,
``UNIQ_KEY``, ``TTL`` and ``CORRELATION_ID`` - no ``WAIT``, ``KEYS`` or ``TAGS`` (#64).
The broker pushes it to the requester as PUSH_REPLY_MESSAGE_TO_CLIENT (326) with
``PUSH_REPLY_TIME`` added (#65); the requester matches it by ``CORRELATION_ID``
(``ClientRemotingProcessor.receiveReplyMessage``, ``RequestFutureHolder``).

Java keeps properties in a ``HashMap`` and writes them in its iteration order; so does
this module (``java_hash_map.java_hash_order``), which is why our frames equal the
recorded ones. The order needs Java's ``String.hashCode``: callers pass it
(``string_hash``; its one definition is ``latency_fault.java_string_hash``), so the wire
core imports no router.

:class:`PendingRequests` is the requester's table of requests awaiting a reply, keyed by
``CORRELATION_ID``, with one heap of deadlines that a single sweeper drains (no timer per
request; Java scans its table once a second, ``RequestFutureHolder``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from typing import Generic, Protocol, TypeVar

import msgspec

from producer._remoting.command import RemotingCommand
from producer._remoting.java_hash_map import java_hash_order
from producer._remoting.message_codec import decompress_body
from producer._remoting.properties import (
    CLUSTER,
    CORRELATION_ID,
    MSG_TYPE,
    REPLY_TO_CLIENT,
    TTL,
    UNIQ_KEY,
    decode_properties,
    encode_properties,
)
from producer._remoting.request_codes import RequestCode
from producer._remoting.send_header import DEFAULT_TOPIC, DEFAULT_TOPIC_QUEUE_NUMS
from producer._types.reply import Reply
from producer.errors import NotARequestError, RemoteProtocolError

REPLY_TOPIC_POSTFIX = "REPLY_TOPIC"  # MixAll.REPLY_TOPIC_POSTFIX
REPLY_MESSAGE_FLAG = "reply"  # MixAll.REPLY_MESSAGE_FLAG, the value of MSG_TYPE


def reply_topic(cluster: str) -> str:
    """The topic replies of ``cluster`` go to (the broker creates it at start)."""
    return f"{cluster}_{REPLY_TOPIC_POSTFIX}"


StringHash = Callable[[str], int]  # Java's String.hashCode


def encode_java_map(properties: Mapping[str, str], string_hash: StringHash) -> str:
    """``MessageDecoder.messageProperties2String`` of a HashMap filled in this order."""
    order = java_hash_order(list(properties), string_hash)
    return encode_properties((name, properties[name]) for name in order)


def request_properties(
    encoded: str, correlation_id: str, client_id: str, ttl_ms: int, string_hash: StringHash
) -> str:
    """A send's properties turned into a request's: the three request properties put
    last, the whole in HashMap order (golden #58)."""
    properties = decode_properties(encoded)
    properties[CORRELATION_ID] = correlation_id
    properties[REPLY_TO_CLIENT] = client_id
    properties[TTL] = str(ttl_ms)
    return encode_java_map(properties, string_hash)


class Request(Protocol):
    """What ``create_reply`` reads of a received message."""

    @property
    def properties(self) -> Mapping[str, str]: ...


def reply_properties(reply: Reply, uniq_key: str, string_hash: StringHash) -> str:
    """The reply's properties as ``createReplyMessage`` + ``send`` leave them (#64)."""
    return encode_java_map(
        {
            MSG_TYPE: REPLY_MESSAGE_FLAG,
            CORRELATION_ID: reply.correlation_id,
            REPLY_TO_CLIENT: reply.reply_to_client,
            TTL: reply.ttl,
            UNIQ_KEY: uniq_key,
        },
        string_hash,
    )


def create_reply(request: Request, body: bytes) -> Reply:
    """The reply to ``request`` (a message a consumer received), carrying ``body``.

    Java's ``MessageUtil.createReplyMessage``. Raises :class:`NotARequestError` when
    ``request`` is not a request as the broker delivers it."""
    if not isinstance(body, bytes | bytearray | memoryview):
        raise NotARequestError(f"a reply body must be bytes, got {type(body).__name__}")
    properties = getattr(request, "properties", None)
    if not isinstance(properties, Mapping):
        raise NotARequestError(
            f"create_reply() needs a received message, got {type(request).__name__}: pass the "
            "message your listener was given"
        )
    missing = [n for n in (CLUSTER, CORRELATION_ID, REPLY_TO_CLIENT) if not properties.get(n)]
    if missing:
        raise NotARequestError(
            f"create_reply() was given a message that is not a request (no "
            f"{', '.join(missing)}): only a message sent with Producer.request() (or Java's "
            "request()) and received from the broker can be answered; send other answers "
            "with Producer.send()"
        )
    return Reply(
        reply_topic(properties[CLUSTER]),
        bytes(body),
        properties[CORRELATION_ID],
        properties[REPLY_TO_CLIENT],
        properties.get(TTL, ""),
    )


def reply_send_command(
    group: str,
    reply: Reply,
    uniq_key: str,
    queue_id: int,
    born_timestamp: int,
    string_hash: StringHash,
) -> RemotingCommand:
    """SEND_REPLY_MESSAGE_V2 (325): the one-letter header of 310, fields ``a``..``m``."""
    fields = {
        "a": group,
        "b": reply.topic,
        "c": DEFAULT_TOPIC,
        "d": str(DEFAULT_TOPIC_QUEUE_NUMS),
        "e": str(queue_id),
        "f": "0",
        "g": str(born_timestamp),
        "h": "0",
        "i": reply_properties(reply, uniq_key, string_hash),
        "j": "0",
        "k": "false",
        "m": "false",
    }
    return RemotingCommand(RequestCode.SEND_REPLY_MESSAGE_V2, ext_fields=fields, body=reply.body)


class PushedReply(msgspec.Struct, frozen=True):
    """A PUSH_REPLY_MESSAGE_TO_CLIENT as the requester reads it."""

    correlation_id: str
    topic: str
    body: bytes
    properties: dict[str, str]
    queue_id: int
    flag: int
    sys_flag: int
    born_timestamp: int
    store_timestamp: int
    born_host: str
    store_host: str
    reconsume_times: int


def parse_pushed_reply(command: RemotingCommand) -> PushedReply:
    """The reply in a broker's push; bad fields raise :class:`RemoteProtocolError`."""
    fields = command.ext_fields or {}
    properties = decode_properties(fields.get("properties", ""))
    correlation_id = properties.get(CORRELATION_ID)
    if not correlation_id:
        raise RemoteProtocolError("a pushed reply without CORRELATION_ID")
    try:
        sys_flag = int(fields.get("sysFlag", "0"))
        body = decompress_body(command.body or b"", sys_flag)
        return PushedReply(
            correlation_id,
            fields.get("topic", ""),
            body,
            properties,
            int(fields.get("queueId", "0")),
            int(fields.get("flag", "0")),
            sys_flag,
            int(fields.get("bornTimestamp", "0")),
            int(fields.get("storeTimestamp", "0")),
            fields.get("bornHost", ""),
            fields.get("storeHost", ""),
            int(fields.get("reconsumeTimes", "0")),
        )
    except ValueError as exc:
        raise RemoteProtocolError(f"a pushed reply with a bad field: {exc}") from None


W = TypeVar("W")


class PendingRequests(Generic[W]):
    """Requests awaiting their reply: ``CORRELATION_ID`` -> (deadline, waiter).

    ``add`` when the request is about to be sent; ``settle`` when its reply arrives (or
    it failed); ``expired(now)`` hands the sweeper what ran out. Deadlines sit in one
    heap; entries settled early are skipped when they reach its top."""

    def __init__(self) -> None:
        self._waiters: dict[str, tuple[float, W]] = {}
        self._deadlines: list[tuple[float, str]] = []

    def __len__(self) -> int:
        return len(self._waiters)

    def add(self, correlation_id: str, deadline_ms: float, waiter: W) -> None:
        if correlation_id in self._waiters:
            raise ValueError(f"CORRELATION_ID {correlation_id} is already pending")
        self._waiters[correlation_id] = (deadline_ms, waiter)
        heapq.heappush(self._deadlines, (deadline_ms, correlation_id))

    def settle(self, correlation_id: str) -> W | None:
        """The waiter of ``correlation_id``, removed; None if unknown or already gone."""
        entry = self._waiters.pop(correlation_id, None)
        return None if entry is None else entry[1]

    def next_deadline(self) -> float | None:
        """The earliest live deadline (stale heap tops are dropped on the way)."""
        heap = self._deadlines
        while heap:
            deadline, correlation_id = heap[0]
            entry = self._waiters.get(correlation_id)
            if entry is not None and entry[0] == deadline:
                return deadline
            heapq.heappop(heap)
        return None

    def expired(self, now_ms: float) -> list[tuple[str, W]]:
        """Every request whose deadline is at or before ``now_ms``, removed."""
        out: list[tuple[str, W]] = []
        while (deadline := self.next_deadline()) is not None and deadline <= now_ms:
            _, correlation_id = heapq.heappop(self._deadlines)
            out.append((correlation_id, self._waiters.pop(correlation_id)[1]))
        return out

    def drain(self) -> list[W]:
        """Every waiter, removed (the producer is closing)."""
        waiters = [waiter for _, waiter in self._waiters.values()]
        self._waiters.clear()
        self._deadlines.clear()
        return waiters

    def __repr__(self) -> str:
        return f"PendingRequests({len(self._waiters)} pending)"
