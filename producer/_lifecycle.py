"""``async with`` and the life-cycle state of every client (started once, closed once).

Every client - producers, consumers, the dead-letter reader - passes through the same
states, one :class:`LifecycleState` each, kept in its public ``state``::

    NEW --start()--> RUNNING --aclose()--> CLOSING --> CLOSED
     |                                                   ^
     +------------------------aclose()-------------------+

``start`` is taken once, on a NEW client (a failed start leaves it NEW); ``aclose`` is
taken any number of times (again, or while closing: a no-op). The errors for a call in
the wrong state are made here, once: :meth:`AsyncLifecycle._refuse_start` and
:meth:`AsyncLifecycle._not_running`.

A subclass writes ``start`` and ``aclose``; entering starts, leaving closes. What a
closing client waits for is counted by one :class:`Outstanding`. One rule on
top, for every such object: when the body was cancelled (Ctrl-C in ``asyncio.run``) and
closing ends in a cancellation too, the body's own cancellation goes on alone, not with
a second one chained onto it (``aclose`` ran to its end all the same).
"""

from __future__ import annotations

import enum
from types import TracebackType
from typing import Any, ClassVar, TypeVar

import anyio

from producer.errors import LocalProtocolError, ProducerClosedError

_Self = TypeVar("_Self", bound="AsyncLifecycle")


class LifecycleState(enum.Enum):
    """Where a client is in its life: new -> running (``start``) -> closing -> closed
    (``aclose``; a client never started goes from new to closed)."""

    NEW = "new"
    RUNNING = "running"
    CLOSING = "closing"
    CLOSED = "closed"


#: The states in which ``aclose`` has nothing left to do.
ENDED = frozenset({LifecycleState.CLOSING, LifecycleState.CLOSED})


class AsyncLifecycle:
    """``async with x`` is ``await x.start()`` ... ``await x.aclose()``; ``x.state`` says
    where ``x`` is (a subclass sets it: NEW in ``__init__``, then as it goes)."""

    __slots__ = ()

    #: Where this client is in its life cycle.
    state: LifecycleState
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

    def _runs_once(self) -> str:
        name = type(self).__name__
        return (
            f"a {name} is started once and closed once (closing again is a no-op); "
            f"create a new {name} to start again"
        )

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
