"""Builders for the requests a producer sends, and parsers for their non-send answers.

Every builder returns a :class:`RemotingCommand` with a JSON header and ``opaque`` 0: the
connection assigns the opaque when it writes the frame, so a re-sent request gets a new
one.

Sends are split in two so that a retry is cheap (DESIGN S7, A4):

* :meth:`SendRequestFactory.prepare` / :meth:`~SendRequestFactory.prepare_batch` do the
  per-message work once - validation, properties with the ``UNIQ_KEY``, compression,
  the batch body, every header field that does not depend on the queue;
* :func:`build_send_request` makes the request for one queue and born timestamp, its
  header pre-encoded but for those two fields (:mod:`.send_request`). The ``UNIQ_KEY``
  and the compressed body are kept across retries, as Java keeps them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from producer._remoting.codecs import Codec
from producer._remoting.command import RemotingCommand
from producer._remoting.frame_encoder import json_dumps
from producer._remoting.message_codec import (
    DEFAULT_COMPRESS_LEVEL,
    DEFAULT_COMPRESS_THRESHOLD,
    BatchItem,
    compress_body,
    encode_batch,
)
from producer._remoting.namespace import wrap
from producer._remoting.preencoded_send import HeaderPrefixes, SendRequest, message_pieces
from producer._remoting.properties import (
    DELAY,
    INSTANCE_ID,
    KEYS,
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    TAGS,
    TIMER_DELAY_MS,
    TIMER_DELIVER_MS,
    UNIQ_KEY,
    WAIT,
    join_keys,
)
from producer._remoting.request_codes import FLAG_ONEWAY, RequestCode
from producer._remoting.route import TopicRouteData, parse_route_data
from producer._remoting.send_header import (
    DEFAULT_TOPIC,
    DEFAULT_TOPIC_QUEUE_NUMS,
    int_str,
    parse_int,
)
from producer._remoting.validation import (
    DEFAULT_MAX_MESSAGE_SIZE,
    check_batch_size,
    check_fields,
    check_group,
    check_properties_size,
    check_send_topic,
    validate_batch,
)
from producer._response_codes import ResponseCode
from producer._types.message import Message, MessageQueue
from producer.errors import BrokerError, LocalProtocolError, RemoteProtocolError

CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"  # MixAll; Java heartbeats it too

# -- name server ----------------------------------------------------------------------------


def route_request(topic: str) -> RemotingCommand:
    """GET_ROUTEINFO_BY_TOPIC; version 401 and the flag both ask for standard JSON."""
    fields = {"topic": topic, "acceptStandardJsonOnly": "true"}
    return RemotingCommand(RequestCode.GET_ROUTEINFO_BY_TOPIC, ext_fields=fields)


def parse_route_response(response: RemotingCommand) -> TopicRouteData:
    """The route in a response; an error code (17 TOPIC_NOT_EXIST, ...) raises BrokerError."""
    if response.code != ResponseCode.SUCCESS:
        raise BrokerError.for_code(response.code, response.remark)
    if not response.body:
        raise RemoteProtocolError("route response has no body")
    return parse_route_data(response.body)


# -- broker housekeeping --------------------------------------------------------------------


def heartbeat_request(
    client_id: str, producer_groups: Iterable[str], *, inner_producer: bool = True
) -> RemotingCommand:
    """HEART_BEAT with the producer groups (Java always adds ``CLIENT_INNER_PRODUCER``)."""
    groups = [CLIENT_INNER_PRODUCER_GROUP] if inner_producer else []
    groups += (g for g in producer_groups if g not in groups)
    body = {
        "clientID": client_id,
        "consumerDataSet": [],
        "producerDataSet": [{"groupName": g} for g in groups],
    }
    return RemotingCommand(RequestCode.HEART_BEAT, body=json_dumps(body))


def unregister_client_request(client_id: str, producer_group: str) -> RemotingCommand:
    """UNREGISTER_CLIENT for one producer group (``consumerGroup`` is null, so absent)."""
    fields = {"producerGroup": producer_group, "clientID": client_id}
    return RemotingCommand(RequestCode.UNREGISTER_CLIENT, ext_fields=fields)


def max_offset_request(topic: str, queue_id: int) -> RemotingCommand:
    """GET_MAX_OFFSET: a cheap request that probes a broker."""
    fields = {"topic": topic, "queueId": int_str(queue_id)}
    return RemotingCommand(RequestCode.GET_MAX_OFFSET, ext_fields=fields)


def parse_max_offset_response(response: RemotingCommand) -> int:
    if response.code != ResponseCode.SUCCESS:
        raise BrokerError.for_code(response.code, response.remark)
    return parse_int(response.ext_fields or {}, "offset", wide=True)


# -- sends ----------------------------------------------------------------------------------


class PreparedMessage(msgspec.Struct, frozen=True):
    """A message (or batch) encoded once, ready to be sent to any queue of its topic.

    ``msg_id`` is the ``UNIQ_KEY`` (comma-joined for a batch, as Java reports it).
    ``head`` is its topic's pre-encoded header prefix; the rest of the header is encoded
    per attempt (:mod:`producer._remoting.preencoded_send`), so a message that joins a
    transparent batch never pays for a header of its own.
    """

    topic: str
    body: bytes
    sys_flag: int
    flag: int
    properties: str
    msg_id: str
    is_batch: bool
    head: bytes

    @property
    def request_code(self) -> RequestCode:
        return RequestCode.SEND_BATCH_MESSAGE if self.is_batch else RequestCode.SEND_MESSAGE_V2

    def __repr__(self) -> str:
        kind = "batch" if self.is_batch else "message"
        return (
            f"PreparedMessage({kind} topic={self.topic!r} msg_id={self.msg_id} "
            f"body={len(self.body)}B sys_flag={self.sys_flag})"
        )


def build_send_request(
    prepared: PreparedMessage, queue: MessageQueue, born_timestamp: int, *, oneway: bool = False
) -> SendRequest:
    """SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE of ``prepared`` to ``queue``.

    ``born_timestamp`` is the wall-clock ms of this attempt (header ``g``).
    """
    if queue.topic != prepared.topic:
        raise LocalProtocolError(f"queue {queue} is not of topic {prepared.topic!r}")
    batch = prepared.is_batch  # request_code's test, without the property's call
    middle, tail = message_pieces(prepared.sys_flag, prepared.flag, prepared.properties, batch)
    return SendRequest(
        RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2,
        prepared.head,
        middle,
        tail,
        prepared.body,
        queue.queue_id,
        born_timestamp,
        FLAG_ONEWAY if oneway else 0,
    )


_INNER_PRODUCER_HEADS = HeaderPrefixes(
    CLIENT_INNER_PRODUCER_GROUP, DEFAULT_TOPIC, DEFAULT_TOPIC_QUEUE_NUMS
)


def build_retry_send_request(
    queue: MessageQueue,
    *,
    body: bytes,
    flag: int,
    properties: str,
    born_timestamp: int,
    reconsume_times: int,
    max_reconsume_times: int,
    sys_flag: int = 0,
) -> SendRequest:
    """A consumer's SEND_MESSAGE_V2 of a copy to ``%RETRY%<group>`` (its send-back
    fallback, and orderly's dead letter), as Java's inner producer sends it: the same
    encoder as every send, with the count (``j``) and maximum (``l``) set."""
    middle, tail = message_pieces(
        sys_flag,
        flag,
        properties,
        False,
        reconsume_times=reconsume_times,
        max_reconsume_times=max_reconsume_times,
    )
    head = _INNER_PRODUCER_HEADS.head(queue.topic, False)
    code = RequestCode.SEND_MESSAGE_V2
    return SendRequest(code, head, middle, tail, body, queue.queue_id, born_timestamp)


def encode_message_properties(message: Message, uniq_key: str | None) -> str:
    """The properties a Java producer would send for ``message``.

    Order (Java's is HashMap order; this one matches the golden frames): KEYS, user
    properties, UNIQ_KEY, WAIT, TAGS, DELAY, TIMER_DELIVER_MS / TIMER_DELAY_MS.
    """
    parts: list[str] = []
    keys = message.keys
    if keys:
        value = keys if isinstance(keys, str) else join_keys(keys)
        if value:
            parts.append(KEYS + NAME_VALUE_SEPARATOR + value)
    if message.properties:
        parts += map(NAME_VALUE_SEPARATOR.join, message.properties.items())
    if uniq_key is not None:
        parts.append(UNIQ_KEY + NAME_VALUE_SEPARATOR + uniq_key)
    parts.append(_WAIT_TRUE if message.wait_store_msg_ok else _WAIT_FALSE)
    if message.tags:
        parts.append(TAGS + NAME_VALUE_SEPARATOR + message.tags)
    if message.delay_level:
        parts.append(DELAY + NAME_VALUE_SEPARATOR + str(message.delay_level))
    if message.deliver_at_ms is not None:
        parts.append(TIMER_DELIVER_MS + NAME_VALUE_SEPARATOR + str(message.deliver_at_ms))
    elif message.delay_ms is not None:
        parts.append(TIMER_DELAY_MS + NAME_VALUE_SEPARATOR + str(message.delay_ms))
    return PROPERTY_SEPARATOR.join(parts)


_CHECKED_TOPICS_MAX = 1024  # valid topic names a factory remembers (a bound, not an LRU)
_WAIT_TRUE = WAIT + NAME_VALUE_SEPARATOR + "true"
_INSTANCE_ID = PROPERTY_SEPARATOR + INSTANCE_ID + NAME_VALUE_SEPARATOR
_WAIT_FALSE = WAIT + NAME_VALUE_SEPARATOR + "false"


class SendRequestFactory:
    """Prepares sends for one producer group; holds the settings that shape every send."""

    __slots__ = (
        "_checked_topics",
        "_prefixes",
        "compress_codec",
        "compress_level",
        "compress_threshold",
        "default_topic",
        "default_topic_queue_nums",
        "max_message_size",
        "namespace",
        "producer_group",
    )

    def __init__(
        self,
        producer_group: str,
        *,
        default_topic: str = DEFAULT_TOPIC,
        default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS,
        compress_threshold: int = DEFAULT_COMPRESS_THRESHOLD,
        compress_level: int = DEFAULT_COMPRESS_LEVEL,
        compress_codec: Codec = Codec.ZLIB,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        namespace: str | None = None,
    ) -> None:
        check_group(producer_group)
        self.namespace = namespace
        self.producer_group = producer_group
        self.default_topic = default_topic
        self.default_topic_queue_nums = default_topic_queue_nums
        self._prefixes = HeaderPrefixes(producer_group, default_topic, default_topic_queue_nums)
        self.compress_threshold = compress_threshold
        self.compress_level = compress_level
        self.compress_codec = compress_codec
        self.max_message_size = max_message_size
        self._checked_topics: set[str] = set()

    def prepare(self, message: Message, uniq_key: str, *, validate: bool = True) -> PreparedMessage:
        """Validate (unless already done), encode properties, compress when large."""
        if validate:
            self._check_topic(message.topic)
            check_fields(message, self.max_message_size)
        properties = encode_message_properties(message, uniq_key)
        topic = message.topic
        if self.namespace is not None:  # nsA%topic, and INSTANCE_ID last (c_namespace #63)
            topic = wrap(self.namespace, topic)
            properties += _INSTANCE_ID + self.namespace
            if validate:
                self._check_topic(topic)
        check_properties_size(properties)
        body, sys_flag = compress_body(
            bytes(message.body), self.compress_threshold, self.compress_level, self.compress_codec
        )
        return self._prepared(topic, body, sys_flag, message.flag, properties, uniq_key)

    def _check_topic(self, topic: object) -> None:
        """:func:`check_send_topic`, remembered for the topics a producer sends to."""
        checked = self._checked_topics
        if type(topic) is str and topic in checked:  # no isinstance call: every send
            return
        check_send_topic(topic)
        if isinstance(topic, str) and len(checked) < _CHECKED_TOPICS_MAX:
            checked.add(topic)

    def prepare_batch(
        self, messages: Sequence[Message], uniq_keys: Sequence[str], *, validate: bool = True
    ) -> PreparedMessage:
        """One SEND_BATCH_MESSAGE: each message with its own ``UNIQ_KEY``; never compressed.

        The header's ``i`` is the batch's own properties: just ``WAIT`` (finding 11).
        """
        if validate:
            validate_batch(messages, self.max_message_size)
        if len(uniq_keys) != len(messages):
            raise LocalProtocolError(f"{len(messages)} messages but {len(uniq_keys)} UNIQ_KEYs")
        items = []
        for message, key in zip(messages, uniq_keys, strict=True):
            properties = encode_message_properties(message, key)
            check_properties_size(properties)
            items.append(BatchItem(message.flag, bytes(message.body), properties))
        return self._batch(messages[0], items, ",".join(uniq_keys))

    def batch_of(
        self, messages: Sequence[Message], prepared: Sequence[PreparedMessage]
    ) -> PreparedMessage:
        """One SEND_BATCH_MESSAGE of messages each already prepared alone (validated, with
        its ``UNIQ_KEY``, not compressed): transparent batching's request."""
        items = [
            BatchItem(message.flag, one.body, one.properties)
            for message, one in zip(messages, prepared, strict=True)
        ]
        return self._batch(messages[0], items, ",".join([one.msg_id for one in prepared]))

    def _batch(self, first: Message, items: list[BatchItem], msg_id: str) -> PreparedMessage:
        body = encode_batch(items)
        check_batch_size(len(body), self.max_message_size)
        own = _WAIT_TRUE if first.wait_store_msg_ok else _WAIT_FALSE
        topic = first.topic
        if self.namespace is not None:  # Java sets INSTANCE_ID on the MessageBatch itself
            topic, own = wrap(self.namespace, topic), own + _INSTANCE_ID + self.namespace
        return self._prepared(topic, body, 0, 0, own, msg_id, batch=True)

    def _prepared(
        self,
        topic: str,
        body: bytes,
        sys_flag: int,
        flag: int,
        properties: str,
        msg_id: str,
        *,
        batch: bool = False,
    ) -> PreparedMessage:
        head = self._prefixes.head(topic, batch)
        return PreparedMessage(topic, body, sys_flag, flag, properties, msg_id, batch, head)

    def __repr__(self) -> str:
        return (
            f"SendRequestFactory(group={self.producer_group!r}, "
            f"compress>={self.compress_threshold}, max={self.max_message_size})"
        )
