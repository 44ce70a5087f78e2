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

# Added by 5.x (MessageConst of rocketmq-all-5.3.3). Timed delivery: a 5.x broker's
# HookUtils.checkIfTimerMessage diverts a single message carrying one of the first three
# to rmq_sys_wheel_timer (DELAY_SEC wins, then DELAY_MS, then DELIVER_MS).
TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
TIMER_DELAY_SEC = "TIMER_DELAY_SEC"
TIMER_DELAY_MS = "TIMER_DELAY_MS"
TIMER_OUT_MS = "TIMER_OUT_MS"  # the broker's slot time, on the delivered message
TIMER_ENQUEUE_MS = "TIMER_ENQUEUE_MS"
TIMER_DEQUEUE_MS = "TIMER_DEQUEUE_MS"
TIMER_ROLL_TIMES = "TIMER_ROLL_TIMES"
TIMER_DEL_UNIQKEY = "TIMER_DEL_UNIQKEY"
TIMER_DELAY_LEVEL = "TIMER_DELAY_LEVEL"
POP_CK = "POP_CK"
POP_CK_OFFSET = "POP_CK_OFFSET"
FIRST_POP_TIME = "1ST_POP_TIME"
DUP_INFO = "DUP_INFO"
EXTEND_UNIQ_INFO = "EXTEND_UNIQ_INFO"
BORN_HOST = "__BORNHOST"
BORN_TIMESTAMP = "BORN_TIMESTAMP"
DLQ_ORIGIN_TOPIC = "DLQ_ORIGIN_TOPIC"
DLQ_ORIGIN_MESSAGE_ID = "DLQ_ORIGIN_MESSAGE_ID"
CRC32 = "__CRC32#"

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

# MessageConst.STRING_HASH_SET of 5.3.3: 4.9.4's set plus these (TRAN_PREPARED_QUEUE_OFFSET
# too). A 5.x broker would take these from a user property as its own, so they are
# refused whatever the broker's version.
RESERVED_PROPERTY_NAMES_5: frozenset[str] = RESERVED_PROPERTY_NAMES | {
    POP_CK,
    POP_CK_OFFSET,
    FIRST_POP_TIME,
    TRANSACTION_PREPARED_QUEUE_OFFSET,
    DUP_INFO,
    EXTEND_UNIQ_INFO,
    TIMER_DELAY_MS,
    TIMER_DELAY_SEC,
    TIMER_DELIVER_MS,
    TIMER_ENQUEUE_MS,
    TIMER_DEQUEUE_MS,
    TIMER_ROLL_TIMES,
    TIMER_OUT_MS,
    TIMER_DEL_UNIQKEY,
    TIMER_DELAY_LEVEL,
    BORN_HOST,
    BORN_TIMESTAMP,
    DLQ_ORIGIN_TOPIC,
    DLQ_ORIGIN_MESSAGE_ID,
    CRC32,
}

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
