"""Client-side message rules, after the Java client's ``Validators`` and ``MessageBatch``.

Every failure raises :class:`producer.errors.MessageValidationError` naming the field, the
offending value and the limit, before anything is sent. Where we go beyond the 4.9.4
client (it lets the broker reject these, or silently mangles them) it says so:

* Topics: ``TopicValidator``'s charset ``^[%|a-zA-Z0-9_-]+$``, at most 127 chars, not
  blank. Refused as send targets: the topics Java refuses (``NOT_ALLOWED_SEND_TOPIC_SET``)
  plus ``TBW102`` and the ``rmq_sys_`` prefix. ``BenchmarkTest`` and
  ``RMQ_SYS_TRACE_TOPIC`` stay allowed: Java's own benchmark and tracer send there.
* Groups: the same charset, at most 255 chars.
* Bodies: non-empty, at most ``max_message_size`` (4 MiB) **before** compression.
* User properties: not a reserved name (``MessageConst.STRING_HASH_SET``), name and value
  not blank (``putUserProperty``), and - ours - no ``\\x01``/``\\x02``, which would
  corrupt the properties string.
* Keys and tags: no property separators (ours). Keys given as a list must be non-empty
  and space-free, since ``KEYS`` is space-joined; a single string is passed through as
  Java's ``setKeys(String)`` does (``"k1 k2"`` means two keys).
* Delay level: ``None``/0 (no delay) or 1..18 (the broker's default level table).
* The encoded properties must fit 32767 bytes (ours; the broker answers 13 otherwise).
* Timed delivery (5.x): ``deliver_at_ms`` / ``delay_ms`` positive ints, one of them, no
  ``delay_level``; at send time in the future and within ``timer_max_delay_ms`` (ours:
  Java sends a past or too-far time and the broker delivers at once or answers 13).
* Batches (``MessageBatch.generateFromList``): non-empty, one topic, one
  ``wait_store_msg_ok``, no delay, no timed message (ours), no ``%RETRY%`` topic, encoded
  size within the limit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from producer._remoting.message_codec import MAX_PROPERTIES_BYTES
from producer._remoting.properties import (
    KEY_SEPARATOR,
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    RESERVED_PROPERTY_NAMES_5,
)
from producer._remoting.retry_topics import RETRY_PREFIX
from producer._types.message import Message
from producer.errors import MessageValidationError

TOPIC_MAX_LENGTH = 127
GROUP_MAX_LENGTH = 255
DEFAULT_MAX_MESSAGE_SIZE = 4 * 1024 * 1024
MAX_DELAY_LEVEL = 18
MAX_MSG_ID_LENGTH = 128  # a Java UNIQ_KEY is 32 (IPv4) or 56 (IPv6) hex digits
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
AUTO_CREATE_TOPIC = "TBW102"
CHARSET_RULE = "only ^[%|a-zA-Z0-9_-]+$"

# TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET (4.9.4).
NOT_ALLOWED_SEND_TOPICS: frozenset[str] = frozenset(
    {
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
    }
)
# TopicValidator.SYSTEM_TOPIC_SET (4.9.4), for callers that want the whole list.
SYSTEM_TOPICS: frozenset[str] = NOT_ALLOWED_SEND_TOPICS | {
    AUTO_CREATE_TOPIC,
    "BenchmarkTest",
    "RMQ_SYS_TRACE_TOPIC",
}

_NAME_CHARS = re.compile(r"[%|a-zA-Z0-9_-]+")
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def is_system_topic(topic: str) -> bool:
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX)


def is_send_forbidden(topic: str) -> bool:
    """Whether this SDK refuses ``topic`` as a destination (see the module doc)."""
    return (
        topic in NOT_ALLOWED_SEND_TOPICS
        or topic == AUTO_CREATE_TOPIC
        or topic.startswith(SYSTEM_TOPIC_PREFIX)
    )


def check_topic(topic: object) -> None:
    """A syntactically valid topic name (``Validators.checkTopic``)."""
    _check_name("topic", topic, TOPIC_MAX_LENGTH)


def check_send_topic(topic: object) -> None:
    """A valid topic that a producer may send to."""
    if is_send_forbidden(_check_name("topic", topic, TOPIC_MAX_LENGTH)):
        raise MessageValidationError("topic", topic, "sending to a system topic is forbidden")


#: The groups Java's ``checkConfig`` refuses (``MixAll.DEFAULT_PRODUCER_GROUP`` /
#: ``DEFAULT_CONSUMER_GROUP``): placeholders every misconfigured client would share.
DEFAULT_GROUPS = {"producer": "DEFAULT_PRODUCER", "consumer": "DEFAULT_CONSUMER"}


def check_group(group: object, role: str = "producer") -> None:
    """A valid group name for a ``role`` ("producer" or "consumer") client
    (``Validators.checkGroup``, and Java's refusal of the default group)."""
    name = _check_name("group", group, GROUP_MAX_LENGTH)
    if name == DEFAULT_GROUPS[role]:
        raise MessageValidationError(
            "group", name, f"a group of your own: {name} is the placeholder Java refuses too"
        )


def _check_name(field: str, name: object, max_length: int) -> str:
    if not isinstance(name, str) or not name.strip():
        raise MessageValidationError(field, name, "a non-blank string")
    if len(name) > max_length:
        raise MessageValidationError(field, name, f"at most {max_length} characters")
    if not _NAME_CHARS.fullmatch(name):
        raise MessageValidationError(field, name, CHARSET_RULE)
    return name


def check_body(body: object, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
    """Non-empty bytes, at most ``max_message_size`` (checked before compression)."""
    if not isinstance(body, (bytes, bytearray, memoryview)):
        raise MessageValidationError("body", type(body).__name__, "bytes")
    size = len(body)
    if size == 0:
        raise MessageValidationError("body", body, "non-empty")
    if size > max_message_size:
        raise MessageValidationError(
            "body", f"{size} bytes", f"at most {max_message_size} bytes (max_message_size)"
        )


def check_user_properties(properties: Mapping[str, str]) -> None:
    for name, value in properties.items():
        if not isinstance(name, str) or not name.strip():
            raise MessageValidationError("property name", name, "a non-blank string")
        if name in RESERVED_PROPERTY_NAMES_5:
            raise MessageValidationError(
                "property name", name, "not one of RocketMQ's reserved names"
            )
        _check_no_separators("property name", name)
        if not isinstance(value, str) or not value.strip():
            raise MessageValidationError(f"property {name!r}", value, "a non-blank string")
        _check_no_separators(f"property {name!r}", value)


def check_tags(tags: object) -> None:
    if tags is None:
        return
    if not isinstance(tags, str):
        raise MessageValidationError("tags", tags, "a string or None")
    _check_no_separators("tags", tags)


def check_keys(keys: object) -> None:
    if keys is None:
        return
    if isinstance(keys, str):
        _check_no_separators("keys", keys)
        return
    if not isinstance(keys, Iterable) or iter(keys) is keys:
        # A one-shot iterator would be used up here and arrive empty at the encoder.
        raise MessageValidationError("keys", keys, "a string or a collection of strings")
    for key in keys:
        if not isinstance(key, str) or not key:
            raise MessageValidationError("key", key, "a non-empty string")
        if KEY_SEPARATOR in key:
            raise MessageValidationError("key", key, "no spaces (KEYS is space-joined)")
        _check_no_separators("key", key)


def _check_no_separators(field: str, value: str) -> None:
    if NAME_VALUE_SEPARATOR in value or PROPERTY_SEPARATOR in value:
        raise MessageValidationError(field, value, "no \\x01 or \\x02 characters")


def check_delay_level(level: object, max_level: int = MAX_DELAY_LEVEL) -> None:
    if level is None or level == 0:
        return
    if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= max_level:
        raise MessageValidationError("delay_level", level, f"None, 0 or 1..{max_level}")


def check_flag(flag: object) -> None:
    if isinstance(flag, bool) or not isinstance(flag, int) or not _INT32_MIN <= flag <= _INT32_MAX:
        raise MessageValidationError("flag", flag, "a 32-bit signed integer")


def check_msg_id(msg_id: object) -> None:
    """A preset ``UNIQ_KEY``: any non-blank string that fits a property value."""
    if msg_id is None:
        return
    if not isinstance(msg_id, str) or not msg_id.strip():
        raise MessageValidationError("msg_id", msg_id, "a non-blank string or None")
    if len(msg_id) > MAX_MSG_ID_LENGTH:
        raise MessageValidationError("msg_id", msg_id, f"at most {MAX_MSG_ID_LENGTH} characters")
    _check_no_separators("msg_id", msg_id)


def check_properties_size(encoded: str) -> None:
    """The whole properties string, as it will be sent, fits the broker's limit."""
    # Cheap bound first: UTF-8 needs at most 4 bytes per code point.
    if len(encoded) * 4 <= MAX_PROPERTIES_BYTES:
        return
    size = len(encoded.encode())
    if size > MAX_PROPERTIES_BYTES:
        raise MessageValidationError(
            "properties", f"{size} bytes encoded", f"at most {MAX_PROPERTIES_BYTES} bytes"
        )


def validate_message(message: Message, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
    """Every per-message rule (the properties size is checked once they are encoded)."""
    check_send_topic(message.topic)
    check_fields(message, max_message_size)


def check_fields(message: Message, max_message_size: int) -> None:
    """The rules of one message other than its topic. Fields left at their defaults
    skip their checks: this runs on every send."""
    check_body(message.body, max_message_size)
    if message.tags is not None:
        check_tags(message.tags)
    if message.keys is not None:
        check_keys(message.keys)
    if message.properties:
        check_user_properties(message.properties)
    if message.delay_level:
        check_delay_level(message.delay_level)
    if message.flag.__class__ is not int or not _INT32_MIN <= message.flag <= _INT32_MAX:
        check_flag(message.flag)
    if message.msg_id is not None:
        check_msg_id(message.msg_id)
    if message.deliver_at_ms is not None or message.delay_ms is not None:
        check_timer_fields(message)


DEFAULT_TIMER_MAX_DELAY_MS = 3 * 24 * 3600 * 1000  # MessageStoreConfig.timerMaxDelaySec (5.x)


def check_timer_fields(message: Message) -> None:
    """``deliver_at_ms`` / ``delay_ms``: positive ints, one of them, no ``delay_level``
    (a 5.x broker drops the timer for a delay level: ``checkIfTimerMessage``)."""
    for name in ("deliver_at_ms", "delay_ms"):
        value = getattr(message, name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value <= 0
        ):
            raise MessageValidationError(name, value, "a positive int (milliseconds) or None")
    if message.deliver_at_ms is not None and message.delay_ms is not None:
        raise MessageValidationError("delay_ms", message.delay_ms, "None when deliver_at_ms is set")
    if message.delay_level:
        raise MessageValidationError(
            "delay_level", message.delay_level, "None with deliver_at_ms or delay_ms"
        )


def check_timer_window(message: Message, now_ms: int, max_delay_ms: int) -> None:
    """The asked time is in the future and within the broker's ``timerMaxDelaySec``
    (``now_ms``: the wall clock, the caller's)."""
    delay = message.delay_ms
    if message.deliver_at_ms is not None:
        delay = message.deliver_at_ms - now_ms
        if delay <= 0:
            raise MessageValidationError(
                "deliver_at_ms", message.deliver_at_ms, f"in the future (now is {now_ms})"
            )
    if delay is not None and delay > max_delay_ms:
        raise MessageValidationError(
            "delay", f"{delay} ms", f"at most {max_delay_ms} ms (timer_max_delay_ms)"
        )


def validate_batch(
    messages: Sequence[Message], max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
) -> None:
    """Each message's rules plus ``MessageBatch``'s: same topic and wait flag, no delay,
    no retry topic. The encoded batch size is checked by :func:`check_batch_size`."""
    if not messages:
        raise MessageValidationError("batch", messages, "at least one message")
    first = messages[0]
    check_send_topic(first.topic)  # once: every message must have this very topic
    for index, message in enumerate(messages):
        if message.topic != first.topic:
            raise MessageValidationError(
                f"batch[{index}].topic", message.topic, f"the batch's topic {first.topic!r}"
            )
        check_fields(message, max_message_size)
        if message.wait_store_msg_ok != first.wait_store_msg_ok:
            raise MessageValidationError(
                f"batch[{index}].wait_store_msg_ok",
                message.wait_store_msg_ok,
                "the same for every message of a batch",
            )
        if message.delay_level:
            raise MessageValidationError(
                f"batch[{index}].delay_level", message.delay_level, "no delay in a batch"
            )
        if message.timed:
            raise MessageValidationError(
                f"batch[{index}]",
                "deliver_at_ms" if message.deliver_at_ms is not None else "delay_ms",
                "no timed delivery in a batch (a 5.x broker ignores a timer inside a "
                "batch and delivers at once): send it alone with send()",
            )
    if first.topic.startswith(RETRY_PREFIX):
        raise MessageValidationError("topic", first.topic, "no retry topic in a batch")


def check_batch_size(encoded_size: int, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
    """The encoded batch body, like any body, must fit ``max_message_size``."""
    if encoded_size > max_message_size:
        raise MessageValidationError(
            "batch body", f"{encoded_size} bytes", f"at most {max_message_size} bytes"
        )
