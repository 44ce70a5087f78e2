"""A group's retry and dead-letter topics, and when a failed message becomes a dead letter.

One definition for the client (its send-back, its counts, its DLQ tool) and the dev
broker alike (docs/consuming.md 3.1, 3.5, 3.6).
"""

from __future__ import annotations

__all__ = [
    "DLQ_PREFIX",
    "RETRY_PREFIX",
    "SYSTEM_PREFIXES",
    "VERSION_HONOURS_MAX_RECONSUME",
    "dlq_topic",
    "is_dead_letter",
    "max_reconsume_times",
    "retry_topic",
]

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"
SYSTEM_PREFIXES = (RETRY_PREFIX, DLQ_PREFIX)
# A broker reads the request's maxReconsumeTimes (send-back) or ``l`` (SEND_MESSAGE_V2)
# only from this version on (MQVersion V3_4_9); older requests get the group's maximum.
VERSION_HONOURS_MAX_RECONSUME = 121


def retry_topic(group: str) -> str:
    """The retry topic of a consumer group: ``%RETRY%<group>``."""
    return RETRY_PREFIX + group


def dlq_topic(group: str) -> str:
    """The dead-letter topic of a consumer group: ``%DLQ%<group>``."""
    return DLQ_PREFIX + group


def max_reconsume_times(group_max: int, requested: int | None, version: int) -> int:
    """The maximum a broker applies: the request's, if its version is new enough."""
    if requested is not None and version >= VERSION_HONOURS_MAX_RECONSUME:
        return requested
    return group_max


def is_dead_letter(reconsume_times: int, max_times: int, delay_level: int = 0) -> bool:
    """Out of attempts (the count stored before this failure reached the maximum), or
    sent straight to the DLQ with a negative delay level."""
    return delay_level < 0 or reconsume_times >= max_times
