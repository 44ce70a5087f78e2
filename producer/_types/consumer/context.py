"""What a two-argument listener is given, and may set to steer its batch's outcome."""

from __future__ import annotations

from dataclasses import dataclass

from producer._types.message import MessageQueue

__all__ = ["ConsumeContext"]


@dataclass(slots=True)
class ConsumeContext:
    """Passed to a listener that takes two arguments; set fields to steer the outcome.

    ``ack_index``: with SUCCESS, messages ``0..ack_index`` succeeded and the rest are
    retried (default: all succeeded). ``delay_level``: for retried messages, 0 lets the
    broker choose (``3 + reconsume_times``), > 0 is that level, -1 sends them straight
    to the dead-letter queue. Orderly consumers: ``suspend_current_queue_time_ms`` is
    how long the queue waits before a failed batch is consumed again (default: the
    consumer's option; 10 ms .. 30 s).
    """

    queue: MessageQueue
    ack_index: int | None = None
    delay_level: int = 0
    suspend_current_queue_time_ms: int | None = None
