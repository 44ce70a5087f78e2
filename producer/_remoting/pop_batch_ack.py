"""BATCH_ACK_MESSAGE (200151, in 5.2.0 brokers): many acks in one request (no I/O).

The body is JSON: per check point ``c`` group, ``t`` topic (the normal one), ``r`` retry
flag, ``so`` start offset, ``q`` queue, ``rq`` revive queue, ``pt`` pop time, ``it`` invisible
time, and ``b``: the base64 of ``java.util.BitSet.toByteArray()`` whose bit i acks offset
``so + i`` (``AckMessageProcessor``, ``BatchAckMessageRequestBody``; the recorded 5.2.0
session's frames 21 and 81).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable

import msgspec

from producer._remoting.command import RemotingCommand
from producer._remoting.pop_requests import ReceiptHandle
from producer._remoting.request_codes import RequestCode
from producer.errors import RemoteProtocolError

__all__ = ["batch_ack_request", "bitset_bytes", "bitset_offsets", "decode_batch_ack"]


def bitset_bytes(offsets: Iterable[int]) -> bytes:
    """``java.util.BitSet.toByteArray()`` of the given bit indexes (little-endian)."""
    value = 0
    for offset in offsets:
        if offset < 0:
            raise ValueError(f"bit index {offset} < 0")
        value |= 1 << offset
    return value.to_bytes((value.bit_length() + 7) // 8, "little")


def bitset_offsets(data: bytes) -> list[int]:
    """The set bits of a ``BitSet.toByteArray()``."""
    value = int.from_bytes(data, "little")
    return [i for i in range(value.bit_length()) if value >> i & 1]


class _BatchAck(msgspec.Struct):
    b: str
    c: str
    it: int
    pt: int
    q: int
    r: str
    rq: int
    so: int
    t: str


class _BatchAckBody(msgspec.Struct):
    acks: list[_BatchAck]
    brokerName: str  # noqa: N815 - the wire name


def batch_ack_request(group: str, topic: str, handles: Iterable[ReceiptHandle]) -> RemotingCommand:
    """BATCH_ACK_MESSAGE: handles of one broker merged per check point (retry flag,
    queue, ckQueueOffset, popTime), each a bit set of offsets from its start."""
    merged: dict[tuple[bool, int, int, int], list[ReceiptHandle]] = {}
    for handle in handles:
        key = (handle.retry, handle.queue_id, handle.ck_queue_offset, handle.pop_time)
        merged.setdefault(key, []).append(handle)
    acks = []
    brokers = set()
    for (retry, queue_id, start, pop_time), same in merged.items():
        first = same[0]
        brokers.add(first.broker_name)
        bits = bitset_bytes(h.queue_offset - start for h in same)
        acks.append(
            _BatchAck(
                b=base64.b64encode(bits).decode(),
                c=group,
                it=first.invisible_time,
                pt=pop_time,
                q=queue_id,
                r=str(int(retry)),
                rq=first.revive_qid,
                so=start,
                t=topic,
            )
        )
    if len(brokers) != 1:
        raise ValueError(f"a batch ack goes to one broker, got {sorted(brokers)}")
    body = msgspec.json.encode(_BatchAckBody(acks, brokers.pop()))
    return RemotingCommand(RequestCode.BATCH_ACK_MESSAGE, body=body)


def decode_batch_ack(body: bytes) -> tuple[str, list[tuple[ReceiptHandle, str, str]]]:
    """A BATCH_ACK_MESSAGE body as (broker name, [(handle, group, topic)]) per offset."""
    try:
        data = msgspec.json.decode(body, type=_BatchAckBody)
    except msgspec.DecodeError as exc:
        raise RemoteProtocolError(f"batch ack body: {exc}") from None
    found = []
    for ack in data.acks:
        for bit in bitset_offsets(base64.b64decode(ack.b)):
            handle = ReceiptHandle(
                ack.so, ack.pt, ack.it, ack.rq, ack.r == "1", data.brokerName, ack.q, ack.so + bit
            )
            found.append((handle, ack.c, ack.t))
    return data.brokerName, found
