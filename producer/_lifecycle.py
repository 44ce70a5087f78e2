"""``async with`` and the life-cycle state of every client (started once, closed once).

Every client - producers, consumers, the dead-letter reader - passes through the same
states, one :class:`LifecycleState` each, kept in its public ``state``::

    NEW --start()--> RUNNING --aclose()--> CLOSING --> CLOSED
     |                                                   ^
     +------------------------aclose()-------------------+

``start`` is taken once, on a NEW client (a failed start leaves it NEW); ``aclose`` is
taken any number of times (again, or while closing: a no-op). The moves are made here,
along the diagram's arrows only (``_MOVES``; any other is refused): a client's ``start``
ends with :meth:`AsyncLifecycle._now_running`, its ``aclose`` begins with
:meth:`AsyncLifecycle._close_begins` and ends with :meth:`AsyncLifecycle._now_closed`. The errors
for a call in the wrong state are made here too, once: :meth:`AsyncLifecycle._refuse_start`
and :meth:`AsyncLifecycle._not_running`.

A subclass writes ``start`` and ``aclose``; entering starts, leaving closes. What a
closing client waits for is counted by one :class:`Outstanding`. One rule on
top, for every such object: when the body was cancelled (Ctrl-C in ``asyncio.run``) and
closing ends in a cancellation too, the body's own cancellation goes on alone, not with
a second one chained onto it (``aclose`` ran to its end all the same).
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, ClassVar, TypeVar

import anyio

from producer._types.lifecycle_state import LifecycleState
from producer.errors import LocalProtocolError, ProducerClosedError

_Self = TypeVar("_Self", bound="AsyncContext")


#: The states in which ``aclose`` has nothing left to do.
ENDED = frozenset({LifecycleState.CLOSING, LifecycleState.CLOSED})

_NEW, _RUNNING, _CLOSING, _CLOSED = LifecycleState
_MOVES = {  # the diagram's arrows: where each state may go
    _NEW: frozenset({_RUNNING, _CLOSED}),
    _RUNNING: frozenset({_CLOSING}),
    _CLOSING: frozenset({_CLOSED}),
    _CLOSED: frozenset(),
}


class AsyncContext:
    """``async with x`` is ``await x.start()`` ... ``await x.aclose()``, with the rule on
    a cancelled body above (the dev cluster, which may start again, uses this alone)."""

    __slots__ = ()

    async def start(self) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError

    async def __aenter__(self: _Self) -> _Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self.aclose()
        except anyio.get_cancelled_exc_class():
            if not isinstance(exc, anyio.get_cancelled_exc_class()):
                raise


class AsyncLifecycle(AsyncContext):
    """A client used as ``async with x``; ``x.state`` says where ``x`` is (NEW until its
    ``start`` or ``aclose`` moves it)."""

    #: Where this client is in its life cycle.
    state: LifecycleState = LifecycleState.NEW
    #: How errors name a client of this class ("producer", "consumer").
    _kind: ClassVar[str] = "client"

    def _refuse_start(self) -> None:
        """Raise the error for ``start()`` on a client that is not NEW: it runs once."""
        if self.state is not LifecycleState.NEW:
            raise LocalProtocolError(
                f"start() on a {self.state.value} {self._kind}: {self._runs_once()}"
            )

    def _not_running(self) -> ProducerClosedError:
        """The error for a call that needs a running client, saying why it is not and
        what to do (start it first; or create a new one)."""
        name = type(self).__name__
        label = f"{self._kind} {getattr(self, 'group', '')!r}"
        if self.state is LifecycleState.NEW:
            return ProducerClosedError(
                f"{label} is not started: use `async with {name}(...)` or call its start() first"
            )
        return ProducerClosedError(f"{label} is {self.state.value}: {self._runs_once()}")

    def _now_running(self) -> None:
        """The end of a ``start()`` that succeeded: RUNNING."""
        self._move(LifecycleState.RUNNING)

    def _close_begins(self) -> bool:
        """The top of ``aclose()``: ``True`` when there is closing to do (the client is
        CLOSING now); ``False`` when it is closing or closed already (``aclose`` again: a
        no-op), or was never started (it opened nothing: CLOSED now)."""
        if self.state in ENDED:
            return False
        if self.state is LifecycleState.NEW:
            self._move(LifecycleState.CLOSED)
            return False
        self._move(LifecycleState.CLOSING)
        return True

    def _now_closed(self) -> None:
        """The end of ``aclose()``: CLOSED."""
        self._move(LifecycleState.CLOSED)

    def _move(self, to: LifecycleState) -> None:
        if to not in _MOVES[self.state]:  # e.g. a start that ends after a close began
            raise LocalProtocolError(
                f"a {self._kind} cannot go from {self.state.value} to {to.value}: "
                f"{self._runs_once()}"
            )
        self.state = to

    def _runs_once(self) -> str:
        name = type(self).__name__
        return (
            f"a {name} is started once and closed once (closing again is a no-op); "
            f"create a new {name} to start again"
        )


class Outstanding:
    """Work a client has running or waiting to run (consumption tasks, transactions being
    executed), counted so that closing can wait until there is none (:meth:`wait_idle`)."""

    __slots__ = ("_idle", "count")

    def __init__(self) -> None:
        self.count = 0
        self._idle = anyio.Event()
        self._idle.set()

    def __repr__(self) -> str:
        return f"Outstanding({self.count})"

    def enter(self, count: int = 1) -> None:
        """``count`` more pieces of work begin."""
        if self.count == 0 and count:
            self._idle = anyio.Event()
        self.count += count

    def leave(self) -> None:
        """One piece of work ended."""
        self.count -= 1
        if self.count == 0:
            self._idle.set()

    async def wait_idle(self) -> None:
        """Until no work is outstanding (at once when none is)."""
        await self._idle.wait()


async def exit_noting_cancel(context: Any) -> BaseException | None:
    """Exit an async context entered at start; a cancellation of the closing task is
    returned, not raised, so that closing goes on to the end before it propagates."""
    try:
        await context.__aexit__(None, None, None)
    except anyio.get_cancelled_exc_class() as exc:
        return exc
    return None
