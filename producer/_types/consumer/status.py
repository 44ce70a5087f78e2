"""A listener's answer for its batch."""

from __future__ import annotations

import enum

__all__ = ["ConsumeStatus"]


class ConsumeStatus(enum.Enum):
    """A listener's answer for its batch (``ConsumeConcurrentlyStatus``). For an orderly
    consumer RECONSUME_LATER is Java's SUSPEND_CURRENT_QUEUE_A_MOMENT."""

    SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"
