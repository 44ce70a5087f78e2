"""The handle ``send_async`` returns: awaitable, runtime-neutral, completed exactly once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Generator
from typing import Any

import anyio
import msgspec

from producer._send.plan import SendPlan
from producer._send.result import SendResult
from producer.errors import (
    AttemptRecord,
    Fate,
    LocalProtocolError,
    ProducerClosedError,
    ProducerError,
)

log = logging.getLogger("producer")

OnSuccess = Callable[[SendResult], object]
OnException = Callable[[ProducerError], object]


class SendFuture:
    """The eventual outcome of one ``send_async``.

    ``await future`` returns the :class:`SendResult` or raises the send's error. The
    callbacks given to ``send_async`` run first, exactly one of them exactly once; one that
    raises is logged and changes nothing (A6).
    """

    __slots__ = (
        "_done",
        "_error",
        "_loop",
        "_on_exception",
        "_on_success",
        "_result",
        "_waiters",
        "msg_id",
    )

    def __init__(
        self,
        on_success: OnSuccess | None = None,
        on_exception: OnException | None = None,
        *,
        msg_id: str = "",
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self.msg_id = msg_id  # the UNIQ_KEY, known before the send: correlate failures by it
        # The producer's asyncio loop, when it has one: asking for the running loop costs
        # a getpid() on 3.11. Without it, settled() asks.
        self._loop = loop
        self._done = False
        # Made only when someone awaits: most send_async callers use callbacks or await
        # much later. On asyncio a loop future each (an anyio.Event costs several times
        # more); one per awaiter, since cancelling an await cancels the future it awaits.
        self._waiters: list[asyncio.Future[None] | anyio.Event] | None = None
        self._result: SendResult | None = None
        self._error: ProducerError | None = None
        self._on_success = on_success
        self._on_exception = on_exception

    def done(self) -> bool:
        return self._done

    def result(self) -> SendResult:
        """The result; raises the send's error, or LocalProtocolError if not done yet."""
        if not self._done:
            raise LocalProtocolError("send_async result requested before the send finished")
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def exception(self) -> ProducerError | None:
        if not self.done():
            raise LocalProtocolError("send_async exception requested before the send finished")
        return self._error

    async def wait(self) -> SendResult:
        if not self._done:
            await self.settled()
        return self.result()

    def settled(self) -> Awaitable[None]:
        """Something to await until this future is done (call it while it is not)."""
        loop = self._loop or asyncio._get_running_loop()  # None under trio
        if self._waiters is None:
            self._waiters = []
        if loop is not None:
            future: asyncio.Future[None] = loop.create_future()
            self._waiters.append(future)
            return future
        event = anyio.Event()
        self._waiters.append(event)
        return event.wait()

    def __await__(self) -> Generator[Any, None, SendResult]:
        return self.wait().__await__()

    # -- completion (the producer's side) ----------------------------------------------

    def set_result(self, result: SendResult) -> None:
        if self._done:
            return
        self._result = result
        self._wake()
        if self._on_success is not None:
            _run_callback(self._on_success, result)

    def set_error(self, error: ProducerError) -> None:
        if self.done():
            return
        if self.msg_id:  # this caller's own id, also for a member of a transparent batch
            error.msg_id = self.msg_id
        self._error = error
        self._wake()
        if self._on_exception is not None:
            _run_callback(self._on_exception, error)

    def _wake(self) -> None:
        self._done = True
        waiters, self._waiters = self._waiters, None
        if waiters is None:
            return
        for waiter in waiters:
            if isinstance(waiter, anyio.Event):
                waiter.set()
            elif not waiter.done():  # an awaiter cancelled meanwhile
                waiter.set_result(None)

    def __repr__(self) -> str:
        if not self.done():
            return "SendFuture(pending)"
        if self._error is not None:
            return f"SendFuture(error={type(self._error).__name__})"
        return f"SendFuture(msg_id={self.msg_id}, result={self._result!r})"


def _run_callback(callback: Callable[[Any], object], value: object) -> None:
    try:
        callback(value)
    except Exception:
        log.exception("send_async callback %r raised; the producer carries on", callback)


async def settle(
    future: SendFuture,
    plan: SendPlan,
    sending: Awaitable[SendResult | None],
    before: tuple[AttemptRecord, ...] = (),
) -> None:
    """Run a background send and complete ``future`` with its outcome, whatever it is.

    ``before``: attempts made for this message before (a batch it was part of)."""
    try:
        result = await sending
    except ProducerError as exc:
        future.set_error(exc.with_attempts(before + exc.attempts) if before else exc)
    except anyio.get_cancelled_exc_class():
        future.set_error(closed_error(plan))
        raise
    except Exception as exc:  # a bug of ours: never let it kill the task group
        log.exception("send_async failed unexpectedly")
        future.set_error(ProducerError(f"internal error: {exc!r}", attempts=plan.attempts))
    else:
        assert result is not None, "a background send is never oneway"
        future.set_result(
            msgspec.structs.replace(result, attempts=before + result.attempts) if before else result
        )


def closed_error(plan: SendPlan) -> ProducerClosedError:
    """The producer closed while the send ran (its fate is unknown once attempted)."""
    fate = Fate.UNKNOWN if plan.attempts else Fate.NOT_STORED
    return ProducerClosedError(
        "producer closed before the send finished", fate=fate, attempts=plan.attempts
    )
