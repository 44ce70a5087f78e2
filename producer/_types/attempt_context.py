"""What a send hook sees of one attempt (the hooks themselves run in ``producer._send.hooks``)."""

from __future__ import annotations

from dataclasses import dataclass

from producer._types.message import Message, MessageQueue
from producer._types.send_result import SendResult
from producer.errors import ProducerError


@dataclass(slots=True)
class AttemptContext:
    """What a hook sees of one attempt. ``result``/``error``/``latency_ms`` are set after."""

    group: str
    message: Message
    queue: MessageQueue
    broker_addr: str
    attempt: int
    msg_id: str
    result: SendResult | None = None
    error: ProducerError | None = None
    latency_ms: float | None = None
