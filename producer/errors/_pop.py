"""Errors of pop consumption (:class:`~producer.consumer.SimpleConsumer`). Public through
:mod:`producer.errors`."""

from __future__ import annotations

from producer.errors._base import LocalProtocolError, ProducerError

__all__ = ["PopUnsupportedError", "ReceiptHandleExpiredError"]


class PopUnsupportedError(LocalProtocolError):
    """A topic served by a broker older than 5.0, which has no pop consumption: nothing
    was popped. Consume it with ``PushConsumer`` or ``PullConsumer`` instead."""

    def __init__(self, broker_name: str, addr: str, version: str) -> None:
        super().__init__(
            f"broker {broker_name} ({addr}) answers as {version}, which has no pop "
            "consumption (POP_MESSAGE is 5.0+): consume this topic with PushConsumer or "
            "PullConsumer, or move it to a 5.x broker"
        )
        self.broker_name = broker_name
        self.broker_version = version


class ReceiptHandleExpiredError(ProducerError):
    """A popped message's invisible time ran out before it was acknowledged (or its
    invisible time changed): the broker will deliver it again, to this group, and this
    copy's receipt handle no longer counts. Nothing was sent. Process the message again
    when it comes back (de-duplicate by ``msg_id``), or ask for a longer
    ``invisible_duration_ms`` / call ``change_invisible_duration`` in time."""

    def __init__(self, msg_id: str, action: str, overdue_ms: float) -> None:
        super().__init__(
            f"message {msg_id}: cannot {action}: its invisible time ran out {overdue_ms:.0f} ms "
            "ago, so the broker will deliver it again (a real broker would still answer "
            "this ack with success); handle the redelivered copy instead"
        )
        self.msg_id = msg_id
        self.will_be_redelivered = True
