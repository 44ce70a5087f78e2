"""Errors of request-reply (``Producer.request``, ``create_reply``, ``Producer.send_reply``)."""

from __future__ import annotations

from collections.abc import Sequence

from producer._types.fate import Fate
from producer.errors._base import LocalProtocolError, NoRouteError, ProducerError, RequestTimeout


class ReplyTimeout(RequestTimeout):
    """A request was sent (stored) but no reply came within its ``timeout_ms``: Java's
    ``RequestTimeoutException`` (10006). Also a :class:`RequestTimeout` and a
    ``TimeoutError``. ``correlation_id`` names the request; a reply arriving later is
    dropped."""

    default_fate = Fate.UNKNOWN

    def __init__(self, correlation_id: str, timeout_ms: float) -> None:
        super().__init__(
            f"request timeout, no reply message within {timeout_ms:g} ms "
            f"(CORRELATION_ID {correlation_id}): is a consumer subscribed to the request's "
            "topic and answering with create_reply() + send_reply()? Or pass a longer "
            "timeout_ms"
        )
        self.correlation_id = correlation_id


class NotARequestError(LocalProtocolError, ValueError):
    """``create_reply()`` was given a message that is not a request (it lacks
    ``CORRELATION_ID``, ``REPLY_TO_CLIENT`` or the ``CLUSTER`` the broker adds)."""


class NoReplyTopicError(NoRouteError):
    """A request's cluster has no ``<cluster>_REPLY_TOPIC`` in the name server's routes,
    so no reply could reach the requester; nothing was sent."""

    def __init__(self, topic: str, namesrv_addrs: Sequence[str], reason: str) -> None:
        super().__init__(topic, namesrv_addrs, reason)


class ReplyRefusedError(ProducerError):
    """The broker did not take a reply (``send_reply``): code 1 with ``channel of <id> not
    found`` when the requester is gone (it never heartbeated that broker, or closed),
    REQUEST_CODE_NOT_SUPPORTED from a broker that does not allow replies. ``remark`` is
    the broker's text."""

    def __init__(self, message: str, *, code: int, remark: str | None) -> None:
        super().__init__(message, code=code)
        self.remark = remark
