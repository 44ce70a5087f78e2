"""What a successful send returns."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from producer._remoting.message import MessageQueue
from producer.errors import AttemptRecord


class SendStatus(enum.Enum):
    """The broker's verdict on a stored message (response codes 0, 10, 12, 11)."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"

    @property
    def is_ok(self) -> bool:
        return self is SendStatus.SEND_OK

    @property
    def response_code(self) -> int:
        return _CODE_BY_STATUS[self]


_STATUS_BY_CODE = {
    0: SendStatus.SEND_OK,
    10: SendStatus.FLUSH_DISK_TIMEOUT,
    12: SendStatus.FLUSH_SLAVE_TIMEOUT,
    11: SendStatus.SLAVE_NOT_AVAILABLE,
}
_CODE_BY_STATUS = {status: code for code, status in _STATUS_BY_CODE.items()}


def send_status_for_code(code: int) -> SendStatus | None:
    """The status a response code maps to, or ``None`` when the code is a broker error."""
    return _STATUS_BY_CODE.get(code)


@dataclass(frozen=True, slots=True)
class SendResult:
    """The outcome of a send that reached a broker and was stored.

    ``msg_id`` is the client-side unique id (UNIQ_KEY, kept across retries);
    ``offset_msg_id`` is the broker's id (store host + commit log offset). For a batch,
    ``msg_id`` and ``offset_msg_id`` are comma-joined, one per message.
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

    @property
    def msg_ids(self) -> list[str]:
        return self.msg_id.split(",")
