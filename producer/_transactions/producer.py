"""``TransactionProducer``: half message, local transaction, END_TRANSACTION, checks.

It wraps a :class:`~producer.Producer` of the transaction's producer group (Java's
``TransactionMQProducer`` extends ``DefaultMQProducer``): the half message goes through
that producer's send pipeline (S1-S11: one deadline, retries, routing) with the prepared
bit and properties of :func:`~producer._remoting.transaction.half_message`, and the
broker's checks arrive on that producer's connections. All it asks of that producer goes
through the producer's internal sending interface (:class:`~producer._send.port.ProducerPort`),
never its private members.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence

import anyio
from anyio.abc import TaskGroup

from producer._client.keywords import takes_options
from producer._lifecycle import ENDED, AsyncLifecycle, Outstanding
from producer._producer import Producer, sending_port
from producer._remoting.message_codec import parse_offset_msg_id
from producer._remoting.namespace import wrap
from producer._remoting.properties import REAL_TOPIC
from producer._remoting.query_message import query_by_uniq_key, stored_by_uniq_key
from producer._remoting.transaction import (
    EXECUTE_FAILED_REMARK,
    CheckRequest,
    EndTransaction,
    end_transaction_request,
)
from producer._transactions.checks import CheckFunction, CheckServer, describe
from producer._transactions.ledger import HalfCopy, TransactionLedger
from producer._transactions.options import TransactionOptions
from producer._types.lifecycle_state import LifecycleState
from producer._types.message import Message
from producer._types.send_result import SendResult
from producer._types.send_status import SendStatus
from producer._types.transaction_result import TransactionResult
from producer._types.transaction_state import TransactionState
from producer.errors import (
    InvalidOptionError,
    LocalProtocolError,
    NoRouteError,
    ProducerClosedError,
    ProducerError,
    TransactionError,
)

log = logging.getLogger("producer.transactions")
_T = TransactionOptions()  # the defaults, written once there

#: The local transaction: the message (its ``msg_id`` set to the half's UNIQ_KEY) -> state.
ExecuteFunction = Callable[[Message], "TransactionState | Awaitable[TransactionState]"]
HOUSEKEEPING_TIMEOUT_MS = 3000.0


def half_copy(sent: SendResult) -> HalfCopy:
    """The half message as its send's answer names it (the first copy)."""
    return HalfCopy(parse_offset_msg_id(sent.offset_msg_id).commit_offset, sent.queue_offset)


class TransactionProducer(AsyncLifecycle):
    """Transactional sends of one producer group. Use it as ``async with``::

        async def check(message: ReceivedMessage) -> TransactionState: ...
        async with TransactionProducer(Producer("OrderTx", namesrv), check=check) as tx:
            result = await tx.send_in_transaction(Message("Orders", body), execute)

    ``check`` answers the broker's check-backs from the message alone (any member of the
    group may be asked, also for transactions another member started); an ``async def``
    check runs on the event loop, a plain one on a worker thread (T4). ``check_timeout_ms``
    bounds one check (then UNKNOWN is answered); ``check_workers`` checks run at once,
    ``max_pending_checks`` wait. ``topics``: at start, this member announces its group to
    those topics' brokers, so it can be asked about halves others left there before it
    sends anything itself. The wrapped producer must not be started yet; it is started
    and closed with this one, and sends ordinary messages as usual.
    """

    _kind = "producer"
    #: The settings, built from the keywords (and checked) before ``__init__``'s body.
    options: TransactionOptions

    @takes_options(TransactionOptions, wiring=("check",))
    def __init__(
        self,
        producer: Producer,
        *,
        check: CheckFunction,
        check_timeout_ms: float = _T.check_timeout_ms,
        check_workers: int = _T.check_workers,
        max_pending_checks: int = _T.max_pending_checks,
        topics: Sequence[str] = _T.topics,
    ) -> None:
        if not isinstance(producer, Producer):
            raise InvalidOptionError(f"producer must be a producer.Producer, got {producer!r}")
        if producer.state is not LifecycleState.NEW or producer.peer_handler is not None:
            raise InvalidOptionError("wrap a new Producer: it must not be started or wrapped")
        if not callable(check):
            raise InvalidOptionError(f"check must be callable, got {check!r}")
        options = self.options  # built from the keywords above by @takes_options
        self.producer = producer
        self._port = sending_port(producer)  # all this producer asks of it
        self.topics = tuple(options.topics)
        self._executing = Outstanding()
        self.ledger = TransactionLedger()
        self._open_halves: dict[str, SendResult] = {}  # two-step halves not ended yet
        self._announced: set[str] = set()
        self._tg: TaskGroup | None = None
        self.checks = CheckServer(
            producer.group,
            check,
            end=self._write_end,
            probe=self._stored,
            ledger=self.ledger,
            now_ms=self._port.monotonic_ms,
            broker_name=self._port.broker_name,
            timeout_ms=options.check_timeout_ms,
            workers=options.check_workers,
            max_pending=options.max_pending_checks,
            namespace=producer.options.namespace,
        )
        producer.peer_handler = self.checks.serve

    @property
    def group(self) -> str:
        """The producer group (the brokers' checks go to a member of it)."""
        return self.producer.group

    def __repr__(self) -> str:
        return (
            f"TransactionProducer({self.producer!r}, executing={self._executing.count}, "
            f"open_halves={len(self._open_halves)}, {self.checks!r})"
        )

    # -- life cycle ----------------------------------------------------------------------

    async def start(self) -> None:
        """Start the producer and the check listener, and announce the ``topics`` so brokers
        know whom to check. ``async with`` calls it."""
        self._refuse_start()
        await self.producer.start()
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self.checks.start(self._tg)
        self._now_running()
        for topic in self.topics:
            await self._announce_topic(topic)

    async def aclose(self) -> None:
        """Stop taking transactions and checks; within the producer's ``close_timeout_ms``
        let running ``execute`` calls end and answer queued checks; then close the
        producer. Checks left unanswered and two-step halves left open are the broker's to
        ask about again (T7): nothing waits for them."""
        if not self._close_begins():
            return
        budget_ms = self.producer.options.close_timeout_ms
        with anyio.move_on_after(budget_ms / 1000.0):
            await self._executing.wait_idle()
        if self._open_halves:
            log.warning(
                "%s: closing with %d half messages not ended; the broker will check them",
                self.group,
                len(self._open_halves),
            )
        await self.checks.drain(budget_ms)
        if self._tg is not None:
            self._tg.cancel_scope.cancel()
            await self._tg.__aexit__(None, None, None)
        await self.producer.aclose()
        self._now_closed()

    # -- one step ------------------------------------------------------------------------

    async def send_in_transaction(
        self, message: Message, execute: ExecuteFunction, *, timeout_ms: float | None = None
    ) -> TransactionResult:
        """Send ``message`` as a half message, run ``execute`` and report its state.

        The half message follows the send rules (its own ``timeout_ms`` budget; a failed
        send raises and ``execute`` does not run). Not stored SEND_OK: ``execute`` does not
        run and the outcome is ROLLBACK. ``execute`` raising counts as UNKNOWN (logged).
        """
        sent = await self._send_half(message, timeout_ms)
        if sent.status is not SendStatus.SEND_OK:
            return await self._end(sent, TransactionState.ROLLBACK)
        self._executing.enter()
        try:
            key = sent.msg_id
            state, error = await _run_execute(execute, dataclasses.replace(message, msg_id=key))
        finally:
            self._executing.leave()
        remark = None if error is None else EXECUTE_FAILED_REMARK + describe(error)
        return await self._end(sent, state, execute_error=error, remark=remark)

    async def send(
        self, message: Message, *, timeout_ms: float | None = None, order_key: str | None = None
    ) -> SendResult:
        """An ordinary (not transactional) send, as Java's ``TransactionMQProducer.send``:
        :meth:`producer.Producer.send` of the wrapped producer."""
        return await self.producer.send(message, timeout_ms=timeout_ms, order_key=order_key)

    # -- two steps -----------------------------------------------------------------------

    async def send_half(self, message: Message, *, timeout_ms: float | None = None) -> SendResult:
        """Step one: store ``message`` as a half message; end it with :meth:`commit` or
        :meth:`rollback`. Until then a check for it is answered UNKNOWN. Run the local
        transaction only if ``status`` is SEND_OK; otherwise roll it back."""
        sent = await self._send_half(message, timeout_ms)
        self._open_halves[sent.msg_id] = sent
        return sent

    async def commit(self, half: SendResult) -> TransactionResult:
        """Step two: make the half message visible to consumers."""
        if half.status is not SendStatus.SEND_OK and half.msg_id in self._open_halves:
            raise TransactionError(
                f"half message {half.msg_id} was stored {half.status.value}, not SEND_OK: "
                "roll it back (the local transaction must not run)"
            )
        return await self._end_half(half, TransactionState.COMMIT)

    async def rollback(self, half: SendResult) -> TransactionResult:
        """Step two: drop the half message."""
        return await self._end_half(half, TransactionState.ROLLBACK)

    async def end_half(
        self, half: SendResult, state: TransactionState, execute_error: BaseException | None
    ) -> TransactionResult:
        """Step two with a state decided elsewhere (``execute_error``: why it is UNKNOWN)."""
        remark = None if execute_error is None else EXECUTE_FAILED_REMARK + describe(execute_error)
        return await self._end_half(half, state, execute_error, remark)

    async def _end_half(
        self,
        half: SendResult,
        state: TransactionState,
        execute_error: BaseException | None = None,
        remark: str | None = None,
    ) -> TransactionResult:
        if self._open_halves.pop(half.msg_id, None) is None:
            raise TransactionError(
                f"half message {half.msg_id} is not open here: it was ended already, or "
                "sent by another producer (its checks answer for it)"
            )
        return await self._end(half, state, execute_error=execute_error, remark=remark)

    # -- internals -----------------------------------------------------------------------

    async def _send_half(self, message: Message, timeout_ms: float | None) -> SendResult:
        if self.state in ENDED:
            raise ProducerClosedError(f"transaction producer {self.group!r} is closing")
        if not isinstance(message, Message):  # a list (a batch) cannot be transactional
            raise LocalProtocolError(
                f"send_in_transaction takes one producer.Message, got {type(message).__name__}"
            )
        sent = await self._port.send_half(message, timeout_ms)  # retried only if not stored
        self.ledger.begin(sent.msg_id, half_copy(sent))  # before a check can be read
        await self._announce(sent.queue.broker_name)
        return sent

    async def _end(
        self,
        sent: SendResult,
        state: TransactionState,
        *,
        execute_error: BaseException | None = None,
        remark: str | None = None,
    ) -> TransactionResult:
        # The newest copy the checks revealed: the one the broker's next round would check
        # (an END naming an older copy leaves this one to be checked and committed again).
        copy = self.ledger.newest_copy(sent.msg_id) or half_copy(sent)
        end = EndTransaction(
            producer_group=self.group,
            tran_state_table_offset=copy.queue_offset,
            commit_log_offset=copy.commit_log_offset,
            state=state,
            from_check=False,
            msg_id=sent.msg_id,
            transaction_id=sent.transaction_id,
            remark=remark,
        )
        try:
            await self._write_end(self._addr(sent.queue.broker_name), end)
        except ProducerError as exc:
            log.warning(
                "%s: END_TRANSACTION %s of %s not written: %s",
                self.group,
                state.name,
                sent.msg_id,
                exc,
            )
            self.ledger.ended(sent.msg_id, copy, state, None)
            return TransactionResult(sent, state, False, execute_error, exc)
        self.ledger.ended(sent.msg_id, copy, state, self._port.monotonic_ms())
        return TransactionResult(sent, state, True, execute_error)

    async def _stored(self, addr: str, check: CheckRequest) -> bool:
        """Whether the broker at ``addr`` holds the checked message in its real topic
        (QUERY_MESSAGE by UNIQ_KEY, over all time: our clock and the broker's may differ)."""
        record = check.record
        topic = record.properties.get(REAL_TOPIC, record.topic)
        request = query_by_uniq_key(topic, check.uniq_key, begin_ms=0)
        timeout_ms = self.producer.options.send_timeout_ms
        response = await self._port.invoke(addr, request, timeout_ms)
        return stored_by_uniq_key(response, topic, check.uniq_key)

    async def _write_end(self, addr: str, end: EndTransaction) -> None:
        timeout_ms = self.producer.options.send_timeout_ms
        await self._port.write_oneway(addr, end_transaction_request(end), timeout_ms)

    def _addr(self, broker_name: str) -> str:
        """``findBrokerAddressInPublish``: the master the half message went to."""
        addr = self._port.broker_addr(broker_name)
        if addr is None:
            raise NoRouteError(broker_name, self.producer.namesrv_addrs, "broker left the routes")
        return addr

    async def _announce(self, broker_name: str) -> None:
        """Heartbeat our group to a broker holding one of our halves, once: its checks can
        only reach a member it has heard from."""
        addr = self._port.broker_addr(broker_name)
        if addr is not None and addr not in self._announced:  # a promoted master: again
            await self._port.heartbeat(addr)
            self._announced.add(addr)

    async def _announce_topic(self, topic: str) -> None:
        deadline = self._port.monotonic_ms() + HOUSEKEEPING_TIMEOUT_MS
        wire_topic = wrap(self.producer.options.namespace, topic)  # topics= are the user's
        try:
            route = await self._port.route(wire_topic, deadline)
        except ProducerError as exc:
            log.warning("%s: no route for %r to announce the group on: %s", self.group, topic, exc)
            return
        for name in route.broker_addrs:
            await self._announce(name)


async def _run_execute(
    execute: ExecuteFunction, message: Message
) -> tuple[TransactionState, BaseException | None]:
    """``execute``'s state; an exception (logged) or a wrong value counts as UNKNOWN."""
    try:
        state: object = execute(message)
        if inspect.isawaitable(state):
            state = await state
    except Exception as exc:
        log.exception("local transaction of %s raised; reported UNKNOWN", message.msg_id)
        return TransactionState.UNKNOWN, exc
    if not isinstance(state, TransactionState):
        error = LocalProtocolError(f"execute returned {state!r}, not a TransactionState")
        log.error("local transaction of %s: %s; reported UNKNOWN", message.msg_id, error)
        return TransactionState.UNKNOWN, error
    return state, None


__all__ = ["ExecuteFunction", "TransactionProducer"]
