"""A pull in flight, watched against the route: abandoned once the route stops naming the
replica it went to (a hung master the name server dropped), not waited out.

A long poll to a hung master (connections open, nothing answered) fails only at its RPC
timeout (``suspend_timeout_ms`` + 15 s). While it waits, the watch looks at the route
whenever :class:`~producer._consume.pull_node.PullNodes` says it is due (its own read, or
any other read of the same reader: it looks at least every ``WATCH_TICK_MS``), and when the
route no longer names the pull's address for its broker it cancels the pull (a request not
written is never written, a late answer is dropped) and raises TransportError: the caller's
failover path keeps the queue's offset where it was and pulls the replica the route names
now (docs/consuming.md 8.1).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio

from producer._client.clock import Clock
from producer._consume.pull_node import Node, PullNodes
from producer._remoting.command import RemotingCommand
from producer._types.message import MessageQueue
from producer.errors import TransportError

__all__ = ["RouteView", "unless_gone"]

Answer = RemotingCommand | None


@dataclass(frozen=True, slots=True)
class RouteView:
    """What a watch reads of its reader: the replica choices, the clock, a queue's
    replicas as the route names them, and how to read a topic's route again."""

    nodes: PullNodes
    clock: Clock
    replicas: Callable[[MessageQueue], dict[int, str]]
    recheck: Callable[[str], Awaitable[None]]

    def gone(self, queue: MessageQueue, node: Node) -> bool:
        """The route no longer names ``node`` for ``queue``'s broker."""
        return self.nodes.gone(node, self.replicas(queue))

    def wait_s(self, queue: MessageQueue) -> float:
        """How long to wait before the next look."""
        return self.nodes.wait_ms(queue.topic, self.clock.monotonic_ms()) / 1e3

    async def look(self, queue: MessageQueue) -> None:
        """Read the route again if it is due."""
        if self.nodes.route_due(queue.topic, self.clock.monotonic_ms()):
            try:
                await self.recheck(queue.topic)
            except anyio.get_cancelled_exc_class():
                self.nodes.recheck_now(queue.topic)  # the ask counted did not happen
                raise


async def unless_gone(
    view: RouteView, queue: MessageQueue, node: Node, answer: Awaitable[Answer]
) -> Answer:
    """``answer``, unless the route stops naming ``node`` first: then the pull is
    cancelled and TransportError raised (the queue's offset not advanced)."""
    if isinstance(answer, asyncio.Future):
        return await _future_unless_gone(view, queue, node, answer)
    got: list[Answer | Exception] = []
    async with anyio.create_task_group() as tg:

        async def read() -> None:
            try:
                got.append(await answer)
            except Exception as exc:  # raised below, outside the task group
                got.append(exc)
            tg.cancel_scope.cancel()

        tg.start_soon(read)
        while True:  # node was just chosen from the route: the first look after a tick
            await anyio.sleep(view.wait_s(queue))
            await view.look(queue)
            if view.gone(queue, node):
                break
        tg.cancel_scope.cancel()
    if not got:
        raise _abandoned(queue, node)
    if isinstance(got[0], Exception):
        raise got[0]
    return got[0]


async def _future_unless_gone(
    view: RouteView, queue: MessageQueue, node: Node, answer: asyncio.Future[Answer]
) -> Answer:
    """The same for a pull sent ahead, without a task per pull (its hot path: a timer
    per look, none when already answered)."""
    try:
        while not answer.done():
            await asyncio.wait((answer,), timeout=view.wait_s(queue))
            if answer.done():
                break
            await view.look(queue)
            if not answer.done() and view.gone(queue, node):
                answer.cancel()
                raise _abandoned(queue, node)
    except asyncio.CancelledError:
        answer.cancel()  # the reader stopped: the pull is dropped with it
        raise
    return answer.result()


def _abandoned(queue: MessageQueue, node: Node) -> TransportError:
    return TransportError(
        f"pull from {node.addr} abandoned: the route of {queue.topic!r} no longer "
        f"names it for {queue.broker_name!r}"
    )
