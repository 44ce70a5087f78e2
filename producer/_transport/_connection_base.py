"""What both backends' connections share: the in-flight table's view and close callbacks."""

from __future__ import annotations

import logging

from producer._remoting.command import OpaqueAllocator
from producer._remoting.request_table import ConnectionStats, InFlight, RequestHandler
from producer._transport.base import CloseCallback

_log = logging.getLogger("producer.transport")


class InFlightConnection:
    """The read-only half of :class:`~producer._transport.base.Connection`, over InFlight."""

    def __init__(self, address: str, opaques: OpaqueAllocator, handler: RequestHandler) -> None:
        self._address = address
        self._inflight = InFlight(address, opaques, handler)
        self._close_callbacks: list[CloseCallback] = []

    @property
    def address(self) -> str:
        return self._address

    @property
    def is_closed(self) -> bool:
        return self._inflight.closed is not None

    @property
    def pending_count(self) -> int:
        return len(self._inflight)

    @property
    def stats(self) -> ConnectionStats:
        return self._inflight.stats

    def add_close_callback(self, callback: CloseCallback) -> None:
        if self.is_closed:
            callback(self)  # type: ignore[arg-type]
        else:
            self._close_callbacks.append(callback)

    def _notify_closed(self) -> None:
        """Run the close callbacks once; one that raises is logged, the others still run."""
        callbacks, self._close_callbacks = self._close_callbacks, []
        for callback in callbacks:
            try:
                callback(self)  # type: ignore[arg-type]
            except Exception:
                _log.exception("close callback %r for %s failed", callback, self._address)
