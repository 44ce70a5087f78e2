"""The one log line of a failed delivery: which message (id, keys, queue, reconsume
count), why (the listener's exception, or its RECONSUME_LATER), and what happens next
(:class:`~producer._consume.decisions.DeliveryFate`: retried in N s at level L, consumed again
here, moved to ``%DLQ%<group>``). One line per message per attempt; the traceback rides
once, on the first message of a batch on its first delivery (later attempts name the
exception), so a message retried sixteen times does not print sixteen tracebacks
(docs/consuming.md 2.6)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from producer._consume.decisions import DeliveryFate, NextStep
from producer._types.consumer.received import ReceivedMessage

__all__ = ["log_failed"]

log = logging.getLogger("producer.consumer")


def log_failed(
    group: str,
    messages: Sequence[ReceivedMessage],
    error: BaseException | None,
    fates: Sequence[DeliveryFate],
) -> None:
    """Say, for each of ``messages`` (one listener call's failed ones), what failed and
    ``fates[i]``: an end (DLQ, dropped) is an ERROR, a retry to come a WARNING; a
    RECONSUME_LATER the listener returned is one level lower (it was asked for)."""
    cause = "it returned RECONSUME_LATER" if error is None else f"{type(error).__name__}: {error}"
    for index, (message, fate) in enumerate(zip(messages, fates, strict=True)):
        final = fate.step in (NextStep.DEAD_LETTER, NextStep.DROPPED)
        level = logging.ERROR if final else logging.WARNING
        if error is None:
            level -= 10
        with_traceback = error is not None and index == 0 and message.reconsume_times == 0
        log.log(
            level,
            "listener failed on %s (keys %s, %s offset %d, reconsume_times %d): %s; %s",
            message.msg_id,
            ",".join(message.keys) or "-",
            message.queue,
            message.queue_offset,
            message.reconsume_times,
            cause,
            fate.describe(group),
            exc_info=error if with_traceback else None,
        )
