"""One message of a dead-letter queue (``DeadLetterQueue`` reads and re-drives them)."""

from __future__ import annotations

from dataclasses import dataclass

from producer._remoting.properties import KEYS, RESERVED_PROPERTY_NAMES, TAGS
from producer._types.consumer.received import ReceivedMessage
from producer._types.message import Message
from producer.errors import LocalProtocolError

__all__ = ["DeadLetter"]


@dataclass(frozen=True)
class DeadLetter:
    """One message of a dead-letter queue, the topic it died on, and whether this tool
    re-drove it already (``redriven_at_ms``: when, epoch ms)."""

    message: ReceivedMessage
    original_topic: str | None  # RETRY_TOPIC; None if the message does not say
    redriven_at_ms: int | None = None

    @property
    def redriven(self) -> bool:
        """Whether this letter was sent back to its topic already."""
        return self.redriven_at_ms is not None

    @property
    def msg_id(self) -> str:
        """The dead message's id."""
        return self.message.msg_id

    def redrive_message(self) -> Message:
        """The copy to publish: same body, tags, keys, user properties and msg_id. A body
        that cannot be decoded raises :class:`~producer.errors.UndecodableBodyError`
        (install the extra it names, or it is corrupt)."""
        if self.original_topic is None:
            raise LocalProtocolError(
                f"dead letter {self.msg_id} has no RETRY_TOPIC property: its topic is unknown"
            )
        if self.message.undecodable is not None:  # never re-publish undecoded bytes as a body
            raise self.message.undecodable
        props = self.message.properties
        user = {k: v for k, v in props.items() if k not in RESERVED_PROPERTY_NAMES}
        keys = props.get(KEYS)
        return Message(
            self.original_topic,
            self.message.body,
            tags=props.get(TAGS),
            keys=keys.split() if keys else None,
            properties=user,
            msg_id=self.msg_id,
        )
