"""A reply to a request; ``producer._remoting.reply`` makes it (``create_reply``) and
writes it (SEND_REPLY_MESSAGE_V2)."""

from __future__ import annotations

import msgspec

__all__ = ["Reply"]


class Reply(msgspec.Struct, frozen=True):
    """A reply made by :func:`create_reply`; send it with ``Producer.send_reply``.

    ``topic`` is ``<cluster>_REPLY_TOPIC``; ``correlation_id``, ``reply_to_client`` and
    ``ttl`` are the request's. :func:`~producer._remoting.reply.reply_properties`
    writes its properties."""

    topic: str
    body: bytes
    correlation_id: str
    reply_to_client: str
    ttl: str
