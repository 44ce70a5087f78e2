"""Transparent batching: concurrent sends to one topic leave as one SEND_BATCH_MESSAGE.

A send made while others are in flight opens its topic's *turn* for this loop turn: sends
to the same topic made before the flusher runs (the rest of this loop turn, or
``batch_linger_ms``) join a pending group, and the flusher hands each group on whole: it
is dealt over the topic's queues, and each queue's share split by the caps on count and
bytes (:meth:`Accumulator.chunks`) - a share of one is sent alone. A send made when no other
is in flight goes out at once and alone, exactly as without batching, and opens no turn
(so a caller sending one message at a time waits no longer and pays nothing for
batching); a send made while others are in flight opens the turn or joins it
(more sends are coming: the answers of those wake their callers), so at 4-16 in flight
no send of a turn pays for a request of its own.

On asyncio the flusher is one ``call_soon`` (``call_later`` with a linger) per turn that
opened a group, no task: it runs before anything the turn's I/O wakes, so a caller
sending one message at a time, whose next send follows its answer, always finds the
turn closed and never joins a group of one (a task's wake-up took two or three turns,
and half such sends joined one, at a task, a future and three callbacks more each).
Under trio it is a task woken by an event.

Members of one group share what one batch can carry for all: topic, mode (sync / async),
budget and ``wait_store_msg_ok``. Members made in the same turn with the same budget have
deadlines within that turn of each other, so the batch's deadline (its earliest
member's) takes nothing from any of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

import anyio
import msgspec

from producer._remoting.producer_requests import PreparedMessage
from producer._send.future import SendFuture
from producer._send.plan import SendMode
from producer._send.send import Send
from producer._types.message import Message

#: A batch body's bytes around each message (five int32s and an int16).
ITEM_OVERHEAD = 22


class GroupKey(msgspec.Struct, frozen=True):
    """What a group's messages share. A frozen struct (made and hashed in C): one is made
    for every batched send."""

    topic: str
    mode: SendMode
    budget_ms: float
    wait_store_msg_ok: bool


class Member(msgspec.Struct, eq=False):
    """One caller's send waiting in (or sent with) a group: the send holds its own
    in-flight slot, flush ticket and future, and finishes with its share of the outcome."""

    send: Send
    sent: bool = False  # handed to a batch (or sent alone): it is no longer pending
    cancelled: bool = False  # its caller gave up before it was sent: leave it out

    @property
    def prepared(self) -> PreparedMessage:
        return self.send.job.prepared

    @property
    def message(self) -> Message:
        return self.send.job.message

    @property
    def deadline_ms(self) -> float:
        return self.send.plan.deadline_ms

    @property
    def future(self) -> SendFuture:
        future = self.send.future
        assert future is not None, "a member's caller has its future"
        return future


Launch = Callable[[GroupKey, list[Member]], None]


class Accumulator:
    """The pending groups, and the flusher that hands them to ``launch`` once per turn."""

    __slots__ = (
        "_groups",
        "_handle",
        "_launch",
        "_linger_s",
        "_loop",
        "_max_bytes",
        "_max_messages",
        "_wake",
    )

    def __init__(
        self,
        launch: Launch,
        *,
        max_messages: int,
        max_bytes: int,
        linger_ms: float,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        """``loop``: the producer's asyncio loop (flushes are its callbacks), or ``None``
        (trio: :meth:`run` is the flusher task)."""
        self._launch = launch
        self._max_messages = max_messages
        self._max_bytes = max_bytes
        self._linger_s = linger_ms / 1000.0
        self._groups: dict[GroupKey, list[Member]] = {}
        self._loop = loop
        self._handle: asyncio.Handle | None = None  # the turn's flush, once scheduled
        self._wake = anyio.Event()

    @property
    def needs_task(self) -> bool:
        """Whether :meth:`run` must run as a task (not on asyncio)."""
        return self._loop is None

    @property
    def is_empty(self) -> bool:
        """Whether no group is open this turn."""
        return not self._groups

    def group_for(self, key: GroupKey, *, busy: bool = False) -> list[Member] | None:
        """The group of ``key`` to join, opening this turn's if needed; ``None`` when the
        producer is not ``busy`` (no other send in flight) and no group is open: the
        caller is a lone send and goes alone, opening nothing (it holds a slot now, so
        the next send of this turn is busy and opens the group)."""
        group = self._groups.get(key)
        if group is None:
            if not busy:
                return None  # a lone send opens no turn: the next one (busy) will
            self._groups[key] = group = []
            self._schedule()
        return group

    def _schedule(self) -> None:
        loop = self._loop
        if loop is None:
            self._wake.set()
        elif self._handle is None:  # one flush per turn, whatever the groups opened in it
            linger = self._linger_s
            self._handle = (
                loop.call_later(linger, self.flush) if linger else loop.call_soon(self.flush)
            )

    async def run(self) -> None:
        """The flusher task (trio): each wake-up waits out the turn (or the linger)."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            await anyio.sleep(self._linger_s)  # 0 still yields: the turn's sends join first
            self.flush()

    def flush(self) -> None:
        self._handle = None
        groups, self._groups = self._groups, {}
        for key, members in groups.items():
            live = [member for member in members if not member.cancelled]
            for member in live:
                member.sent = True
            if live:
                self._launch(key, live)  # dealt over the queues, then split by the caps

    def take_pending(self) -> list[Member]:
        """Every member not sent yet, removed (the producer is closing)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        groups, self._groups = self._groups, {}
        return [m for members in groups.values() for m in members if not m.cancelled]

    def chunks(self, members: list[Member]) -> Iterator[list[Member]]:
        """``members`` (one queue's share of a group) split by the caps on count and bytes."""
        chunk: list[Member] = []
        size = 0
        for member in members:
            prepared = member.send.job.prepared  # what it adds to a batch's body
            grow = ITEM_OVERHEAD + len(prepared.body) + len(prepared.properties)
            if chunk and (len(chunk) >= self._max_messages or size + grow > self._max_bytes):
                yield chunk
                chunk, size = [], 0
            chunk.append(member)
            size += grow
        if chunk:
            yield chunk

    def __repr__(self) -> str:
        pending = sum(len(members) for members in self._groups.values())
        return f"Accumulator(groups={len(self._groups)}, pending={pending})"
