"""An asyncio event loop running in a daemon thread of its own, for synchronous callers.

The blocking producer and the dev cluster's thread runner both sit on one: every call
from another thread is a coroutine submitted to the loop, waited for in the caller.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
_Closing = TypeVar("_Closing", bound="ClosesOnExit")


class LoopThread:
    """Starts the loop's thread at once; :meth:`stop` ends it (the loop is closed in it,
    after its async generators are finalised)."""

    __slots__ = ("loop", "thread")

    def __init__(self, name: str) -> None:
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self.loop = loop
        self.thread = threading.Thread(target=run, name=name, daemon=True)
        self.thread.start()
        ready.wait()  # running: a coroutine submitted from now on is not lost

    def is_alive(self) -> bool:
        return self.thread.is_alive()

    def is_current(self) -> bool:
        """Called from the loop's own thread (where waiting for the loop deadlocks)."""
        return threading.current_thread() is self.thread

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def call_soon(self, callback: Callable[[], object]) -> None:
        self.loop.call_soon_threadsafe(callback)

    def stop(self, timeout_s: float | None = None) -> None:
        """Stop the loop and wait up to ``timeout_s`` (``None``: for ever) for its thread."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout_s)


class ClosesOnExit:
    """``with obj:`` calls ``obj.close()`` on the way out; ``__enter__`` returns ``obj``."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _Closing) -> _Closing:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
