"""``async with`` for every object that is started once and closed once.

A subclass writes ``start`` and ``aclose``; entering starts, leaving closes. One rule on
top, for every such object: when the body was cancelled (Ctrl-C in ``asyncio.run``) and
closing ends in a cancellation too, the body's own cancellation goes on alone, not with
a second one chained onto it (``aclose`` ran to its end all the same).
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, TypeVar

import anyio

_Self = TypeVar("_Self", bound="AsyncLifecycle")


class AsyncLifecycle:
    """``async with x`` is ``await x.start()`` ... ``await x.aclose()``."""

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


async def exit_noting_cancel(context: Any) -> BaseException | None:
    """Exit an async context entered at start; a cancellation of the closing task is
    returned, not raised, so that closing goes on to the end before it propagates."""
    try:
        await context.__aexit__(None, None, None)
    except anyio.get_cancelled_exc_class() as exc:
        return exc
    return None
