"""One send as one object: what it sends and decides (its job, its plan) and what it
holds (its in-flight slot, its flush ticket, its caller).

Theory of operation
-------------------
A :class:`Send` is made by :meth:`Sender.begin` with its flush ticket taken (``flush()``
waits for it from then on). It passes through these states, each move an event, and only
along the table :data:`_NEXT` below, (state, event) -> state, as h11 keeps its
connection's (anything else is a bug of ours and raises)::

    WAITING --admit--> ADMITTED --attempt out--> OUT --Retry--> ADMITTED ...
       |                  |                        |
       +------------------+-------- finish --------+----------> FINISHED

* WAITING: it holds its ticket, not yet its in-flight slot (A7): no room yet, or nobody
  has asked. A send that holds no slot of its own (a transparent batch: its members hold
  theirs) is admitted at once.
* ADMITTED: it holds its slot; no attempt is out (before the first, or backing off
  between two).
* OUT: an attempt is out (:class:`~producer._send.attempt.Attempt`); it comes back to
  ADMITTED when its plan answers Retry, or the send finishes.
* FINISHED: :meth:`Send.finish` ran, once: it freed the slot if one was held, ended the
  ticket and resolved the caller (its :class:`SendFuture`, or the value the awaiting
  caller returns or raises). A second ``finish`` is a bug and raises.

Whoever drives the send (the lone caller's coroutine, a loop future's callback, a task
of the producer) only moves it along; the object alone releases what it holds, so no
path owes a release another path might also make.
"""

from __future__ import annotations

import enum

import msgspec

from producer._send.backpressure import InFlightLimiter
from producer._send.future import SendFuture
from producer._send.job import SendJob
from producer._send.plan import SendPlan
from producer._send.tracker import SendTracker
from producer._types.send_result import SendResult
from producer.errors import AttemptRecord, LocalProtocolError, ProducerError

__all__ = ["Ending", "Send", "SendEvent", "SendState", "answer"]

#: How a send ended: its result (``None`` for a oneway send, which gets no answer) or
#: its final error.
Ending = SendResult | ProducerError | None


class SendState(enum.Enum):
    """Where a :class:`Send` is (see the theory of operation)."""

    WAITING = "waiting"
    ADMITTED = "admitted"
    OUT = "out"
    FINISHED = "finished"

    # Identity is equality for enum members: hash in C, not Enum's Python __hash__ (one
    # Python call per table lookup, on every send).
    __hash__ = object.__hash__


class SendEvent(enum.Enum):
    """What moves a :class:`Send` on."""

    ADMIT = "admit"  # its in-flight slot taken
    ATTEMPT_OUT = "attempt out"
    ATTEMPT_BACK = "attempt back"  # a Retry, or an attempt abandoned
    FINISH = "finish"

    __hash__ = object.__hash__  # as SendState's


_W, _A, _O, _F = SendState.WAITING, SendState.ADMITTED, SendState.OUT, SendState.FINISHED
#: The only moves there are: (state, event) -> the next state.
_NEXT: dict[tuple[SendState, SendEvent], SendState] = {
    (_W, SendEvent.ADMIT): _A,
    (_W, SendEvent.FINISH): _F,
    (_A, SendEvent.ATTEMPT_OUT): _O,
    (_A, SendEvent.FINISH): _F,
    (_O, SendEvent.ATTEMPT_BACK): _A,
    (_O, SendEvent.FINISH): _F,
}
_HOLDING = frozenset({_A, _O})


class Send:
    """One send: its job and plan, the slot and ticket it holds, the caller it resolves."""

    __slots__ = (
        "_limiter",
        "_tracker",
        "before",
        "future",
        "job",
        "plan",
        "size",
        "state",
        "ticket",
    )

    def __init__(
        self,
        job: SendJob,
        plan: SendPlan,
        limiter: InFlightLimiter,
        tracker: SendTracker,
        future: SendFuture | None = None,
    ) -> None:
        self.job = job
        self.plan = plan
        self.future = future  # None: the caller awaits finish's value
        self._limiter = limiter
        self._tracker = tracker
        self.ticket = tracker.begin()
        # A transparent batch holds no slot: each member holds its own.
        self.size = 0 if job.members else len(job.prepared.body)
        self.state = SendState.WAITING
        #: Attempts made for it before (a batch it was part of), prefixed to its own.
        self.before: tuple[AttemptRecord, ...] = ()

    def _on(self, event: SendEvent) -> None:
        try:
            self.state = _NEXT[self.state, event]
        except KeyError:
            raise LocalProtocolError(
                f"internal error: a send cannot go from {self.state.value} on {event.value}"
            ) from None

    def try_admit(self) -> bool:
        """Take the in-flight slot now if there is room (and nobody waits ahead)."""
        if self.state is not SendState.WAITING:
            self._on(SendEvent.ADMIT)  # raises: a slot is taken once
        if self.size and not self._limiter.try_acquire(self.size):
            return False
        self.state = SendState.ADMITTED
        return True

    async def admit(self, timeout_ms: float) -> None:
        """Take the slot, waiting in line at most ``timeout_ms`` (raises as the limiter
        does: the send is then still WAITING, for its driver to finish)."""
        if self.size:
            await self._limiter.acquire(self.size, timeout_ms)
        self._on(SendEvent.ADMIT)

    def attempt_out(self) -> None:
        """An attempt went out."""
        try:  # _on's step, inline on every send's path; _on raises the error
            self.state = _NEXT[self.state, SendEvent.ATTEMPT_OUT]
        except KeyError:
            self._on(SendEvent.ATTEMPT_OUT)

    def attempt_back(self) -> None:
        """The attempt out came back and the send goes on (a Retry), or it was abandoned."""
        self._on(SendEvent.ATTEMPT_BACK)

    def finish(self, outcome: Ending) -> Ending:
        """The send is over: free its slot (if held), end its ticket, resolve its caller
        (its future; or return ``outcome``, an error naming the send's ``msg_id``, for the
        awaiting caller to return or raise: :func:`answer`). Once only."""
        holding = self.state in _HOLDING
        try:  # _on's step, inline on every send's path; _on raises the error
            self.state = _NEXT[self.state, SendEvent.FINISH]
        except KeyError:
            self._on(SendEvent.FINISH)
        if holding and self.size:
            self._limiter.release(self.size)
        self._tracker.end(self.ticket)
        before = self.before
        if type(outcome) is SendResult:  # the common case first, with no isinstance call
            if before:
                outcome = msgspec.structs.replace(outcome, attempts=before + outcome.attempts)
            if self.future is not None:
                self.future.set_result(outcome)
        elif outcome is not None:
            assert isinstance(outcome, ProducerError), "an outcome is a result or an error"
            outcome = self.job.name_in(
                outcome.with_attempts(before + outcome.attempts) if before else outcome
            )
            if self.future is not None:
                self.future.set_error(outcome)
        return outcome

    @property
    def finished(self) -> bool:
        """Whether :meth:`finish` ran."""
        return self.state is SendState.FINISHED

    def __repr__(self) -> str:
        return f"Send({self.job.prepared.msg_id}, {self.state.value}, ticket={self.ticket})"


def answer(outcome: Ending) -> SendResult | None:
    """What an awaiting caller gets from a finished send: the result, or its error raised."""
    if isinstance(outcome, ProducerError):
        raise outcome
    return outcome
