"""Send hooks: code that runs before and after every attempt, like Java's SendMessageHook.

A hook is any object with ``before_attempt(ctx)`` and/or ``after_attempt(ctx)``; each may
be a plain function or a coroutine function. A hook that raises is logged and ignored: it
must never change a send's outcome.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence
from typing import Any

from producer._types.attempt_context import AttemptContext
from producer._types.message import Message, MessageQueue
from producer._types.send_result import SendResult
from producer.errors import ProducerError

log = logging.getLogger("producer")


class HookRunner:
    """Calls every hook's ``before_attempt`` / ``after_attempt`` in registration order."""

    __slots__ = ("_after", "_before", "active")

    def __init__(self, hooks: Sequence[object] = ()) -> None:
        self._before = [h.before_attempt for h in hooks if hasattr(h, "before_attempt")]
        self._after = [h.after_attempt for h in hooks if hasattr(h, "after_attempt")]
        #: Whether any hook is registered (an attribute: every send's path reads it).
        self.active = bool(self._before or self._after)

    async def before(self, ctx: AttemptContext) -> None:
        for hook in self._before:
            await _call(hook, ctx)

    async def after(self, ctx: AttemptContext) -> None:
        for hook in self._after:
            await _call(hook, ctx)


def attempt_contexts(
    group: str,
    messages: Sequence[tuple[Message, str]],
    queue: MessageQueue,
    addr: str,
    number: int,
) -> list[AttemptContext]:
    """One context per ``(message, msg_id)``: hooks see each member of a transparent batch."""
    return [AttemptContext(group, m, queue, addr, number, msg_id) for m, msg_id in messages]


def tell_contexts(
    contexts: list[AttemptContext],
    latency_ms: float | None,
    result: SendResult | None,
    error: ProducerError | None,
) -> None:
    """The hooks' contexts learn how the settled attempt went."""
    for ctx in contexts:
        ctx.latency_ms = latency_ms
        if error is None:
            ctx.result = result
        else:
            ctx.error = error


async def _call(hook: Any, ctx: AttemptContext) -> None:
    try:
        outcome = hook(ctx)
        if inspect.isawaitable(outcome):
            await outcome
    except Exception:
        log.exception("send hook %r raised; ignored", hook)
