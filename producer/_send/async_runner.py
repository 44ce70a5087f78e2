"""How a ``send_async`` outside a transparent batch runs.

On asyncio, with nothing that needs a task (no hooks, no OpenTelemetry SDK, the route
cached, a connection open), its first attempt is a loop future with a callback: no task
is made for the send at all (most sends need one attempt). A retry, or anything the
fast way cannot do, runs as a task of the producer through the :class:`Sender`, as every
send does under trio.
"""

from __future__ import annotations

import functools

from producer._remoting.producer_requests import PreparedMessage
from producer._send.future import SendFuture, closed_error
from producer._send.job import SendJob
from producer._send.owned_tasks import Spawn
from producer._send.plan import Finish, Retry, SendMode
from producer._send.planner import Planner
from producer._send.send import Send, SendState
from producer._send.sender import Sender
from producer._send.timed import TimerGate
from producer._types.message import Message


class AsyncSendRunner:
    """Runs the producer's ``send_async`` calls that go alone (not in a transparent
    batch), and the groups of one that batching hands it."""

    __slots__ = ("_planner", "_sender", "_spawn")

    def __init__(self, *, sender: Sender, planner: Planner, spawn: Spawn) -> None:
        self._sender = sender
        self._planner = planner
        self._spawn = spawn

    def begin(
        self, prepared: PreparedMessage, message: Message, budget_ms: float, future: SendFuture
    ) -> Send:
        """A new ``send_async`` of ``message`` within ``budget_ms``, resolving ``future``,
        its flush ticket taken, not started yet."""
        plan = self._planner.plan(SendMode.ASYNC, budget_ms)
        return self._sender.begin(SendJob(prepared, message), plan, future)

    def send(self, send: Send) -> None:
        """Start a new ``send_async``: its in-flight slot taken now when there is room, so
        that close() drains this send even if its task has not started yet."""
        send.try_admit()
        self.start(send)

    def send_timed(self, timer: TimerGate, send: Send) -> None:
        """A new timed ``send_async``: ``timer`` checks its delivery time first, in a task
        the producer owns (a refusal finishes the send), then it goes as :meth:`send`."""
        timer.then_send_async(send, self._send_checked, spawn=self._spawn)

    def _send_checked(self, send: Send) -> None:
        # Its budget starts once the check is done, as it did for a send planned after it.
        send.plan = self._planner.plan(SendMode.ASYNC, send.plan.budget_ms)
        self.send(send)

    def start(self, send: Send) -> None:
        """Run ``send``: its first attempt task-less if it holds its slot and the sender
        can, else (or for a retry) as a task of the producer."""
        if send.state is not SendState.ADMITTED:
            self._spawn_run(send)
            return
        first = self._sender.start_first(send)
        if first is None:  # not started: a task makes every attempt
            self._spawn_run(send)
        else:  # out, with no task of its own
            first.when_settled(functools.partial(self._settled, send))

    def _spawn_run(self, send: Send) -> None:
        self._spawn(self._sender.complete, send, if_never_ran=lambda: _abandon(send))

    def _settled(self, send: Send, decision: Finish | Retry) -> None:
        """A task-less first attempt is over: the send is finished, or goes on in a task."""
        if isinstance(decision, Retry):
            self._spawn_run(send)  # the plan holds its back-off
        else:
            send.finish(decision.error or decision.result)


def _abandon(send: Send) -> None:
    """Its task was cancelled at close before it ever ran (its fate unknown if a task-less
    first attempt was made)."""
    if not send.finished:
        send.finish(closed_error(send.plan))
