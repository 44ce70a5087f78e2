"""Pull-sink mode: a broker whose topics hold an endless backlog, answered as fast as
Python can (the consume benchmark's broker, as the send sink is the throughput one's).

Everything a consumer needs to start and run - heartbeats, GET_CONSUMER_LIST_BY_GROUP,
QUERY/UPDATE_CONSUMER_OFFSET, locks, send-back, pulls of ``%RETRY%`` topics - is the
ordinary dev broker's. Only PULL_MESSAGE of a created topic takes the short way: its
records come from a commit log built once per topic (``MAX_TRANSFER_COUNT`` real
records, :func:`~producer._remoting.store_record.encode_record`), copied and patched
with the pulled queue id, queue offsets and commit-log offsets. No subscription check,
no tag filter, no long poll: there is always more.
"""

from __future__ import annotations

import struct
from typing import Any

from producer._remoting.command import RemotingCommand
from producer._remoting.consumer_requests import FLAG_COMMIT_OFFSET
from producer._remoting.frame_decoder import decode_payload
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.properties import TAGS, UNIQ_KEY, WAIT
from producer._remoting.request_codes import RequestCode
from producer._remoting.store_record import StoreRecord, body_crc, encode_record
from producer._response_codes import ResponseCode
from producer.testing._broker import Broker
from producer.testing._consume_fields import MAX_TRANSFER_COUNT, int_or_zero
from producer.testing._server import Channel, Decider, ServerReply

__all__ = ["BACKLOG", "PullSinkBroker", "sink_records"]

BACKLOG = 1 << 40  # every queue's max offset: more than any run consumes
BODY_BYTES = 1024
_QUEUE_ID_AT = 12  # byte of QUEUEID in a record; QUEUEOFFSET and PHYSICALOFFSET at 20
_OFFSETS_AT = 20
_INT32 = struct.Struct(">i")
_OFFSETS = struct.Struct(">qq")


def sink_records(topic: str, store_host: str, count: int = MAX_TRANSFER_COUNT) -> bytes:
    """``count`` records of ``topic`` back to back (queue 0, offsets 0..count-1): what a
    4.9.4 broker holds for a 1 KiB message a Java producer sent with a tag."""
    records = []
    for n in range(count):
        body = bytes((n + i) % 251 for i in range(BODY_BYTES))
        key = f"7F00000100002A9F0000000000{n:06X}"
        record = StoreRecord(
            topic=topic,
            queue_id=0,
            queue_offset=n,
            commit_log_offset=0,
            body=body,
            properties={WAIT: "true", TAGS: "TagA", UNIQ_KEY: key},
            born_timestamp=1_700_000_000_000 + n,
            born_host="127.0.0.1:50000",
            store_timestamp=1_700_000_000_001 + n,
            store_host=store_host,
            body_crc=body_crc(body),
        )
        records.append(encode_record(record))
    return b"".join(records)


class PullSinkBroker(Broker):
    """A dev broker that answers pulls of its created topics from a patched template."""

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self._store_host = "127.0.0.1:10911"
        self._templates: dict[str, tuple[bytes, int]] = {}  # topic -> (records, size of one)
        self.pulled = 0

    def set_store_host(self, host: str, port: int) -> None:
        super().set_store_host(host, port)
        self._store_host = f"{host}:{port}"

    def handle(self, payload: bytes, decider: Decider, channel: Channel) -> ServerReply | None:
        request = decode_payload(payload)
        if request.code == RequestCode.PULL_MESSAGE and not request.is_response:
            topic = request.field("topic") or ""
            if not topic.startswith("%") and self.store.topic(topic) is not None:
                return ServerReply(encode_frame(self._pull(request, topic)), decider(False).delay)
        return super().handle(payload, decider, channel)

    def _template(self, topic: str) -> tuple[bytes, int]:
        found = self._templates.get(topic)
        if found is None:
            records = sink_records(topic, self._store_host)
            found = self._templates[topic] = (records, len(records) // MAX_TRANSFER_COUNT)
        return found

    def _pull(self, request: RemotingCommand, topic: str) -> RemotingCommand:
        group = request.field("consumerGroup") or ""
        queue_id = int_or_zero(request.field("queueId"))
        offset = int_or_zero(request.field("queueOffset"))
        count = max(1, min(int_or_zero(request.field("maxMsgNums")), MAX_TRANSFER_COUNT))
        if int_or_zero(request.field("sysFlag")) & FLAG_COMMIT_OFFSET:
            committed = int_or_zero(request.field("commitOffset"))
            self.consume.offsets.commit(group, topic, queue_id, committed)
        records, size = self._template(topic)
        body = bytearray(records[: count * size])
        queues = max(1, self.store.topic(topic).read_queue_nums)  # type: ignore[union-attr]
        for n in range(count):
            at = n * size
            _INT32.pack_into(body, at + _QUEUE_ID_AT, queue_id)
            physical = ((offset + n) * queues + queue_id) * size
            _OFFSETS.pack_into(body, at + _OFFSETS_AT, offset + n, physical)
        self.pulled += count
        fields = {
            "suggestWhichBrokerId": "0",
            "nextBeginOffset": str(offset + count),
            "minOffset": "0",
            "maxOffset": str(BACKLOG),
        }
        return request.make_response(
            ResponseCode.SUCCESS, ext_fields=fields, body=bytes(body), remark="FOUND"
        )
