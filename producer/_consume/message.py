"""The message a listener receives (Java's ``MessageExt``), built from a pulled record."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from producer._remoting.codecs import DEFAULT_CODECS, BodyCodecs
from producer._remoting.message import MessageQueue
from producer._remoting.message_codec import make_offset_msg_id
from producer._remoting.properties import (
    KEYS,
    RETRY_TOPIC,
    TAGS,
    TIMER_DELIVER_MS,
    TIMER_OUT_MS,
    UNIQ_KEY,
    split_keys,
)
from producer._remoting.retry_topics import RETRY_PREFIX
from producer._remoting.store_record import StoreRecord
from producer.errors import CodecUnavailableError, CorruptBodyError, UndecodableBodyError

__all__ = ["ReceivedMessage", "decoded_message", "received_message"]


@dataclass(slots=True, eq=False)
class ReceivedMessage:
    """A consumed message.

    ``topic`` is the topic it was sent to: a re-delivery from ``%RETRY%<group>`` shows
    its original topic (as Java's ``resetRetryAndNamespace`` does), while ``queue`` is
    the queue it was actually pulled from. ``msg_id`` is the ``UNIQ_KEY`` (stable across
    retries and the DLQ: the key to de-duplicate by); ``offset_msg_id`` is this copy's
    broker id. ``reconsume_times`` counts earlier failed deliveries (0 the first time).
    ``undecodable`` is set (and ``body`` is the bytes as stored) when the body could not
    be decoded: such a message is never handed to a listener.
    """

    topic: str
    body: bytes
    properties: Mapping[str, str]
    msg_id: str
    offset_msg_id: str
    queue: MessageQueue
    queue_offset: int
    commit_log_offset: int
    reconsume_times: int
    born_timestamp: int
    store_timestamp: int
    born_host: str
    store_host: str
    flag: int = 0
    sys_flag: int = 0
    body_crc: int = 0
    consume_start_ms: float = field(default=0.0, repr=False)
    undecodable: UndecodableBodyError | None = field(default=None, repr=False)

    @property
    def tags(self) -> str | None:
        return self.properties.get(TAGS)

    @property
    def keys(self) -> list[str]:
        return split_keys(self.properties.get(KEYS, ""))

    @property
    def deliver_at_ms(self) -> int | None:
        """When a timed message (5.x timer) was to be delivered, epoch ms: the time its
        producer asked (``TIMER_DELIVER_MS``), else the broker's slot (``TIMER_OUT_MS``,
        for a ``delay_ms`` one); ``None`` for a message that was not timed."""
        for name in (TIMER_DELIVER_MS, TIMER_OUT_MS):
            value = self.properties.get(name)
            if value is not None and value.isdigit():
                return int(value)
        return None

    def __repr__(self) -> str:
        return (
            f"ReceivedMessage(topic={self.topic!r}, msg_id={self.msg_id}, queue={self.queue}, "
            f"offset={self.queue_offset}, reconsume_times={self.reconsume_times}, "
            f"body={len(self.body)}B)"
        )


def received_message(record: StoreRecord, broker_name: str, body: bytes) -> ReceivedMessage:
    """The listener's view of ``record`` pulled from ``broker_name`` (``body`` inflated)."""
    host, _, port = record.store_host.rpartition(":")
    offset_id = make_offset_msg_id(host.strip("[]"), int(port), record.commit_log_offset)
    properties = record.properties
    topic = record.topic
    if topic.startswith(RETRY_PREFIX):
        topic = properties.get(RETRY_TOPIC, topic)
    return ReceivedMessage(
        topic=topic,
        body=body,
        properties=properties,
        msg_id=properties.get(UNIQ_KEY) or offset_id,
        offset_msg_id=offset_id,
        queue=MessageQueue(record.topic, broker_name, record.queue_id),
        queue_offset=record.queue_offset,
        commit_log_offset=record.commit_log_offset,
        reconsume_times=record.reconsume_times,
        born_timestamp=record.born_timestamp,
        store_timestamp=record.store_timestamp,
        born_host=record.born_host,
        store_host=record.store_host,
        flag=record.flag,
        sys_flag=record.sys_flag,
        body_crc=record.body_crc,
    )


def decoded_message(
    record: StoreRecord, broker_name: str, max_size: int | None, codecs: BodyCodecs = DEFAULT_CODECS
) -> ReceivedMessage:
    """:func:`received_message` with the body decoded by the codec its sysFlag names; a
    body that does not decode (corrupt, over ``max_size``, or its codec's library not
    installed) keeps its stored bytes and is marked ``undecodable``, never passed off as
    the message."""
    try:
        return received_message(record, broker_name, record.inflated_body(max_size, codecs))
    except (CodecUnavailableError, CorruptBodyError) as exc:
        message = received_message(record, broker_name, record.body)
        message.undecodable = UndecodableBodyError(message.msg_id, exc)
        return message
