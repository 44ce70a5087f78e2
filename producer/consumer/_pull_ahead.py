"""A pull sent ahead: a queue's next PULL_MESSAGE, sent the moment the answer before it
arrives (its ``nextBeginOffset`` known), before that answer is decoded and consumed, so
the broker reads the next batch while the client decodes this one (docs/consuming.md 2.13).

The request is a loop future on the broker's open connection, nothing more per pull (as
the send path's first attempt). A connection that cannot start requests (trio's, or none
open yet) sends nothing ahead: the queue's loop pulls once the answer is handed over, as
it always did, since on trio a request needs a task switch to leave anyway.
:meth:`PullAhead.result` gives the :class:`PullResult` or raises the
:class:`~producer.errors.ProducerError`; :meth:`PullAhead.cancel` abandons it: a request
not written yet is never written, an answer that comes later is dropped.
"""

from __future__ import annotations

import asyncio

from producer._consume.pull_node import Node
from producer._remoting.command import RemotingCommand
from producer._remoting.consumer_requests import PullParams, PullResult
from producer._types.message import MessageQueue
from producer.consumer._broker_api import BrokerApi

__all__ = ["PullAhead"]


class PullAhead:
    """One pull in flight ahead of the answer being consumed; ``offset`` is where it reads."""

    __slots__ = ("_api", "_node", "_queue", "_waiter", "offset")

    def __init__(
        self,
        api: BrokerApi,
        params: PullParams,
        started: tuple[asyncio.Future[RemotingCommand | None], Node],
    ) -> None:
        self.offset = params.offset
        self._api = api
        self._queue: MessageQueue = params.queue
        self._waiter, self._node = started

    @classmethod
    def send(cls, api: BrokerApi, params: PullParams, timeout_ms: float) -> PullAhead | None:
        """``params``' pull, sent now; ``None`` (nothing sent) where it cannot be."""
        started = api.start_pull(params, timeout_ms)
        return None if started is None else cls(api, params, started)

    def __repr__(self) -> str:
        return f"PullAhead(offset={self.offset}, done={self._waiter.done()})"

    async def result(self) -> PullResult:
        """The pull's result (its suggested replica kept); a broker's or a transport's
        error raises."""
        return await self._api.settle_pull(self._queue, self._node, self._waiter)

    def cancel(self) -> None:
        """Abandoned (the queue dropped or stopped, or the answer before it undecodable)."""
        self._waiter.cancel()
