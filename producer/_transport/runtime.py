"""Which event loop library runs us, decided once per producer (or cluster) start.

Everything that differs between asyncio (uvloop included) and trio hangs off the
:class:`Runtime` returned here: the connection backend, the loop's clock, and how
background sends are spawned. Nothing else asks sniffio.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from ssl import SSLContext

import anyio
import sniffio

from producer._remoting.command import OpaqueAllocator
from producer._remoting.request_table import RequestHandler, not_supported
from producer._transport.anyio_backend import AnyioConnector
from producer._transport.asyncio_backend import AsyncioConnector
from producer._transport.base import Connector


@dataclass(frozen=True, slots=True)
class Runtime:
    """The running loop's library and the pieces chosen for it."""

    library: str  # sniffio's name: "asyncio" or "trio"
    loop_time: Callable[[], float]  # seconds on the loop's monotonic clock
    #: Whether the caller runs on the loop (or trio run) this runtime was made on.
    is_current: Callable[[], bool]
    asyncio_loop: asyncio.AbstractEventLoop | None = None  # None under trio

    @property
    def is_asyncio(self) -> bool:
        """asyncio (or uvloop): the ``asyncio.Protocol`` backend and native tasks apply."""
        return self.library == "asyncio"

    def connector(
        self,
        *,
        opaques: OpaqueAllocator | None = None,
        handler: RequestHandler = not_supported,
        ssl: SSLContext | None = None,
    ) -> Connector:
        """The backend for this loop; ``handler`` serves requests the peer starts; with
        ``ssl`` every connection is TLS, verified against the address's host."""
        if self.is_asyncio:
            return AsyncioConnector(opaques=opaques, handler=handler, ssl=ssl)
        return AnyioConnector(opaques=opaques, handler=handler, ssl=ssl)


def current_runtime() -> Runtime:
    """The runtime of the loop this is called from (call it inside the loop)."""
    library = sniffio.current_async_library()
    if library == "asyncio":
        loop = asyncio.get_running_loop()
        # the loop's own time function: anyio.current_time costs a lookup per reading
        return Runtime(library, loop.time, _on_asyncio_loop(loop), loop)
    return Runtime(library, anyio.current_time, _in_trio_run(_trio_root()))


def _on_asyncio_loop(loop: asyncio.AbstractEventLoop) -> Callable[[], bool]:
    thread = threading.get_ident()

    def is_current() -> bool:
        # One asyncio loop runs per thread at a time, so the thread and the loop running
        # identify it: a third of asyncio.get_running_loop()'s cost (a getpid() on 3.11),
        # and this runs on every send.
        return threading.get_ident() == thread and loop.is_running()

    return is_current


def _in_trio_run(root: object) -> Callable[[], bool]:
    def is_current() -> bool:
        try:
            return _trio_root() is root
        except RuntimeError:  # not inside a trio run
            return False

    return is_current


def _trio_root() -> object:
    import trio  # only ever called under trio

    return trio.lowlevel.current_root_task()
