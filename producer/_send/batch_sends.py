"""Sends through the accumulator, and what runs each group it flushes.

A group of one is an ordinary send. A larger group is one SEND_BATCH_MESSAGE run through
the same :class:`Sender` as any send (S1-S11 hold for the batch, so for every member),
its first attempt a loop future with a callback where an async send's is (no task: see
:mod:`producer._send.async_runner`), the rest of it a task;
whose outcome is handed to each member: its own result (its ``msg_id``, its
``offset_msg_id``, ``queue_offset = base + i``, the batch's attempts) or its own error
instance. A batch refused for a reason that may belong to one message (13
MESSAGE_ILLEGAL) is re-sent as single messages within each member's budget, so one bad
message never fails its neighbours.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence

import anyio
import msgspec

from producer._client.clock import Clock
from producer._remoting.message_codec import COMPRESSED_FLAG
from producer._remoting.producer_requests import PreparedMessage, SendRequestFactory
from producer._remoting.retry_topics import SYSTEM_PREFIXES
from producer._response_codes import ResponseCode
from producer._send.accumulator import Accumulator, GroupKey, Member
from producer._send.async_runner import AsyncSendRunner
from producer._send.backpressure import InFlightLimiter
from producer._send.future import SendFuture, closed_error
from producer._send.job import SendJob
from producer._send.options import ProducerOptions
from producer._send.owned_tasks import Spawn
from producer._send.plan import Finish, Retry
from producer._send.planner import Planner
from producer._send.send import Ending, Send
from producer._send.sender import Sender
from producer._types.message import Message, MessageQueue
from producer._types.send_result import SendResult
from producer.errors import AttemptRecord, ProducerClosedError, ProducerError

log = logging.getLogger("producer")


_RESENT_ALONE = frozenset({ResponseCode.MESSAGE_ILLEGAL})


def batchable(prepared: PreparedMessage, message: Message) -> bool:
    """What a broker takes in a batch: not compressed, not delayed, not timed (a 5.x
    broker ignores a timer inside a batch), no retry or dead-letter topic."""
    return not (
        prepared.sys_flag & COMPRESSED_FLAG
        or message.delay_level
        or message.timed
        or prepared.topic.startswith(SYSTEM_PREFIXES)
    )


def member_results(batch: SendResult, msg_ids: Sequence[str]) -> list[SendResult]:
    """Each member's share of a batch's result, in order."""
    offset_ids = batch.offset_msg_id.split(",")
    offset_ids += [""] * (len(msg_ids) - len(offset_ids))  # a broker that sent fewer ids
    base = batch.queue_offset
    return [
        SendResult(
            batch.status,
            msg_id,
            offset_ids[index],
            batch.queue,
            base + index,
            batch.region_id,
            batch.trace_on,
            batch.transaction_id,
            batch.attempts,
        )
        for index, msg_id in enumerate(msg_ids)
    ]


class BatchSends:
    """The producer's transparent batching: members join groups, groups are sent."""

    __slots__ = (
        "_clock",
        "_factory",
        "_limiter",
        "_loop",
        "_planner",
        "_runner",
        "_sender",
        "_spawn",
        "accumulator",
    )

    def __init__(
        self,
        options: ProducerOptions,
        *,
        sender: Sender,
        factory: SendRequestFactory,
        planner: Planner,
        limiter: InFlightLimiter,
        clock: Clock,
        spawn: Spawn,
        runner: AsyncSendRunner,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self._sender = sender
        self._runner = runner  # a group of one runs as an async send does
        self._factory = factory
        self._planner = planner
        self._limiter = limiter  # how many sends are in flight: batching pays only then
        self._clock = clock
        self._spawn = spawn
        self._loop = loop  # the producer's asyncio loop (None under trio)
        self.accumulator = Accumulator(
            self._launch,
            max_messages=options.batch_max_messages,
            max_bytes=options.batch_max_bytes,
            linger_ms=options.batch_linger_ms,
            loop=loop,
        )

    # -- joining --------------------------------------------------------------------------

    def send(self, send: Send) -> Awaitable[SendResult] | None:
        """Join ``send`` (an awaited one) to this turn's group; await the returned outcome.
        ``None``: not joined (a lone send, the first send of the turn, not
        :func:`batchable`, or no free slot), so the caller sends it alone."""
        if self._is_lone() or not batchable(send.job.prepared, send.job.message):
            return None
        member = self._join(send)
        return None if member is None else self._outcome(member)

    async def _outcome(self, member: Member) -> SendResult:
        future = member.future
        try:
            if not future.done():
                await future.settled()
            return future.result()
        except BaseException:
            if not future.done():
                self._abandon(member)
            raise

    def send_async(self, send: Send) -> bool:
        """Join ``send`` (with its future) to this turn's group; ``False``: not joined,
        the caller sends it alone."""
        if self._is_lone() or not batchable(send.job.prepared, send.job.message):
            return False
        return self._join(send) is not None

    def _join(self, send: Send) -> Member | None:
        """``send`` in its group, its in-flight slot taken; ``None``: no group open for it
        or no room (it is then as it was)."""
        job, plan = send.job, send.plan
        key = GroupKey(job.prepared.topic, plan.mode, plan.budget_ms, job.message.wait_store_msg_ok)
        group = self.accumulator.group_for(key, busy=self._limiter.in_flight > 0)
        if group is None or not send.try_admit():
            return None
        if send.future is None:  # an awaited send's: its caller awaits the member's outcome
            send.future = SendFuture(msg_id=job.prepared.msg_id, loop=self._loop)
        member = Member(send)
        group.append(member)
        return member

    def _is_lone(self) -> bool:
        """Whether a send made now goes alone whatever its topic: no other send in flight
        and no group open. Other sends in flight: more are coming (their answers wake
        their callers), so even the turn's first send joins; with none, it is a lone send
        and goes alone, opening nothing (the accumulator's rule, asked first and cheaply)."""
        return not self._limiter.in_flight and self.accumulator.is_empty

    def _abandon(self, member: Member) -> None:
        """Its caller was cancelled: a member not yet sent is left out; a sent one goes
        on with its batch, whose outcome nobody awaits."""
        if not member.sent:
            member.cancelled = True
            member.send.finish(_never_started())

    def fail_pending(self) -> None:
        """At close: members never sent fail with ProducerClosedError."""
        self._fail(self.accumulator.take_pending(), _never_started())

    # -- running the groups ---------------------------------------------------------------

    def _launch(self, key: GroupKey, members: list[Member]) -> None:
        """Send a flushed group: alone, or dealt over the topic's queues per message
        (``spread_batch``), each queue's share split by the caps. A group whose route is
        not known yet (a fresh producer's first burst) is dealt once the lookup returns."""
        if len(members) == 1:
            self._start_alone(members[0], None)
            return
        parts = self._sender.spread(key.topic, len(members))
        if parts is None:
            self._spawn(self._deal_when_routed, key, members, if_never_ran=self._never_ran(members))
            return
        self._deal(key, members, parts)

    def _deal(
        self,
        key: GroupKey,
        members: list[Member],
        parts: Sequence[tuple[MessageQueue | None, int]],
    ) -> None:
        start = 0
        for queue, count in parts:
            for chunk in self.accumulator.chunks(members[start : start + count]):
                if len(chunk) == 1:  # the same frame as without batching
                    self._start_alone(chunk[0], queue)
                else:
                    self._start_batch(key, chunk, queue)
            start += count

    async def _deal_when_routed(self, key: GroupKey, members: list[Member]) -> None:
        """Wait for the topic's route (the lookup concurrent sends share), then deal. If
        the lookup fails, the group goes undealt and its send reports the lookup's error,
        as any send's does."""
        deadline = min(m.deadline_ms for m in members)
        try:
            await self._sender.routes.get(key.topic, deadline)
        except ProducerError:
            self._deal(key, members, [(None, len(members))])
            return
        except anyio.get_cancelled_exc_class():
            self._fail(members, _never_started())
            raise
        parts = self._sender.spread(key.topic, len(members))
        self._deal(key, members, parts or [(None, len(members))])

    def _never_ran(self, members: list[Member], batch: Send | None = None) -> Callable[[], None]:
        """What a task cancelled before it ran owes its members (``batch``: the send they
        went in, finished too; their fate is unknown if an attempt was made)."""

        def fail() -> None:
            error = _never_started()
            if batch is not None:
                if batch.plan.attempts:
                    error = closed_error(batch.plan)
                if not batch.finished:
                    batch.finish(error.copy())
            self._fail([m for m in members if not m.send.finished], error)

        return fail

    def _start_alone(self, member: Member, queue: MessageQueue | None) -> None:
        """A group (or part) of one: the member's own send, run as an async send is
        (task-less when it can be), to ``queue`` first when one was dealt to it."""
        send = member.send
        if queue is not None:
            send.job = msgspec.structs.replace(send.job, first_queue=queue)
        self._runner.start(send)

    async def _alone(
        self, key: GroupKey, member: Member, before: tuple[AttemptRecord, ...]
    ) -> None:
        """A member of a refused batch re-sent alone under a plan of its own (``before``:
        the batch's attempts, which its outcome lists first)."""
        send = member.send
        send.plan = self._planner.plan(key.mode, key.budget_ms, deadline_ms=member.deadline_ms)
        send.before = before
        await self._sender.complete(send)

    def _start_batch(
        self, key: GroupKey, members: list[Member], queue: MessageQueue | None
    ) -> None:
        """``members`` as one SEND_BATCH_MESSAGE (first to ``queue`` when given), encoded
        in one pass; its first attempt task-less when the sender can."""
        # List comprehensions over the members' sends, not generators over their
        # properties: one call each, not one per member (this runs for every batch).
        sends = [m.send for m in members]
        jobs = [s.job for s in sends]
        messages = tuple([j.message for j in jobs])
        deadline = min([s.plan.deadline_ms for s in sends])
        plan = self._planner.plan(key.mode, key.budget_ms, deadline_ms=deadline)
        try:
            prepared = self._factory.batch_of(messages, [j.prepared for j in jobs])
        except ProducerError:  # too large once encoded: each goes alone
            self._resend_alone(key, members, ())
            return
        job = SendJob(prepared, messages[0], members=messages, first_queue=queue)
        batch = self._sender.begin(job, plan)  # it holds no slot: its members hold theirs
        batch.try_admit()
        first = self._sender.start_first(batch)
        if first is None:  # not started: a task makes every attempt
            self._batch_task(key, members, batch)
        else:
            first.when_settled(functools.partial(self._batch_settled, key, members, batch))

    def _batch_task(self, key: GroupKey, members: list[Member], batch: Send) -> None:
        """The batch (or what its first attempt left) as a task of the producer."""
        never_ran = self._never_ran(members, batch)
        self._spawn(self._batch, key, members, batch, if_never_ran=never_ran)

    def _batch_settled(
        self, key: GroupKey, members: list[Member], batch: Send, decision: Finish | Retry
    ) -> None:
        """A task-less first attempt is over: deliver, or go on in a task."""
        if isinstance(decision, Retry):
            self._batch_task(key, members, batch)
        else:
            self._batch_over(key, members, batch, batch.finish(decision.error or decision.result))

    async def _batch(self, key: GroupKey, members: list[Member], batch: Send) -> None:
        """The batch as a task: all of it, or what its first attempt left (its plan knows)."""
        try:
            outcome = await self._sender.complete(batch)
        except anyio.get_cancelled_exc_class():
            self._fail(members, closed_error(batch.plan))
            raise
        self._batch_over(key, members, batch, outcome)

    def _batch_over(
        self, key: GroupKey, members: list[Member], batch: Send, outcome: Ending
    ) -> None:
        """The batch finished: each member gets its share, its own error, or (refused for
        a reason that may be one message's) a send of its own."""
        if not isinstance(outcome, ProducerError):
            assert outcome is not None, "a batch is never oneway"
            self._deliver(members, outcome)
        elif outcome.code in _RESENT_ALONE:
            self._resend_alone(key, members, tuple(batch.plan.attempts))
        else:
            self._fail(members, outcome)

    def _deliver(self, members: list[Member], result: SendResult) -> None:
        """Each member's send finishes with its share of the batch's result, in one pass."""
        shares = member_results(result, [m.send.job.prepared.msg_id for m in members])
        for member, share in zip(members, shares, strict=True):
            member.send.finish(share)

    def _resend_alone(
        self, key: GroupKey, members: list[Member], before: tuple[AttemptRecord, ...]
    ) -> None:
        for member in members:
            self._spawn(self._alone, key, member, before, if_never_ran=self._never_ran([member]))

    def _fail(self, members: Sequence[Member], error: ProducerError) -> None:
        """Each member's send finishes with its own instance of the batch's error."""
        for member in members:
            member.send.finish(error.copy())

    def __repr__(self) -> str:
        return f"BatchSends({self.accumulator!r})"


def _never_started() -> ProducerClosedError:
    return ProducerClosedError("producer closed before the send started")
