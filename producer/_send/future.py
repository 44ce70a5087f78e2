"""The handle ``send_async`` returns: awaitable, runtime-neutral, completed exactly once."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import types
from collections.abc import Awaitable, Callable, Generator
from typing import Any

import anyio

from producer._send.plan import SendPlan
from producer._types.send_result import SendResult
from producer.errors import (
    Fate,
    LocalProtocolError,
    ProducerClosedError,
    ProducerError,
)

log = logging.getLogger("producer")

# Plain functions: the producer calls them from its own code, where nothing awaits what
# they return. An ``async def`` is refused when given (see ``_check_callback``).
OnSuccess = Callable[[SendResult], None]
OnException = Callable[[ProducerError], None]
DoneCallback = Callable[["SendFuture"], object]


class SendFuture:
    """The eventual outcome of one ``send_async``.

    ``await future`` returns the :class:`SendResult` or raises the send's error. The
    callbacks given to ``send_async`` run first, exactly one of them exactly once; one that
    raises is logged and changes nothing (A6).

    On asyncio it is also a future as asyncio knows them (``asyncio.isfuture`` is true):
    ``asyncio.wait``, ``as_completed``, ``wait_for``, ``shield`` and ``gather`` take it,
    through ``add_done_callback``, ``cancelled`` and ``get_loop``. ``cancel()`` is what
    ``wait_for``'s timeout calls: it stops this future's waiters, not the send, which the
    producer finishes within its deadline (its callbacks still run with the outcome).
    """

    # asyncio.isfuture() looks for this class attribute: duck-typed futures are supported.
    _asyncio_future_blocking = False

    __slots__ = (
        "_cancelled",
        "_done",
        "_done_callbacks",
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
        self._on_success = on_success and _check_callback("on_success", on_success)
        self._on_exception = on_exception and _check_callback("on_exception", on_exception)
        self._cancelled = False
        self._done_callbacks: list[tuple[DoneCallback, contextvars.Context]] | None = None

    def done(self) -> bool:
        """Whether the send has ended (a result or an error) or the wait was cancelled."""
        return self._done

    def cancelled(self) -> bool:
        """Whether :meth:`cancel` stopped the wait (the send itself went on)."""
        return self._cancelled

    def result(self) -> SendResult:
        """The result; raises the send's error, or LocalProtocolError if not done yet."""
        if not self._done:
            raise LocalProtocolError("send_async result requested before the send finished")
        if self._cancelled:
            raise asyncio.CancelledError()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def exception(self) -> ProducerError | None:
        """The send's error, None if it succeeded; raises LocalProtocolError if not done yet."""
        if not self.done():
            raise LocalProtocolError("send_async exception requested before the send finished")
        if self._cancelled:
            raise asyncio.CancelledError()
        return self._error

    # -- asyncio's future protocol ---------------------------------------------------------

    def get_loop(self) -> asyncio.AbstractEventLoop:
        """The producer's asyncio loop (a producer under trio has none: RuntimeError)."""
        loop = self._loop or asyncio._get_running_loop()
        if loop is None:
            raise RuntimeError("this SendFuture belongs to a producer that runs on no asyncio loop")
        return loop

    def add_done_callback(
        self, fn: DoneCallback, *, context: contextvars.Context | None = None
    ) -> None:
        """Call ``fn(self)`` once done (soon after, on asyncio; at once when already done)."""
        entry = (fn, context or contextvars.copy_context())
        if self._done:
            self._call_soon(entry)
        elif self._done_callbacks is None:
            self._done_callbacks = [entry]
        else:
            self._done_callbacks.append(entry)

    def remove_done_callback(self, fn: DoneCallback) -> int:
        """Remove every registration of ``fn``; returns how many were removed."""
        callbacks = self._done_callbacks or []
        kept = [entry for entry in callbacks if entry[0] != fn]
        self._done_callbacks = kept or None
        return len(callbacks) - len(kept)

    def cancel(self, msg: object = None) -> bool:
        """Stop waiting (``await`` and ``result()`` raise CancelledError); the send goes on
        and its ``on_success``/``on_exception`` still run. False once done."""
        if self._done:
            return False
        self._cancelled = True
        self._wake()
        return True

    async def wait(self) -> SendResult:
        """Wait for the send to end; returns its result or raises its error."""
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
        """The producer's side: settle with ``result`` (the first settlement wins) and run
        ``on_success``."""
        if self._result is not None or self._error is not None:
            return
        self._result = result
        if not self._cancelled:
            self._wake()
        if self._on_success is not None:
            _run_callback(self._on_success, result)

    def set_error(self, error: ProducerError) -> None:
        """The producer's side: settle with ``error`` (the first settlement wins), name this
        send's id on it and run ``on_exception``."""
        if self._result is not None or self._error is not None:
            return
        if self.msg_id:  # this caller's own id, also for a member of a transparent batch
            error.msg_id = self.msg_id
        self._error = error
        if not self._cancelled:
            self._wake()
        if self._on_exception is not None:
            _run_callback(self._on_exception, error)

    def _wake(self) -> None:
        self._done = True
        waiters, self._waiters = self._waiters, None
        if waiters is not None:
            for waiter in waiters:
                if isinstance(waiter, anyio.Event):
                    waiter.set()
                elif not waiter.done():  # an awaiter cancelled meanwhile
                    waiter.set_result(None)
        callbacks, self._done_callbacks = self._done_callbacks, None
        if callbacks is not None:
            for entry in callbacks:
                self._call_soon(entry)

    def _call_soon(self, entry: tuple[DoneCallback, contextvars.Context]) -> None:
        """As asyncio runs a future's callbacks: on the loop, later; with no loop (trio),
        now, each guarded like the send's own callbacks."""
        fn, context = entry
        loop = self._loop or asyncio._get_running_loop()
        if loop is not None:
            loop.call_soon(fn, self, context=context)
        else:
            context.run(_run_callback, fn, self)

    def __repr__(self) -> str:
        if not self.done():
            return "SendFuture(pending)"
        if self._cancelled:
            return "SendFuture(cancelled)"
        if self._error is not None:
            return f"SendFuture(error={type(self._error).__name__})"
        return f"SendFuture(msg_id={self.msg_id}, result={self._result!r})"


_NEVER_ASYNC = (types.BuiltinFunctionType, types.BuiltinMethodType, types.MethodWrapperType)


def _check_callback(name: str, callback: Callable[[Any], None]) -> Any:
    """A callback ``send_async`` can run: a plain callable. An ``async def`` would only
    make a coroutine nobody awaits, so it is refused where it is given. Functions,
    methods and builtins are told apart by their code flags (a few dozen ns per send);
    anything else goes through ``inspect``."""
    kind = type(callback)
    if kind is types.FunctionType:
        is_async = bool(callback.__code__.co_flags & inspect.CO_COROUTINE)
    elif kind is types.MethodType:
        is_async = bool(callback.__func__.__code__.co_flags & inspect.CO_COROUTINE)  # type: ignore[attr-defined]
    elif isinstance(callback, _NEVER_ASYNC):
        return callback
    elif not callable(callback):
        raise TypeError(f"{name} must be a callable, got {callback!r}")
    else:
        is_async = inspect.iscoroutinefunction(callback) or inspect.iscoroutinefunction(
            getattr(callback, "__call__", None)  # noqa: B004 - an async __call__ method
        )
    if is_async:
        raise TypeError(
            f"{name}={callback!r} is an async function: send_async runs its callbacks "
            "without awaiting them. Give a plain function, or await the future instead "
            "(`result = await producer.send_async(msg)`, or `asyncio.wait`/`gather` on it)"
        )
    return callback


def _run_callback(callback: Callable[[Any], object], value: object) -> None:
    try:
        returned = callback(value)
    except Exception:
        log.exception("send_async callback %r raised; the producer carries on", callback)
        return
    if returned is not None and inspect.iscoroutine(returned):  # a lambda calling async code
        returned.close()  # never awaited: close it so no "never awaited" warning hides it
        log.error(
            "send_async callback %r returned a coroutine, which was not run: give a plain "
            "function, or await the future instead",
            callback,
        )


def closed_error(plan: SendPlan) -> ProducerClosedError:
    """The producer closed while the send ran (its fate is unknown once attempted)."""
    fate = Fate.UNKNOWN if plan.attempts else Fate.NOT_STORED
    return ProducerClosedError(
        "producer closed before the send finished", fate=fate, attempts=plan.attempts
    )
