"""The in-flight table of one connection, shared by both backends: no I/O, no clock.

It holds, keyed by opaque, every request awaiting its response and every oneway frame
not yet written; the queue of frames not yet handed to the socket; and a min-heap of
deadlines for the connection's single sweeper. Requests the peer starts (a broker's
NOTIFY_CONSUMER_IDS_CHANGED or CHECK_TRANSACTION_STATE) go to a :data:`RequestHandler`;
its answer, if the request wants one, is queued like any frame. A backend feeds it bytes
and ``now`` and carries out what it returns (frames to write, the next deadline to wake at).

Why a heap with lazy deletion rather than a periodic scan: the producer checks its send
budget to ~50 ms, so expiries must fire within a millisecond or two of their deadline.
Scanning 10k entries every few ms costs more than the requests; a heap costs O(log n)
per request and wakes exactly once per expiry. Entries that finish before their deadline
are not searched for in the heap; they are skipped when they reach the top, and the heap
is rebuilt from live entries when stale ones outnumber them (amortised O(1)).
"""

from __future__ import annotations

import enum
import heapq
import math
from collections.abc import Callable
from typing import Protocol

import msgspec

from producer._remoting.command import OpaqueAllocator, OutgoingRequest, RemotingCommand
from producer._remoting.frame_decoder import FrameDecoder
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.request_codes import FLAG_ONEWAY, FLAG_RESPONSE, LanguageCode
from producer._response_codes import ResponseCode
from producer.errors import ConnectionLostError, Fate, RequestTimeout

# Rebuild the heap once it holds this many more items than there are live entries.
_HEAP_SLACK = 1024


class EntryState(enum.Enum):
    QUEUED = "queued"  # in our write queue: definitely not sent
    WRITTEN = "written"  # handed to the socket: the peer may have it
    DONE = "done"  # answered, failed, expired or cancelled


class Waiter(Protocol):
    """Where an entry's outcome goes: an ``asyncio.Future`` or the anyio backend's own."""

    def done(self) -> bool: ...

    def cancelled(self) -> bool: ...

    def set_result(self, result: RemotingCommand | None, /) -> None: ...

    def set_exception(self, exception: BaseException, /) -> None: ...


#: Serves a request the peer started: ``handler(address, request)`` returns the response
#: (its opaque and flags are set here), or ``None`` to send nothing. It must not block.
RequestHandler = Callable[[str, RemotingCommand], "RemotingCommand | None"]


def not_supported(address: str, request: RemotingCommand) -> RemotingCommand:
    """What Java's remoting answers when no processor is registered for a request code."""
    return RemotingCommand(
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        remark=f" request type {request.code} not supported",
    )


class ConnectionStats:
    """Counters of one connection (for tests, metrics and ``repr``)."""

    __slots__ = (
        "dropped_responses",
        "flushes",
        "frames_written",
        "peer_requests",
        "responses",
        "timeouts",
    )

    def __init__(self) -> None:
        self.flushes = 0  # socket writes (one per coalesced batch)
        self.frames_written = 0
        self.responses = 0  # matched to a waiting request
        self.dropped_responses = 0  # no request waits for that opaque (late, unknown)
        self.peer_requests = 0  # requests the peer started (served by the handler)
        self.timeouts = 0

    def __repr__(self) -> str:
        fields = " ".join(f"{name}={getattr(self, name)}" for name in self.__slots__)
        return f"ConnectionStats({fields})"


class Entry(msgspec.Struct, eq=False):
    """One request (or oneway frame) on its way. A struct (made in C, compared by
    identity): one is made for every request."""

    opaque: int
    frame: list[bytes]
    deadline: float
    timeout_ms: float | None
    waiter: Waiter
    oneway: bool = False
    state: EntryState = EntryState.QUEUED

    @property
    def is_written(self) -> bool:
        return self.state is EntryState.WRITTEN


class InFlight:
    """Opaque table, write queue and deadline heap of one connection."""

    __slots__ = (
        "_decoder",
        "_handler",
        "_heap",
        "_opaques",
        "_pending",
        "_queue",
        "_replies",
        "address",
        "closed",
        "stats",
    )

    def __init__(
        self, address: str, opaques: OpaqueAllocator, handler: RequestHandler = not_supported
    ) -> None:
        self.address = address
        self._handler = handler
        self._replies: list[bytes] = []  # answers to the peer's requests, not yet written
        self.stats = ConnectionStats()
        self.closed: ConnectionLostError | None = None  # set once: why the connection ended
        self._opaques = opaques
        self._pending: dict[int, Entry] = {}
        self._queue: list[Entry] = []
        self._heap: list[tuple[float, int]] = []
        # Holds at most one partial frame (<= MAX_FRAME_BYTES) between reads: every whole
        # frame is dispatched in the same call, so the read backlog is bounded by design.
        self._decoder = FrameDecoder()

    def __len__(self) -> int:
        return len(self._pending)

    def __contains__(self, opaque: int) -> bool:
        return opaque in self._pending

    @property
    def scheduled(self) -> int:
        """Deadline-heap items, stale ones included (bounded by ~2x pending + slack)."""
        return len(self._heap)

    @property
    def queued(self) -> int:
        """Frames waiting for the writer (including ones cancelled since)."""
        return len(self._queue) + len(self._replies)

    # -- requests in ---------------------------------------------------------------------

    def prepare(
        self,
        command: OutgoingRequest,
        timeout_ms: float | None,
        now: float,
        waiter: Waiter,
        *,
        oneway: bool = False,
    ) -> Entry:
        """Give ``command`` a fresh opaque, encode it and queue it; raise if it cannot go."""
        if self.closed is not None:
            raise ConnectionLostError(
                f"connection to {self.address} is closed; request not sent", written=False
            ) from self.closed
        if timeout_ms is not None and not timeout_ms > 0:
            raise RequestTimeout(
                f"no time left to send to {self.address} (timeout {timeout_ms} ms)",
                fate=Fate.NOT_STORED,
            )
        opaque = self._opaques.allocate()
        if opaque in self._pending:  # only after the int32 range wrapped
            opaque = self._next_opaque()
        command.opaque = opaque
        if oneway:
            command.flag |= FLAG_ONEWAY
        deadline = math.inf if timeout_ms is None else now + timeout_ms / 1000.0
        entry = Entry(opaque, command.frame_parts(), deadline, timeout_ms, waiter, oneway)
        self._pending[opaque] = entry
        self._queue.append(entry)
        if deadline != math.inf:
            heap = self._heap
            heapq.heappush(heap, (deadline, opaque))
            size = len(heap)  # the pending count only matters past the slack
            if size > _HEAP_SLACK and size > 2 * len(self._pending) + _HEAP_SLACK:
                self._rebuild_heap()
        return entry

    def _next_opaque(self) -> int:
        opaque = self._opaques.allocate()
        while opaque in self._pending:  # only after the int32 range wrapped
            opaque = self._opaques.allocate()
        return opaque

    def discard(self, entry: Entry) -> None:
        """The caller gave up (cancelled): forget the entry; never write it if still queued."""
        if self._pending.get(entry.opaque) is entry:
            del self._pending[entry.opaque]
        entry.state = EntryState.DONE
        entry.frame = []

    # -- the writer ----------------------------------------------------------------------

    def take_frames(self) -> tuple[list[bytes], list[Entry]]:
        """Everything queued, marked written: ``(buffers, oneway entries among them)``.

        The buffers are whole frames in order (a frame may span several, its body kept
        apart). Call :meth:`confirm_oneways` with the second list once the write went through.
        """
        buffers, self._replies = self._replies, []
        count = len(buffers) if buffers else 0  # replies are rare: no call without them
        oneways: list[Entry] = []
        for entry in self._queue:
            if entry.state is EntryState.QUEUED:
                if entry.waiter.cancelled():  # its caller gave up before it was written
                    self.discard(entry)
                    continue
                entry.state = EntryState.WRITTEN
                buffers += entry.frame
                count += 1
                entry.frame = []  # the socket holds its own reference now
                if entry.oneway:
                    oneways.append(entry)
        self._queue = []
        if count:
            self.stats.flushes += 1
            self.stats.frames_written += count
        return buffers, oneways

    def confirm_oneways(self, oneways: list[Entry]) -> None:
        for entry in oneways:
            if entry.state is EntryState.WRITTEN:  # not failed by a close meanwhile
                self.discard(entry)
                if not entry.waiter.done():
                    entry.waiter.set_result(None)

    # -- the reader ----------------------------------------------------------------------

    def data_received(self, data: bytes | bytearray | memoryview) -> bool:
        """Decode and dispatch; ``True`` when answers to the peer were queued (flush them).

        Raises :class:`RemoteProtocolError` on bad bytes.
        """
        replied = False
        for command in self._decoder.feed(data):
            if command.flag & FLAG_RESPONSE:  # is_response, without the property's call
                self._complete(command)
            else:
                replied |= self._serve(command)
        return replied

    def _serve(self, request: RemotingCommand) -> bool:
        self.stats.peer_requests += 1
        try:
            response = self._handler(self.address, request)
        except Exception as exc:  # a handler bug must not kill the connection
            response = RemotingCommand(ResponseCode.SYSTEM_ERROR, remark=repr(exc))
        if response is None or request.is_oneway or self.closed is not None:
            return False
        response.opaque = request.opaque
        response.flag |= FLAG_RESPONSE
        response.language = LanguageCode.PYTHON
        response.serialize_type = request.serialize_type
        self._replies.append(encode_frame(response))
        return True

    def _complete(self, response: RemotingCommand) -> None:
        entry = self._pending.get(response.opaque)
        if entry is None or entry.oneway or entry.state is not EntryState.WRITTEN:
            self.stats.dropped_responses += 1  # late (timed out, cancelled) or bogus
            return
        del self._pending[response.opaque]
        entry.state = EntryState.DONE
        self.stats.responses += 1
        if not entry.waiter.done():
            entry.waiter.set_result(response)

    # -- deadlines -----------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        """The earliest live deadline (dropping stale heap items on the way), or ``None``."""
        heap, pending = self._heap, self._pending
        while heap:
            deadline, opaque = heap[0]
            entry = pending.get(opaque)
            if entry is not None and entry.deadline == deadline:
                return deadline
            heapq.heappop(heap)
        return None

    def expire(self, now: float) -> int:
        """Fail every entry whose deadline is ``<= now`` with :class:`RequestTimeout`."""
        heap, pending = self._heap, self._pending
        expired = 0
        while heap and heap[0][0] <= now:
            _, opaque = heapq.heappop(heap)
            entry = pending.get(opaque)
            if entry is None or entry.deadline > now:
                continue  # finished already, or a newer entry that reused the opaque
            del pending[opaque]
            self._fail(entry, self._timeout_error(entry))
            expired += 1
        self.stats.timeouts += expired
        return expired

    def _timeout_error(self, entry: Entry) -> RequestTimeout:
        if entry.is_written:
            detail, fate = "request written, fate unknown", Fate.UNKNOWN
        else:
            detail, fate = "request never written, held back by flow control", Fate.NOT_STORED
        return RequestTimeout(
            f"no response from {self.address} within {entry.timeout_ms:g} ms "
            f"(opaque {entry.opaque}; {detail})",
            fate=fate,
        )

    def _rebuild_heap(self) -> None:
        self._heap = [(e.deadline, o) for o, e in self._pending.items() if e.deadline != math.inf]
        heapq.heapify(self._heap)

    # -- the end -------------------------------------------------------------------------

    def close(self, reason: str, cause: BaseException | None = None) -> bool:
        """Fail everything pending with :class:`ConnectionLostError`; ``False`` if already closed.

        Each error says whether its request was written (fate unknown) or not (definitely
        not sent); ``cause`` (e.g. the :class:`RemoteProtocolError`) becomes its ``__cause__``.
        """
        if self.closed is not None:
            return False
        self.closed = ConnectionLostError(reason, written=False)
        self.closed.__cause__ = cause
        pending, self._pending = self._pending, {}
        self._queue, self._heap, self._replies = [], [], []
        for entry in pending.values():
            written = entry.is_written
            detail = "request written, fate unknown" if written else "request never written"
            error = ConnectionLostError(f"{reason} ({detail})", written=written)
            error.__cause__ = cause
            self._fail(entry, error)
        return True

    @staticmethod
    def _fail(entry: Entry, error: BaseException) -> None:
        entry.state = EntryState.DONE
        entry.frame = []
        if not entry.waiter.done():
            entry.waiter.set_exception(error)

    def __repr__(self) -> str:
        state = "open" if self.closed is None else "closed"
        return (
            f"InFlight({self.address} {state} pending={len(self._pending)} "
            f"queued={len(self._queue)} heap={len(self._heap)} {self.stats!r})"
        )
