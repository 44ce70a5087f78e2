"""Message properties: the ``name\\x01value`` pairs joined by ``\\x02`` that ride in header ``i``.

The string has no trailing separator (golden finding 8). Decoding follows the Java
client's ``MessageDecoder.string2messageProperties``: a pair without a name, without a
value or without the ``\\x01`` is skipped rather than rejected, because a broker does
the same and a strict decoder would refuse frames that the real server accepts.

Both directions are on the send hot path, so each has a fast path built from ``str``
methods that run in C and falls back to the slow, lenient loop only when needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"
KEY_SEPARATOR = " "  # several KEYS travel space-joined in one property

# Property names of MessageConst (4.9.4). The ones a producer sets are first.
KEYS = "KEYS"
TAGS = "TAGS"
WAIT = "WAIT"
DELAY = "DELAY"
UNIQ_KEY = "UNIQ_KEY"
TRANSACTION_PREPARED = "TRAN_MSG"
PRODUCER_GROUP = "PGROUP"
INSTANCE_ID = "INSTANCE_ID"
RETRY_TOPIC = "RETRY_TOPIC"
REAL_TOPIC = "REAL_TOPIC"
REAL_QUEUE_ID = "REAL_QID"
MIN_OFFSET = "MIN_OFFSET"
MAX_OFFSET = "MAX_OFFSET"
BUYER_ID = "BUYER_ID"
ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
TRANSFER_FLAG = "TRANSFER_FLAG"
CORRECTION_FLAG = "CORRECTION_FLAG"
MQ2_FLAG = "MQ2_FLAG"
RECONSUME_TIME = "RECONSUME_TIME"
MSG_REGION = "MSG_REGION"
TRACE_ON = "TRACE_ON"
MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
CONSUME_START_TIME = "CONSUME_START_TIME"
TRANSACTION_PREPARED_QUEUE_OFFSET = "TRAN_PREPARED_QUEUE_OFFSET"
TRANSACTION_CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
CHECK_IMMUNITY_TIME_IN_SECONDS = "CHECK_IMMUNITY_TIME_IN_SECONDS"
CORRELATION_ID = "CORRELATION_ID"
REPLY_TO_CLIENT = "REPLY_TO_CLIENT"
TTL = "TTL"
ARRIVE_TIME = "ARRIVE_TIME"
PUSH_REPLY_TIME = "PUSH_REPLY_TIME"
CLUSTER = "CLUSTER"
MSG_TYPE = "MSG_TYPE"
INNER_MULTI_DISPATCH = "INNER_MULTI_DISPATCH"
INNER_MULTI_QUEUE_OFFSET = "INNER_MULTI_QUEUE_OFFSET"

# MessageConst.STRING_HASH_SET of 4.9.4: the names Message.putUserProperty refuses.
# It is exactly this set - 4.9.4 leaves INNER_MULTI_DISPATCH, TRAN_PREPARED_QUEUE_OFFSET,
# TRANSACTION_CHECK_TIMES and CHECK_IMMUNITY_TIME_IN_SECONDS out, so users may set them.
RESERVED_PROPERTY_NAMES: frozenset[str] = frozenset(
    {
        TRACE_ON,
        MSG_REGION,
        KEYS,
        TAGS,
        WAIT,
        DELAY,
        RETRY_TOPIC,
        REAL_TOPIC,
        REAL_QUEUE_ID,
        TRANSACTION_PREPARED,
        PRODUCER_GROUP,
        MIN_OFFSET,
        MAX_OFFSET,
        BUYER_ID,
        ORIGIN_MESSAGE_ID,
        TRANSFER_FLAG,
        CORRECTION_FLAG,
        MQ2_FLAG,
        RECONSUME_TIME,
        UNIQ_KEY,
        MAX_RECONSUME_TIMES,
        CONSUME_START_TIME,
        INSTANCE_ID,
        CORRELATION_ID,
        REPLY_TO_CLIENT,
        TTL,
        ARRIVE_TIME,
        PUSH_REPLY_TIME,
        CLUSTER,
        MSG_TYPE,
        INNER_MULTI_QUEUE_OFFSET,
    }
)

_PAIR_JOIN = NAME_VALUE_SEPARATOR.join


def encode_properties(properties: Mapping[str, str] | Iterable[tuple[str, str]]) -> str:
    """Join properties in iteration order; an empty input gives ``""``.

    Names and values are not checked here (validation does that once per message);
    this runs on every send.
    """
    pairs = properties.items() if isinstance(properties, Mapping) else properties
    return PROPERTY_SEPARATOR.join(map(_PAIR_JOIN, pairs))


def decode_properties(text: str) -> dict[str, str]:
    """Split a properties string into a dict (later duplicates win, as in Java).

    Malformed pairs are skipped the way the Java decoder skips them; this never raises.
    """
    if not text:
        return {}
    try:
        result = dict(
            pair.split(NAME_VALUE_SEPARATOR, 1) for pair in text.split(PROPERTY_SEPARATOR)
        )
    except ValueError:  # a pair without \x01
        return _decode_lenient(text)
    if "" in result or "" in result.values():
        return _decode_lenient(text)
    return result


def _decode_lenient(text: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for pair in text.split(PROPERTY_SEPARATOR):
        name, sep, value = pair.partition(NAME_VALUE_SEPARATOR)
        if sep and name and value:
            result[name] = value
    return result


def join_keys(keys: Iterable[str]) -> str:
    """The ``KEYS`` value for several business keys."""
    return KEY_SEPARATOR.join(keys)


def split_keys(value: str) -> list[str]:
    """The business keys of a ``KEYS`` value (empty pieces dropped)."""
    return [key for key in value.split(KEY_SEPARATOR) if key]
