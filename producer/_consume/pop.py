"""Pop consumption's pure core: popped messages, their current receipt handles, and what an
ack or a change may do with them (docs/consuming.md 6.3; no I/O, time passed in).

A popped message is invisible to every other consumer of its group until its **local
deadline**: the consumer's monotonic time taken *before* the pop was sent, plus how long
the broker held the pop before popping (``popTime - bornTime``, at most the time the
answer took: a long-polled pop pops when a message arrives), plus the invisible time. So
the local deadline is at most the answer's one-way trip later than the broker's (popTime
plus the invisible time), and earlier when the clocks disagree the other way. Each
message carries one :class:`Receipt`, which is the only place its handle lives:

* ``HELD`` - popped, not acked: :func:`decide` hands out the current handle;
* after a change, the receipt holds the new handle and the new deadline (the broker
  answers an ack with the old handle with success, but that ack does nothing: the old
  handle is never sent again);
* ``ACKED`` - acked once: a second ack sends nothing;
* past its deadline: :func:`decide` raises
  :class:`~producer.errors.ReceiptHandleExpiredError` and sends nothing (the broker
  would answer success and deliver the message again all the same).
"""

from __future__ import annotations

from dataclasses import dataclass

from producer._consume.received import decode_pulled
from producer._remoting.pop_requests import POP_CK, PopResult, ReceiptHandle
from producer._remoting.retry_topics import RETRY_PREFIX
from producer._types.consumer.popped import PoppedMessage, Receipt, ReceiptState
from producer._types.consumer.received import ReceivedMessage
from producer.errors import LocalProtocolError, ReceiptHandleExpiredError

__all__ = ["PopTiming", "decide", "popped_messages"]


@dataclass(frozen=True, slots=True)
class PopTiming:
    """When a pop was sent (monotonic and wall ms, its ``bornTime``) and answered."""

    sent_at_ms: float
    born_ms: int
    answered_at_ms: float

    def popped_at_ms(self, pop_time: int) -> float:
        """The local monotonic time the broker popped at, as the module says."""
        held = min(max(pop_time - self.born_ms, 0), self.answered_at_ms - self.sent_at_ms)
        return self.sent_at_ms + held


def popped_messages(
    result: PopResult, group: str, topic: str, broker_name: str, timing: PopTiming
) -> list[PoppedMessage]:
    """The messages of a FOUND pop answer from ``broker_name``, each with its handle (the
    broker's ``POP_CK`` for a retried copy, else built from the answer's header) and its
    local deadline. An orderly pop's messages count their earlier deliveries from
    ``orderCountInfo``."""
    popped_at = timing.popped_at_ms(result.pop_time)
    popped: list[PoppedMessage] = []
    for message in decode_pulled(result.body, broker_name):  # bodies capped at MAX_BODY_BYTES
        # Only a retried copy carries the broker's handle: read the properties text once
        # for it, and leave the other messages' properties undecoded until asked.
        raw = message._properties
        carried = (
            message.properties.get(POP_CK) if not isinstance(raw, str) or POP_CK in raw else None
        )
        if carried is not None:
            handle = ReceiptHandle.parse(carried)
        else:
            queue_id = message.queue.queue_id
            retry = message.queue.topic.startswith(RETRY_PREFIX)
            handle = result.handle_for(broker_name, queue_id, message.queue_offset, retry)
            counted = result.reconsume_times(queue_id, message.queue_offset, retry)
            if counted is not None:
                message.reconsume_times = counted
        deadline = popped_at + handle.invisible_time
        popped.append(_popped(message, Receipt(group, topic, handle, deadline)))
    return popped


def _popped(message: ReceivedMessage, receipt: Receipt) -> PoppedMessage:
    copy = PoppedMessage.__new__(PoppedMessage)
    for name in ReceivedMessage.__slots__:
        setattr(copy, name, getattr(message, name))
    copy.receipt = receipt
    return copy


def decide(message: object, group: str, action: str, now_ms: float) -> Receipt | None:
    """The receipt an ack or a change of ``message`` by ``group`` should use now, ``None``
    when there is nothing to send (already acked), or the error to raise instead."""
    if not isinstance(message, PoppedMessage):
        raise LocalProtocolError(
            f"cannot {action} {message!r}: only messages a SimpleConsumer received can be "
            "acknowledged or have their invisible time changed"
        )
    receipt = message.receipt
    if receipt.group != group:
        raise LocalProtocolError(
            f"cannot {action} message {message.msg_id}: it was received by consumer group "
            f"{receipt.group!r}, not {group!r}; use the consumer that received it"
        )
    if receipt.state is ReceiptState.ACKED:
        if action == "ack":
            return None
        raise LocalProtocolError(
            f"cannot {action} message {message.msg_id}: it was already acknowledged"
        )
    if receipt.has_expired(now_ms):
        raise ReceiptHandleExpiredError(message.msg_id, action, now_ms - receipt.deadline_ms)
    return receipt
