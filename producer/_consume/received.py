"""Builds the messages a listener receives (:class:`~producer.consumer.ReceivedMessage`,
in ``producer._types``): :func:`decode_pulled` straight from a pull's records."""

from __future__ import annotations

from producer._remoting.codecs import DEFAULT_CODECS, BodyCodecs
from producer._remoting.message_codec import COMPRESSED_FLAG, decompress_body
from producer._remoting.properties import RETRY_TOPIC
from producer._remoting.retry_topics import RETRY_PREFIX
from producer._remoting.store_record import StoreRecord, decode_with
from producer._types.consumer.received import ReceivedMessage
from producer._types.message import MessageQueue
from producer.errors import CodecUnavailableError, CorruptBodyError, UndecodableBodyError

__all__ = ["MAX_BODY_BYTES", "decode_pulled", "received_message"]

MAX_BODY_BYTES = 64 * 1024 * 1024  # an inflated body larger than this is refused


def decode_pulled(
    data: bytes | bytearray | memoryview,
    broker_name: str,
    *,
    max_body_bytes: int | None = MAX_BODY_BYTES,
    codecs: BodyCodecs = DEFAULT_CODECS,
) -> list[ReceivedMessage]:
    """The messages of a PULL_MESSAGE body from ``broker_name``, in order; a bad record
    raises :class:`~producer.errors.RemoteProtocolError`. Properties are parsed on
    first read.

    Compressed bodies are decoded by the codec their sysFlag names, to at most
    ``max_body_bytes`` (64 MiB unless told: pulled and popped bodies alike); one that
    does not decode (corrupt, too large, or its codec's library not installed) keeps its
    stored bytes and is marked ``undecodable``, never passed off as the message.
    """
    return decode_with(data, _Builder(broker_name, max_body_bytes, codecs))


class _Builder:
    """What :func:`decode_with` calls per record: the record as a message."""

    __slots__ = ("broker_name", "codecs", "max_body_bytes", "queue")

    def __init__(self, broker_name: str, max_body_bytes: int | None, codecs: BodyCodecs) -> None:
        self.broker_name, self.max_body_bytes, self.codecs = broker_name, max_body_bytes, codecs
        self.queue: MessageQueue | None = None  # a pull's records are all of one queue

    def __call__(
        self,
        topic: str,
        queue_id: int,
        queue_offset: int,
        commit_log_offset: int,
        body: bytes,
        properties: str,
        born_timestamp: int,
        born_host: str,
        store_timestamp: int,
        store_host: str,
        sys_flag: int,
        flag: int,
        reconsume_times: int,
        _prepared: int,
        body_crc: int,
    ) -> ReceivedMessage:
        queue = self.queue
        if queue is None or queue.queue_id != queue_id or queue.topic != topic:
            queue = self.queue = MessageQueue(topic, self.broker_name, queue_id)
        message = ReceivedMessage(
            topic, body, properties, "", "", queue, queue_offset, commit_log_offset,
            reconsume_times, born_timestamp, store_timestamp, born_host, store_host,
            flag, sys_flag, body_crc,
        )  # fmt: skip
        if sys_flag & COMPRESSED_FLAG:
            _inflate(message, self.max_body_bytes, self.codecs)
        _restore_topic(message)
        return message


def _restore_topic(message: ReceivedMessage) -> None:
    """A re-delivery from ``%RETRY%<group>`` shows the topic it was sent to (its
    ``RETRY_TOPIC``), as Java's ``resetRetryAndNamespace``; ``queue`` keeps the retry
    topic it was pulled from. Properties are read only for such a message."""
    if message.topic.startswith(RETRY_PREFIX):
        message.topic = message.properties.get(RETRY_TOPIC, message.topic)


def _inflate(message: ReceivedMessage, max_size: int | None, codecs: BodyCodecs) -> None:
    try:
        message.body = decompress_body(
            message.body, message.sys_flag, max_size=max_size, codecs=codecs
        )
    except (CodecUnavailableError, CorruptBodyError) as exc:
        message.undecodable = UndecodableBodyError(message.msg_id, exc)


def received_message(record: StoreRecord, broker_name: str, body: bytes) -> ReceivedMessage:
    """The listener's view of a record that did not come from a pull (a transaction
    check's), pulled from ``broker_name`` (``body`` inflated)."""
    message = ReceivedMessage(
        record.topic, body, record.properties, "", "",
        MessageQueue(record.topic, broker_name, record.queue_id),
        record.queue_offset, record.commit_log_offset, record.reconsume_times,
        record.born_timestamp, record.store_timestamp, record.born_host, record.store_host,
        record.flag, record.sys_flag, record.body_crc,
    )  # fmt: skip
    _restore_topic(message)
    return message
