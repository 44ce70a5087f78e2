"""The checks a 4.9.4 broker makes on a send before storing it (no state, no I/O).

``AbstractSendMessageProcessor.msgCheck``'s topic-name rules and the message store's
property and size limits, and the :class:`PendingMessage` records a single send or a
batch becomes. The broker (``_broker.py``) adds what needs its state: topic configs,
auto-creation, queue choice.
"""

from __future__ import annotations

import re

from producer._remoting.message_codec import decode_batch, decompress_body, is_compressed
from producer._remoting.properties import CLUSTER, DELAY, WAIT, decode_properties, encode_properties
from producer._remoting.send_header import SendMessageRequestHeader
from producer._response_codes import ResponseCode
from producer.errors import ProducerError, RemoteProtocolError
from producer.testing._store import PendingMessage, stored_size

__all__ = [
    "MAX_MESSAGE_SIZE",
    "SendRefusal",
    "check_topic_name",
    "pending_batch",
    "pending_single",
]

MAX_MESSAGE_SIZE = 4 * 1024 * 1024  # MessageStoreConfig.maxMessageSize
MAX_PROPERTIES_CHARS = 32767  # Short.MAX_VALUE
MAX_TOPIC_LENGTH = 127
_TRANSACTION_TYPE_MASK = 0x3 << 2
_VALID_TOPIC = re.compile(r"[%|a-zA-Z0-9_-]+")
_NOT_ALLOWED_SEND_TOPICS = frozenset(
    {
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
    }
)


class SendRefusal(Exception):
    """A send refused by a check; carries the response code and remark."""

    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


def _illegal() -> SendRefusal:
    return SendRefusal(
        ResponseCode.MESSAGE_ILLEGAL,
        "the message is illegal, maybe msg body or properties length not matched. "
        f"msg body length limit {MAX_MESSAGE_SIZE}B, msg properties length limit 32KB.",
    )


def check_topic_name(topic: str) -> None:
    """``msgCheck``'s rules on the name alone (blank, characters, length, system topics)."""
    if not topic.strip():
        raise SendRefusal(ResponseCode.SYSTEM_ERROR, "The specified topic is blank.")
    if not _VALID_TOPIC.fullmatch(topic):
        raise SendRefusal(
            ResponseCode.SYSTEM_ERROR,
            "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
        )
    if len(topic) > MAX_TOPIC_LENGTH:
        raise SendRefusal(
            ResponseCode.SYSTEM_ERROR, "The specified topic is longer than topic max length."
        )
    if topic in _NOT_ALLOWED_SEND_TOPICS:
        raise SendRefusal(
            ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden."
        )


def pending_single(
    header: SendMessageRequestHeader, body: bytes, peer: str, cluster_name: str
) -> PendingMessage:
    """One message as the store will append it (``WAIT`` dropped, ``CLUSTER`` added)."""
    props = decode_properties(header.properties or "")
    props.pop(WAIT, None)  # the broker drops it to save 9 bytes (4.9.4)
    props[CLUSTER] = cluster_name
    props_text = encode_properties(props)
    if len(props_text) > MAX_PROPERTIES_CHARS:
        raise _illegal()
    size = stored_size(len(body), len(header.topic.encode()), len(props_text.encode()))
    if size > MAX_MESSAGE_SIZE:
        raise _illegal()
    return PendingMessage(
        body=_inflate(body, header.sys_flag),
        wire_body=body if is_compressed(header.sys_flag) else None,
        properties=props,
        size=size,
        born_timestamp=header.born_timestamp,
        sys_flag=header.sys_flag,
        flag=header.flag,
        born_host=peer,
        reconsume_times=header.reconsume_times,
    )


def pending_batch(
    header: SendMessageRequestHeader, body: bytes, peer: str, cluster_name: str
) -> list[PendingMessage]:
    """A batch's messages, each with the batch's properties added, each size-checked."""
    batch_props = decode_properties(header.properties or "")
    batch_props[CLUSTER] = cluster_name
    if header.sys_flag & _TRANSACTION_TYPE_MASK or DELAY in batch_props:
        raise _illegal()
    batch_text = encode_properties(batch_props).encode()
    try:
        items = decode_batch(body)
    except RemoteProtocolError as exc:
        raise SendRefusal(ResponseCode.SYSTEM_ERROR, f"bad batch body: {exc}") from None
    if not items or len(body) > MAX_MESSAGE_SIZE:
        raise _illegal()
    topic_len = len(header.topic.encode())
    pending: list[PendingMessage] = []
    for item in items:
        own = item.properties.encode()
        separator = 1 if own and batch_text and not own.endswith(b"\x02") else 0
        size = stored_size(len(item.body), topic_len, len(own) + separator + len(batch_text))
        if size > MAX_MESSAGE_SIZE:
            raise _illegal()
        pending.append(
            PendingMessage(
                body=item.body,
                properties={**decode_properties(item.properties), **batch_props},
                size=size,
                born_timestamp=header.born_timestamp,
                sys_flag=header.sys_flag,
                flag=item.flag,
                born_host=peer,
            )
        )
    return pending


def _inflate(body: bytes, sys_flag: int) -> bytes:
    """The original body, for inspection; a broker does not look inside, so a body that
    does not decode here (corrupt, or no LZ4/zstd library) is kept as sent."""
    try:
        return decompress_body(body, sys_flag, max_size=64 * MAX_MESSAGE_SIZE)
    except ProducerError:
        return body
