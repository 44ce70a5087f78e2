"""A message received by pop and its one receipt (``producer._consume.pop`` says what an
ack or a change may do with it)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from producer._remoting.pop_requests import ReceiptHandle
from producer._types.consumer.received import ReceivedMessage

__all__ = ["PoppedMessage", "Receipt", "ReceiptState"]


class ReceiptState(enum.Enum):
    HELD = "held"
    ACKED = "acked"


@dataclass
class Receipt:
    """A popped message's current handle and the consumer's deadline for it."""

    group: str
    topic: str  # the topic subscribed to (acks of retried copies go to the retry topic)
    handle: ReceiptHandle
    deadline_ms: float  # local monotonic ms
    state: ReceiptState = ReceiptState.HELD

    def has_expired(self, now_ms: float) -> bool:
        return now_ms >= self.deadline_ms

    def renewed(self, handle: ReceiptHandle, deadline_ms: float) -> None:
        self.handle, self.deadline_ms = handle, deadline_ms


class PoppedMessage(ReceivedMessage):
    """A message received by pop (:class:`~producer.consumer.SimpleConsumer`): a
    :class:`~producer.consumer.ReceivedMessage` that also knows its receipt handle.

    ``receipt_handle`` is the current handle's text (it changes with
    ``change_invisible_duration``); ``invisible_until_ms`` is when, on the consumer's
    monotonic clock, the message may be delivered to another consumer.
    """

    __slots__ = ("receipt",)

    receipt: Receipt

    @property
    def receipt_handle(self) -> str:
        """The current receipt handle (``extraInfo``): the one an ack must carry."""
        return str(self.receipt.handle)

    @property
    def invisible_until_ms(self) -> float:
        """When the message becomes visible again unless acked (this client's clock, ms)."""
        return self.receipt.deadline_ms

    @property
    def is_acked(self) -> bool:
        """Whether an ack for it was answered."""
        return self.receipt.state is ReceiptState.ACKED
