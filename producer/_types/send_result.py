"""What a successful send returns."""

from __future__ import annotations

import msgspec

from producer._types.message import MessageQueue
from producer._types.send_status import SendStatus
from producer.errors import AttemptRecord


class SendResult(msgspec.Struct, frozen=True):
    """The outcome of a send that reached a broker and was stored.

    ``msg_id`` is the client-side unique id (UNIQ_KEY, kept across retries);
    ``offset_msg_id`` is the broker's id (store host + commit log offset). For a batch,
    ``msg_id`` and ``offset_msg_id`` are comma-joined, one per message.
    ``recall_handle`` is set when a 5.3 broker answered one (a timed message); this SDK
    keeps it for you but does not recall.
    """

    status: SendStatus
    msg_id: str
    offset_msg_id: str
    queue: MessageQueue
    queue_offset: int
    region_id: str | None
    trace_on: bool
    transaction_id: str | None
    attempts: tuple[AttemptRecord, ...]
    recall_handle: str | None = None

    @property
    def msg_ids(self) -> list[str]:
        """Each message's id: one for a send, one per message for ``send_batch``."""
        return self.msg_id.split(",")
