"""What a pop consumer does with each message of a batch its listener answered (pure;
docs/consuming.md 6.4).

SUCCESS (up to ``ack_index``) acks. A message to retry is hidden again for the next
step of the pop delay table (Java 5.x's ``popDelayLevel``, in seconds: 10 s, 30 s, 1 min,
2 min ... 2 h; step ``reconsume_times``, or the context's ``delay_level`` when the
listener set one) instead of being sent back; the broker then delivers it again through
the group's pop retry topic. Once it was delivered ``max_reconsume_times`` times before
(or the listener asked for ``delay_level`` -1) it is sent to the group's dead-letter
queue and acked.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from producer._remoting.retry_topics import is_dead_letter
from producer._types.consumer.status import ConsumeStatus

__all__ = ["POP_DELAYS_MS", "PopAction", "PopStep", "pop_step"]

#: ``DefaultMQPushConsumer.popDelayLevel`` (5.x), seconds -> ms.
POP_DELAYS_MS = tuple(
    s * 1000
    for s in (10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
)


class PopAction(enum.Enum):
    ACK = "ack"
    RETRY = "retry"  # change the invisible time to ``delay_ms``
    DEAD_LETTER = "dead_letter"  # to %DLQ%<group>, then ack


@dataclass(frozen=True, slots=True)
class PopStep:
    action: PopAction
    delay_ms: int = 0


def pop_step(
    status: ConsumeStatus,
    index: int,
    ack_index: int | None,
    reconsume_times: int,
    max_reconsume_times: int,
    delay_level: int = 0,
) -> PopStep:
    """The step for message ``index`` of a batch the listener answered ``status``."""
    if status is ConsumeStatus.SUCCESS and (ack_index is None or index <= ack_index):
        return PopStep(PopAction.ACK)
    if is_dead_letter(reconsume_times, max_reconsume_times, delay_level):
        return PopStep(PopAction.DEAD_LETTER)
    step = delay_level - 1 if delay_level > 0 else reconsume_times
    return PopStep(PopAction.RETRY, POP_DELAYS_MS[min(step, len(POP_DELAYS_MS) - 1)])
