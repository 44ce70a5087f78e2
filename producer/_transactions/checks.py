"""Answering the broker's CHECK_TRANSACTION_STATE (``ClientRemotingProcessor.checkTransactionState``
and ``DefaultMQProducerImpl.checkTransactionState`` of 4.9.4).

A check arrives on a connection's reader, which must not block: it is queued (at most
``max_pending`` waiting; more are dropped, the broker asks again next round, as Java's
bounded check executor rejects them) and answered by ``workers`` tasks. Each answer is
a oneway END_TRANSACTION to the broker that asked, with ``fromTransactionCheck=true``.

What a worker answers is the :class:`~producer._transactions.ledger.TransactionLedger`'s
decision (its module explains why a check names a *copy* of the half message, and how an
answer avoids storing the message twice): UNKNOWN for a transaction still running here;
ROLLBACK for a leftover copy of one already ended; for one this producer committed, what
the broker's index says (QUERY_MESSAGE by UNIQ_KEY: stored already, or the END was lost);
otherwise the check function's state, a COMMIT first checked the same way. The check
function raising answers UNKNOWN with Java's remark; taking longer than ``timeout_ms``
answers UNKNOWN (it is cancelled when async, abandoned on its worker thread when plain:
plain functions run off the event loop, as plain listeners do).
"""

from __future__ import annotations

import inspect
import logging
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from producer._consume.received import received_message
from producer._remoting.command import RemotingCommand
from producer._remoting.namespace import unwrap
from producer._remoting.request_codes import RequestCode
from producer._remoting.transaction import (
    CHECK_FAILED_REMARK,
    CheckRequest,
    EndTransaction,
    end_after_check,
    parse_check_request,
)
from producer._transactions.ledger import CheckStep, HalfCopy, TransactionLedger
from producer._types.consumer.received import ReceivedMessage
from producer._types.transaction_state import TransactionState
from producer.errors import ProducerError

log = logging.getLogger("producer.transactions")

#: The user's check: the message as the broker stored it -> its transaction's state.
CheckFunction = Callable[[ReceivedMessage], "TransactionState | Awaitable[TransactionState]"]
#: Writes an END_TRANSACTION to a broker address (raises ProducerError if it cannot).
EndWriter = Callable[[str, EndTransaction], Awaitable[None]]
#: Asks the broker at an address whether the checked message is stored in its real topic
#: (raises ProducerError when the broker does not say).
StoredProbe = Callable[[str, CheckRequest], Awaitable[bool]]


@dataclass(frozen=True, slots=True)
class _Check:
    address: str
    request: CheckRequest

    @property
    def copy(self) -> HalfCopy:
        return HalfCopy(self.request.commit_log_offset, self.request.tran_state_table_offset)


def describe(exc: BaseException) -> str:
    """``RemotingHelper.exceptionSimpleDesc``: the exception, then where it was raised."""
    text = f"{type(exc).__name__}: {exc}"
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        text += f", {last.name}({last.filename.rsplit('/', 1)[-1]}:{last.lineno})"
    return text


def is_async_function(function: Callable[..., object]) -> bool:
    """An ``async def`` function, or an object with an ``async def __call__``."""
    call = getattr(function, "__call__", None)  # noqa: B004 - an async __call__ method
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(call)


class CheckServer:
    """Queue and workers for one producer group's checks."""

    def __init__(
        self,
        group: str,
        check: CheckFunction,
        *,
        end: EndWriter,
        probe: StoredProbe,
        ledger: TransactionLedger,
        now_ms: Callable[[], float],
        broker_name: Callable[[str], str],
        timeout_ms: float,
        workers: int,
        max_pending: int,
        namespace: str | None = None,
    ) -> None:
        self.group = group
        self.namespace = namespace  # a check's message shows the user's topic
        self._check = check
        self._check_is_async = is_async_function(check)
        self._end = end
        self._probe = probe
        self.ledger = ledger
        self._now_ms = now_ms
        self._broker_name = broker_name
        self._timeout_s = timeout_ms / 1000.0
        self._workers = workers
        self._send: MemoryObjectSendStream[_Check]
        self._receive: MemoryObjectReceiveStream[_Check]
        self._send, self._receive = anyio.create_memory_object_stream[_Check](max_pending)
        self._open = True
        self._done = anyio.Event()
        self._answer_seen = anyio.Event()
        self.answered = 0
        self.dropped = 0
        self._probe_warned = False

    def __repr__(self) -> str:
        state = "open" if self._open else "closed"
        return f"CheckServer({self.group!r}, {state}, answered={self.answered})"

    # -- the reader's side (must not block) ----------------------------------------------

    def serve(self, address: str, request: RemotingCommand) -> RemotingCommand | None:
        """A request a broker started; checks are queued, nothing is answered here."""
        if request.code != RequestCode.CHECK_TRANSACTION_STATE:
            return None
        try:
            check = parse_check_request(request)
        except ProducerError as exc:
            log.warning("%s: unreadable transaction check from %s: %s", self.group, address, exc)
            return None
        if check.producer_group != self.group:  # Java: no producer of that group here
            log.debug("%s: check for group %r ignored", self.group, check.producer_group)
            return None
        if not self._open:
            self.dropped += 1  # closing: another member (or we, later) will be asked
            return None
        try:
            self._send.send_nowait(_Check(address, check))
        except anyio.WouldBlock:
            self.dropped += 1
            log.warning("%s: %d checks waiting, one dropped", self.group, self._workers)
        return None

    # -- workers -------------------------------------------------------------------------

    def start(self, tg: TaskGroup) -> None:
        tg.start_soon(self._run)

    async def _run(self) -> None:
        try:
            async with anyio.create_task_group() as tg:
                for _ in range(self._workers):
                    tg.start_soon(self._work, self._receive.clone())
            self._receive.close()
        finally:
            self._done.set()

    async def _work(self, checks: MemoryObjectReceiveStream[_Check]) -> None:
        async with checks:
            async for check in checks:
                await self._answer(check)

    async def _answer(self, check: _Check) -> None:
        request = check.request
        step, state, remark = await self._decide(check)
        end = end_after_check(request, self.group, state, remark)
        try:
            await self._end(check.address, end)
        except ProducerError as exc:  # the broker asks again next round
            log.warning("%s: answer to a check of %s not written: %s", self.group, check, exc)
            self.ledger.answered(request.uniq_key, check.copy, step, state, None)
            return
        self.ledger.answered(request.uniq_key, check.copy, step, state, self._now_ms())
        self.answered += 1
        self._answer_seen.set()
        self._answer_seen = anyio.Event()

    async def _decide(self, check: _Check) -> tuple[CheckStep, TransactionState, str | None]:
        key = check.request.uniq_key
        step = self.ledger.on_check(key, check.copy)
        if step is CheckStep.ANSWER_UNKNOWN:
            return step, TransactionState.UNKNOWN, None
        if step is CheckStep.ANSWER_ROLLBACK:
            return step, TransactionState.ROLLBACK, None
        if step is CheckStep.PROBE_COMMITTED:
            stored = await self._stored(check)
            return step, self.ledger.after_probe(key, stored, self._now_ms()), None
        state, remark = await self._ask(check)
        if state is TransactionState.COMMIT:
            state = self.ledger.check_function_answer(state, await self._stored(check))
        return step, state, remark

    async def _stored(self, check: _Check) -> bool | None:
        """The probe's finding; ``None`` (logged once) when the broker would not say."""
        try:
            return await self._probe(check.address, check.request)
        except ProducerError as exc:
            if not self._probe_warned:
                self._probe_warned = True
                log.warning(
                    "%s: cannot ask %s whether a checked message is stored (%s); a message "
                    "whose END may be lost is answered UNKNOWN until it can. Give the "
                    "producer's account SUB on its topics, and keep messageIndexEnable on",
                    self.group,
                    check.address,
                    exc,
                )
            return None

    async def _ask(self, check: _Check) -> tuple[TransactionState, str | None]:
        """The check function's state for the checked message, or UNKNOWN with a remark."""
        record = check.request.record
        message = received_message(record, self._broker_name(check.address), record.inflated_body())
        message.topic = unwrap(message.topic, self.namespace)
        try:
            with anyio.fail_after(self._timeout_s):
                state = await self._call_check(message)
        except TimeoutError:
            log.warning(
                "%s: check of %s took over %g s", self.group, message.msg_id, self._timeout_s
            )
            ms = self._timeout_s * 1000
            return TransactionState.UNKNOWN, f"{CHECK_FAILED_REMARK}TimeoutError: over {ms:g} ms"
        except Exception as exc:  # the user's code: answered UNKNOWN, as Java does
            log.exception("%s: check of %s raised", self.group, message.msg_id)
            return TransactionState.UNKNOWN, CHECK_FAILED_REMARK + describe(exc)
        if not isinstance(state, TransactionState):
            log.error("%s: check returned %r, not a TransactionState", self.group, state)
            return TransactionState.UNKNOWN, f"{CHECK_FAILED_REMARK}returned {state!r}"
        return state, None

    async def _call_check(self, message: ReceivedMessage) -> object:
        """Async check functions run on the loop; plain ones on a worker thread, so a
        blocking lookup stalls no send (abandoned there if it overruns its timeout)."""
        if self._check_is_async:
            state: object = self._check(message)
        else:
            state = await anyio.to_thread.run_sync(self._check, message, abandon_on_cancel=True)
        if inspect.isawaitable(state):
            state = await state
        return state

    async def wait_answered(self, count: int) -> None:
        """Until ``count`` checks have been answered (written) since start."""
        while self.answered < count:
            await self._answer_seen.wait()

    # -- close ---------------------------------------------------------------------------

    async def drain(self, timeout_ms: float) -> bool:
        """Take no more checks, answer the queued ones within ``timeout_ms``; ``True`` if
        all were answered (the rest are the broker's to ask again)."""
        self._open = False
        self._send.close()
        with anyio.move_on_after(max(timeout_ms, 0.0) / 1000.0):
            await self._done.wait()
        return self._done.is_set()
