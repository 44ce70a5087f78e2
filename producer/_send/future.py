"""The handle ``send_async`` returns: awaitable, runtime-neutral, completed exactly once."""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from typing import Any

import anyio

from producer._send.result import SendResult
from producer.errors import LocalProtocolError, ProducerError

log = logging.getLogger("producer")

OnSuccess = Callable[[SendResult], object]
OnException = Callable[[ProducerError], object]


class SendFuture:
    """The eventual outcome of one ``send_async``.

    ``await future`` returns the :class:`SendResult` or raises the send's error. The
    callbacks given to ``send_async`` run first, exactly one of them exactly once; one that
    raises is logged and changes nothing (A6).
    """

    __slots__ = ("_done", "_error", "_on_exception", "_on_success", "_result", "msg_id")

    def __init__(
        self,
        on_success: OnSuccess | None = None,
        on_exception: OnException | None = None,
        *,
        msg_id: str = "",
    ) -> None:
        self.msg_id = msg_id  # the UNIQ_KEY, known before the send: correlate failures by it
        self._done = anyio.Event()
        self._result: SendResult | None = None
        self._error: ProducerError | None = None
        self._on_success = on_success
        self._on_exception = on_exception

    def done(self) -> bool:
        return self._done.is_set()

    def result(self) -> SendResult:
        """The result; raises the send's error, or LocalProtocolError if not done yet."""
        if not self.done():
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
        await self._done.wait()
        return self.result()

    def __await__(self) -> Generator[Any, None, SendResult]:
        return self.wait().__await__()

    # -- completion (the producer's side) ----------------------------------------------

    def set_result(self, result: SendResult) -> None:
        if self.done():
            return
        self._result = result
        self._done.set()
        if self._on_success is not None:
            _run_callback(self._on_success, result)

    def set_error(self, error: ProducerError) -> None:
        if self.done():
            return
        self._error = error
        self._done.set()
        if self._on_exception is not None:
            _run_callback(self._on_exception, error)

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
