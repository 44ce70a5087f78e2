"""The message a listener receives (Java's ``MessageExt``), and :func:`decode_pulled`, which
builds them straight from a pull's records."""

from __future__ import annotations

from collections.abc import Mapping

from producer._remoting.codecs import DEFAULT_CODECS, BodyCodecs
from producer._remoting.message_codec import (
    COMPRESSED_FLAG,
    decompress_body,
    make_offset_msg_id,
)
from producer._remoting.properties import (
    KEYS,
    RETRY_TOPIC,
    TAGS,
    TIMER_DELIVER_MS,
    TIMER_OUT_MS,
    UNIQ_KEY,
    decode_properties,
    split_keys,
)
from producer._remoting.retry_topics import RETRY_PREFIX
from producer._remoting.store_record import StoreRecord, decode_with
from producer._types.message import MessageQueue
from producer.errors import CodecUnavailableError, CorruptBodyError, UndecodableBodyError

__all__ = ["MAX_BODY_BYTES", "ReceivedMessage", "decode_pulled", "received_message"]

MAX_BODY_BYTES = 64 * 1024 * 1024  # an inflated body larger than this is refused


class ReceivedMessage:
    """A consumed message.

    ``topic`` is the topic it was sent to: a re-delivery from ``%RETRY%<group>`` shows
    its original topic (as Java's ``resetRetryAndNamespace`` does), while ``queue`` is
    the queue it was actually pulled from. ``msg_id`` is the ``UNIQ_KEY`` (stable across
    retries and the DLQ: the key to de-duplicate by); ``offset_msg_id`` is this copy's
    broker id. ``reconsume_times`` counts earlier failed deliveries (0 the first time).
    ``undecodable`` is set (and ``body`` is the bytes as stored) when the body could not
    be decoded: such a message is never handed to a listener.

    Most listeners read the body only, so what is rarely read is worked out on the first
    read: ``properties`` may be given as their wire text, ``msg_id`` and
    ``offset_msg_id`` as ``""`` (the ``UNIQ_KEY``, else the offset id; the offset id from
    the store host and commit-log offset).
    """

    __slots__ = (
        "_msg_id",
        "_offset_msg_id",
        "_properties",
        "body",
        "body_crc",
        "born_host",
        "born_timestamp",
        "commit_log_offset",
        "consume_start_ms",
        "flag",
        "queue",
        "queue_offset",
        "reconsume_times",
        "store_host",
        "store_timestamp",
        "sys_flag",
        "topic",
        "undecodable",
    )

    def __init__(
        self,
        topic: str,
        body: bytes,
        properties: Mapping[str, str] | str,
        msg_id: str,
        offset_msg_id: str,
        queue: MessageQueue,
        queue_offset: int,
        commit_log_offset: int,
        reconsume_times: int,
        born_timestamp: int,
        store_timestamp: int,
        born_host: str,
        store_host: str,
        flag: int = 0,
        sys_flag: int = 0,
        body_crc: int = 0,
    ) -> None:
        self.topic = topic
        self.body = body
        self._properties = properties
        self._msg_id = msg_id
        self._offset_msg_id = offset_msg_id
        self.queue = queue
        self.queue_offset = queue_offset
        self.commit_log_offset = commit_log_offset
        self.reconsume_times = reconsume_times
        self.born_timestamp = born_timestamp
        self.store_timestamp = store_timestamp
        self.born_host = born_host
        self.store_host = store_host
        self.flag = flag
        self.sys_flag = sys_flag
        self.body_crc = body_crc
        self.consume_start_ms = 0.0
        self.undecodable: UndecodableBodyError | None = None

    @property
    def properties(self) -> Mapping[str, str]:
        """The message's properties (user and system), decoded on first use."""
        props = self._properties
        if isinstance(props, str):
            props = self._properties = decode_properties(props)
        return props

    @property
    def msg_id(self) -> str:
        """The producer's id (``UNIQ_KEY``), else the offset message id, as Java's ``getMsgId``."""
        if not self._msg_id:
            self._msg_id = self.properties.get(UNIQ_KEY) or self.offset_msg_id
        return self._msg_id

    @property
    def offset_msg_id(self) -> str:
        """The broker's id of this stored copy: store host, port and commit-log offset."""
        if not self._offset_msg_id:
            host, _, port = self.store_host.rpartition(":")
            self._offset_msg_id = make_offset_msg_id(
                host.strip("[]"), int(port), self.commit_log_offset
            )
        return self._offset_msg_id

    @property
    def tags(self) -> str | None:
        """The message's tag (``TAGS``), or None."""
        return self.properties.get(TAGS)

    @property
    def keys(self) -> list[str]:
        """The message's keys (``KEYS``, split on spaces)."""
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
