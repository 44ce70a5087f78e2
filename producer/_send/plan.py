"""The send loop as a pure state machine (rules S1-S11, A2-A5 of docs/semantics.md).

The I/O shell asks :meth:`SendPlan.next_attempt` before every attempt and gets a
:class:`Dispatch` (send to a freshly selected queue with this network timeout), a
:class:`Backoff` (wait, then ask again) or a :class:`Finish`. After the attempt it reports
what happened with :meth:`on_answer` (:meth:`on_written` for oneway) or :meth:`on_error`
and gets :class:`Retry` or :class:`Finish`. A Retry's back-off is owed by the plan: the
next :meth:`next_attempt` answers it as a :class:`Backoff` cut at the deadline, so whoever
runs the next attempt (the caller's coroutine or a task) waits it the same way.
One plan is one message: its attempt counter is shared by every re-dispatch, which is
what makes the async path's ``onExceptionImpl`` and the sync loop the same machine.
Nothing here reads a clock or a global random source.
"""

from __future__ import annotations

import enum
import random

import msgspec

from producer._remoting.namespace import unwrap
from producer._remoting.send_header import SendResponseHeader
from producer._types.message import MessageQueue
from producer._types.retry_policy import RetryPolicy
from producer._types.send_result import SendResult
from producer._types.send_status import SendStatus
from producer.errors import (
    AttemptOutcome,
    AttemptRecord,
    BrokerError,
    ConnectError,
    ConnectionLostError,
    Fate,
    ProducerError,
    RemoteProtocolError,
    RequestTimeout,
    SendTimeout,
    TransportError,
)


class SendMode(enum.Enum):
    SYNC = "sync"
    ASYNC = "async"
    ONEWAY = "oneway"

    # Hashed in C (identity is equality for members), not by Enum's Python __hash__:
    # every batched send's group key hashes its mode.
    __hash__ = object.__hash__


def max_attempts(mode: SendMode, *, keyed: bool, sync_retries: int, async_retries: int) -> int:
    """S1 / A2: how many attempts a send gets. A keyed send's queue is final (F5) and a
    oneway send has no answer to retry on, so each gets exactly one."""
    if keyed or mode is SendMode.ONEWAY:
        return 1
    return 1 + (sync_retries if mode is SendMode.SYNC else async_retries)


class Dispatch(msgspec.Struct, frozen=True):
    """Send attempt ``number`` (1-based) with this network timeout."""

    number: int
    timeout_ms: float


class Retry(msgspec.Struct, frozen=True):
    """Attempt again after ``backoff_ms`` (may be 0): :meth:`SendPlan.next_attempt`
    answers the back-off first, as a :class:`Backoff`."""

    backoff_ms: float


class Backoff(msgspec.Struct, frozen=True):
    """Wait ``seconds`` (the last :class:`Retry`'s back-off, never past the deadline), then
    ask :meth:`SendPlan.next_attempt` again."""

    seconds: float


class Finish(msgspec.Struct, frozen=True):
    """The send is over: ``error`` is set, or ``result`` (``None`` for a oneway send)."""

    result: SendResult | None = None
    error: ProducerError | None = None

    def outcome(self) -> SendResult | None:
        """The result (``None``: oneway), or the final error raised."""
        if self.error is not None:
            raise self.error
        return self.result


def outcome_of(error: ProducerError) -> AttemptOutcome:
    """How an attempt's error is recorded in the history."""
    if isinstance(error, BrokerError):
        return AttemptOutcome.BROKER_ERROR
    if isinstance(error, ConnectError):
        return AttemptOutcome.CONNECT_ERROR
    if isinstance(error, ConnectionLostError):
        return AttemptOutcome.CONNECTION_LOST
    if isinstance(error, RequestTimeout):
        return AttemptOutcome.TIMEOUT
    if isinstance(error, RemoteProtocolError):
        return AttemptOutcome.PROTOCOL_ERROR
    return AttemptOutcome.BROKER_ERROR if error.code is not None else AttemptOutcome.CONNECT_ERROR


class SendPlan:
    """The retry state of one message."""

    __slots__ = (
        "_backoff_ms",
        "_fate",
        "_finish",
        "_last_error",
        "_not_ok_result",
        "_rng",
        "attempts",
        "budget_ms",
        "deadline_ms",
        "last_broker",
        "last_result",
        "max_attempts",
        "mode",
        "namespace",
        "policy",
        "retry_not_store_ok",
    )

    def __init__(
        self,
        *,
        mode: SendMode,
        policy: RetryPolicy,
        max_attempts: int,
        deadline_ms: float,
        budget_ms: float,
        retry_not_store_ok: bool,
        rng: random.Random,
        namespace: str | None = None,
    ) -> None:
        self.mode = mode
        self.namespace = namespace  # results name the user's topic
        self.policy = policy
        self.max_attempts = max_attempts
        self.deadline_ms = deadline_ms
        self.budget_ms = budget_ms
        self.retry_not_store_ok = retry_not_store_ok
        self.attempts: list[AttemptRecord] = []
        self.last_broker: str | None = None
        self.last_result: SendResult | None = None
        self._rng = rng
        self._last_error: ProducerError | None = None
        self._not_ok_result: SendResult | None = None
        self._fate = Fate.NOT_STORED
        self._backoff_ms = 0.0  # owed by the last Retry, answered by next_attempt
        self._finish: Finish | None = None  # once decided, every next step

    # -- before an attempt ------------------------------------------------------------

    def next_attempt(self, now_ms: float) -> Dispatch | Backoff | Finish:
        """The back-off the last :class:`Retry` owes, cut at the deadline; then S2: stop
        with :class:`SendTimeout` once the deadline has passed. A finished plan answers its
        :class:`Finish` again."""
        if self._finish is not None:
            return self._finish
        if self._backoff_ms > 0:
            wait_ms = min(self._backoff_ms, self.deadline_ms - now_ms)
            self._backoff_ms = 0.0
            if wait_ms > 0:
                return Backoff(wait_ms / 1000.0)
        made = len(self.attempts)
        if made >= self.max_attempts:
            return self._give_up()
        remaining = self.deadline_ms - now_ms
        if remaining <= 0:
            if self._not_ok_result is not None:  # stored: report it, as Java does
                return Finish(result=self._not_ok_result)
            return Finish(error=self.timeout_error())
        timeout = self.policy.attempt_timeout_ms(remaining, self.max_attempts - made)
        return Dispatch(made + 1, timeout)

    def timeout_error(self) -> SendTimeout:
        """The budget ran out: a ``TimeoutError`` carrying the last attempt's error."""
        error = SendTimeout(
            f"send call timeout: its {self.budget_ms:g} ms budget (send_timeout_ms, or the "
            f"call's timeout_ms) ran out after {len(self.attempts)} attempt(s)",
            last_error=self._last_error,
            attempts=self.attempts,
        )
        error.fate = self._fate
        return error

    # -- after an attempt -------------------------------------------------------------

    def on_answer(
        self,
        queue: MessageQueue,
        status: SendStatus,
        header: SendResponseHeader,
        msg_id: str,
        latency_ms: float,
    ) -> Retry | Finish:
        """The broker stored the message; S6 decides whether a non-OK status is retried."""
        ok = status.is_ok
        outcome = AttemptOutcome.OK if ok else AttemptOutcome.NOT_STORED_OK
        self._record(queue, outcome, None if ok else status.response_code, latency_ms)
        if self.namespace is not None:
            topic = unwrap(queue.topic, self.namespace)
            queue = MessageQueue(topic, queue.broker_name, queue.queue_id)
        result = self.last_result = SendResult(
            status,
            msg_id,
            header.msg_id,
            queue,
            header.queue_offset,
            header.region_id,
            header.trace_on,
            header.transaction_id,
            tuple(self.attempts),
            header.recall_handle,
        )
        if ok:  # _finished's step, inline: every answered send ends here
            finish = self._finish = Finish(result=result)
            return finish
        self._not_ok_result = result
        if self.retry_not_store_ok and self._may_retry_broker_codes() and self._has_attempts_left():
            return Retry(0.0)
        return self._finished(Finish(result=result))

    def on_written(self, queue: MessageQueue, latency_ms: float) -> Finish:
        """A oneway frame reached the socket: that is all a oneway send can learn."""
        self._record(queue, AttemptOutcome.OK, None, latency_ms)
        return self._finished(Finish())

    def on_error(
        self,
        queue: MessageQueue,
        error: ProducerError,
        latency_ms: float,
        now_ms: float | None = None,
    ) -> Retry | Finish:
        """S4/S5/S9/S11 and A3: retry on a fresh queue, or finish with the error.

        An attempt that timed out at the deadline ran out of budget: that is S2's
        ``SendTimeout`` (carrying the timeout), not a bare attempt timeout.
        """
        self._record(queue, outcome_of(error), error.code, latency_ms)
        if error.fate is Fate.UNKNOWN:
            self._fate = Fate.UNKNOWN
        self._last_error = error
        budget_gone = now_ms is not None and now_ms >= self.deadline_ms
        if budget_gone and isinstance(error, RequestTimeout) and self._not_ok_result is None:
            return self._finished(Finish(error=self.timeout_error()))
        if not (self._is_retriable(error) and self._has_attempts_left()):
            return self._finished(self._give_up())
        backoff = self._backoff_ms = self._backoff_for(error)
        return Retry(backoff)

    def on_cancelled(self, queue: MessageQueue, latency_ms: float) -> None:
        self._record(queue, AttemptOutcome.CANCELLED, None, latency_ms)

    # -- rules ------------------------------------------------------------------------

    def _is_retriable(self, error: ProducerError) -> bool:
        if isinstance(error, BrokerError):
            if error.never_retried:
                return False
            return self._may_retry_broker_codes() and self.policy.is_retriable_code(error.code or 0)
        if isinstance(error, (TransportError, RemoteProtocolError)):
            return self.policy.retry_unknown_fate or error.fate is Fate.NOT_STORED
        return False

    def _may_retry_broker_codes(self) -> bool:
        return self.mode is SendMode.SYNC or self.policy.async_retries_broker_codes

    def _has_attempts_left(self) -> bool:
        return len(self.attempts) < self.max_attempts

    def _backoff_for(self, error: ProducerError) -> float:
        if error.code is None or error.code not in self.policy.backoff_codes:
            return 0.0
        return self.policy.backoff_ms(len(self.attempts), self._rng.random())

    def _give_up(self) -> Finish:
        """S6: a stored-but-not-OK result beats a later error; S9: else the last error."""
        if self._not_ok_result is not None:
            return Finish(result=self._not_ok_result)
        error = self._last_error
        assert error is not None, "give up without an attempt"
        error.with_attempts(self.attempts)
        error.fate = self._fate
        return Finish(error=error)

    def _finished(self, finish: Finish) -> Finish:
        self._finish = finish
        return finish

    def _record(
        self, queue: MessageQueue, outcome: AttemptOutcome, code: int | None, latency_ms: float
    ) -> None:
        self.attempts.append(
            AttemptRecord(queue.broker_name, queue.queue_id, outcome, code, latency_ms)
        )
        self.last_broker = queue.broker_name

    def __repr__(self) -> str:
        return (
            f"SendPlan({self.mode.value} attempts={len(self.attempts)}/{self.max_attempts} "
            f"last_broker={self.last_broker!r} fate={self._fate.value})"
        )
