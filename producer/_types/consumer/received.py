"""The message a listener receives (Java's ``MessageExt``). ``producer._consume.received``
builds them from a pull's records; what is rarely read is decoded here on first read,
with the wire core's functions."""

from __future__ import annotations

from collections.abc import Mapping

from producer._remoting.message_codec import make_offset_msg_id
from producer._remoting.properties import (
    KEYS,
    TAGS,
    TIMER_DELIVER_MS,
    TIMER_OUT_MS,
    UNIQ_KEY,
    decode_properties,
    split_keys,
)
from producer._types.message import MessageQueue
from producer.errors import UndecodableBodyError

__all__ = ["ReceivedMessage"]


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
