"""The broker's verdict on a stored message, and the response code each verdict is."""

from __future__ import annotations

import enum

from producer._response_codes import ResponseCode


class SendStatus(enum.Enum):
    """The broker's verdict on a stored message (response codes 0, 10, 12, 11)."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"

    @property
    def is_ok(self) -> bool:
        """Whether the message was stored and flushed as the broker was asked (``SEND_OK``);
        the other statuses stored it too, with a flush or replica that did not finish."""
        return self is SendStatus.SEND_OK

    @property
    def response_code(self) -> ResponseCode:
        """The broker response code this status stands for (``SEND_OK`` is ``SUCCESS``)."""
        return _CODE_BY_STATUS[self]


_CODE_BY_STATUS = {SendStatus(c.send_status): c for c in ResponseCode if c.send_status is not None}

#: The status each non-error response code maps to (a send's answer reads it: one lookup).
SEND_STATUS_BY_CODE: dict[int, SendStatus] = {c.value: s for s, c in _CODE_BY_STATUS.items()}


def send_status_for_code(code: int) -> SendStatus | None:
    """The status a response code maps to, or ``None`` when the code is an error."""
    return SEND_STATUS_BY_CODE.get(code)
