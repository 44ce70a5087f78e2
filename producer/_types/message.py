"""The user's message and the queue it lands on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from producer.errors import MessageTypeError


@dataclass(slots=True)
class Message:
    """A message to publish.

    ``keys`` are business keys for lookup (sent space-joined in ``KEYS``); ``tags`` is
    one tag for server-side filtering; ``properties`` are user properties (names must
    not be RocketMQ's reserved ones). ``delay_level`` (1-18) asks for delayed delivery.
    ``deliver_at_ms`` (epoch ms) or ``delay_ms`` ask a 5.x broker for timed delivery
    (``TIMER_DELIVER_MS`` / ``TIMER_DELAY_MS``, as Java 5.x's ``setDeliverTimeMs`` /
    ``setDelayTimeMs``): such a message is always sent alone, and refused before anything
    is written when a broker of its topic is 4.x (which would deliver it at once).
    ``wait_store_msg_ok`` is RocketMQ's ``WAIT`` property (sync store acknowledgement).
    ``msg_id`` sends the message under this ``UNIQ_KEY`` instead of a fresh one, as Java
    keeps a UNIQ_KEY a message already carries: re-publish a message whose fate was
    unknown under its first ``msg_id`` and consumers can de-duplicate the two copies.
    """

    topic: str
    body: bytes
    tags: str | None = None
    keys: str | Iterable[str] | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    delay_level: int | None = None
    wait_store_msg_ok: bool = True
    flag: int = 0
    msg_id: str | None = None
    deliver_at_ms: int | None = None
    delay_ms: int | None = None

    @property
    def timed(self) -> bool:
        """Asks for timed delivery (5.x timer)."""
        return self.deliver_at_ms is not None or self.delay_ms is not None

    def __post_init__(self) -> None:
        # A str body has no single right encoding and a dict none at all: say so now,
        # where the mistake is, not at send time.
        body: object = self.body  # typed bytes, but callers are not all type-checked
        if not isinstance(body, (bytes, bytearray, memoryview)):
            hint = " (encode it, e.g. text.encode())" if isinstance(body, str) else ""
            raise MessageTypeError("body", body, f"bytes, not {type(body).__name__}{hint}")


@dataclass(frozen=True, slots=True)
class MessageQueue:
    """One write queue: a topic's queue ``queue_id`` on broker ``broker_name``."""

    topic: str
    broker_name: str
    queue_id: int

    def __str__(self) -> str:
        return f"{self.topic}@{self.broker_name}/{self.queue_id}"
