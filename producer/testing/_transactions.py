"""A broker's transactional messages, as 4.9.4 keeps them (pure: no I/O, clock injected).

* A send with ``TRAN_MSG=true`` is parked in ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 with its
  real topic and queue in ``REAL_TOPIC``/``REAL_QID``, invisible to consumers
  (``TransactionalMessageBridge.parseHalfMessageInner``).
* END_TRANSACTION (``EndTransactionProcessor``) finds the half message by commit-log
  offset, checks group and offsets, and on commit stores the final message in the real
  topic (sysFlag commit, ``preparedTransactionOffset``), on rollback nothing; either way
  an op record goes to ``RMQ_SYS_TRANS_OP_HALF_TOPIC`` (``addRemoveTagInTransactionOp``).
  Commit does not de-duplicate: committing one half twice stores two messages.
* Every ``interval_ms`` a check round (``TransactionalMessageServiceImpl.check``) walks
  the half queue: a half older than ``timeout_ms`` with no op is re-stored with
  ``TRANSACTION_CHECK_TIMES`` + 1 and CHECK_TRANSACTION_STATE goes to one live producer
  of its group (round robin, ``ProducerManager.getAvailableChannel``); rounds with no
  producer online count too; after ``check_max`` checks it is moved to
  ``TRANS_CHECK_MAX_TIME_TOPIC`` and never delivered. An END may name any copy; the
  round goes by the newest, so an END naming an older one leaves that to be checked.
* A 5.x broker writes op records in batches: ``deletePrepareMessage`` queues the offset
  (the queue's context is born then, its last write set to that time), and
  ``TransactionalOpBatchService`` wakes every ``transactionOpBatchInterval`` and
  (``batchSendOpMessage``) writes one op message ``"o1,o2,"`` when the last write is that
  old, or at once past ``transactionOpMsgMaxSize`` bytes. Until then a round still sees
  the half as open and checks a new copy of it, though its END was applied. 4.9.4 writes
  each op at once.
* Tests can lose END_TRANSACTION frames on the way in (:meth:`Transactions.lose_end`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.message_codec import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)
from producer._remoting.properties import (
    PRODUCER_GROUP,
    REAL_QUEUE_ID,
    REAL_TOPIC,
    TAGS,
    TRANSACTION_CHECK_TIMES,
    TRANSACTION_PREPARED,
    UNIQ_KEY,
    WAIT,
    decode_properties,
)
from producer._remoting.request_codes import FLAG_ONEWAY, RequestCode
from producer._remoting.store_record import encode_record
from producer._remoting.transaction import parse_end_transaction
from producer._response_codes import ResponseCode
from producer._types.transaction_state import TransactionState
from producer.errors import RemoteProtocolError
from producer.testing._consume_fields import pulled_record
from producer.testing._producer_channels import ProducerChannels
from producer.testing._store import (
    PERM_READ,
    PERM_WRITE,
    BrokerStore,
    PendingMessage,
    StoredMessage,
    TopicConfig,
    properties_length,
    stored_size,
)
from producer.testing._transaction_config import TransactionConfig

__all__ = [
    "CHECK_MAX_TOPIC",
    "HALF_TOPIC",
    "OP_TOPIC",
    "Transactions",
]

HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
OP_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
CHECK_MAX_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"  # the spelling the broker really creates
REMOVE_TAG = "d"  # TransactionalMessageUtil.REMOVETAG
OFFSET_SEPARATOR = ","  # TransactionalMessageUtil.OFFSET_SEPARATOR (5.x op bodies)
OP_MSG_MAX_SIZE = 4096  # BrokerConfig.transactionOpMsgMaxSize (5.x)
_TRANSACTION_BITS = TRANSACTION_ROLLBACK_TYPE  # 0xC: both transaction bits
_REMOTING_EXCEPTION = "org.apache.rocketmq.remoting.exception.RemotingCommandException"
_HEADER = "org.apache.rocketmq.common.protocol.header.EndTransactionRequestHeader"
_SERVICE = "org.apache.rocketmq.broker.transaction.queue.TransactionalMessageServiceImpl"
# The remarks of the recorded probes E5 and E7: the exception's toString and first frame.
_STATE_WRONG = (
    f"{_REMOTING_EXCEPTION}: commitOrRollback field wrong, "
    f"{_HEADER}.checkFields(EndTransactionRequestHeader.java:60)"
)
_NO_OFFSET = (
    'java.lang.NullPointerException: Cannot invoke "java.lang.Long.longValue()" because the '
    f'return value of "{_HEADER}.getCommitLogOffset()" is null, '
    f"{_SERVICE}.{{method}}(TransactionalMessageServiceImpl.java:{{line}})"
)
_NOT_FOUND = "Find prepared transaction message failed"
_FRESH_REMARK = "not set any response code"  # a response's remark until someone sets one


@dataclass
class _LostEnds:
    uniq_key: str | None
    left: int


@dataclass(frozen=True)
class _Half:
    message: StoredMessage
    size: int


class Transactions:
    """One broker's half messages, their ends and their check rounds."""

    def __init__(
        self,
        store: BrokerStore,
        *,
        clock_ms: Callable[[], int],
        config: TransactionConfig,
        op_batch_interval_ms: int = 0,
    ) -> None:
        self.store = store
        self.config = config
        self.op_batch_interval_ms = op_batch_interval_ms
        self._pending_ops: list[int] = []  # half-queue offsets ended, op not written yet
        self._last_op_write: int | None = None  # the op context's; None: no context yet
        self._next_op_wakeup = clock_ms() + op_batch_interval_ms
        self._lost_ends: list[_LostEnds] = []
        self.producers = ProducerChannels()
        self._clock_ms = clock_ms
        self._halves: dict[int, _Half] = {}  # commit-log offset -> half message (and copies)
        self._done: set[int] = set()  # half-queue offsets with an op record
        self._dropped: set[int] = set()  # half-queue offsets moved to CHECK_MAX_TOPIC
        self._checked_to = 0  # the check service's consume offset in the half queue
        self._next_round = clock_ms() + config.interval_ms
        self._opaques = itertools.count(1 << 20)
        store.put_topic(TopicConfig(HALF_TOPIC, 1, 1, PERM_READ | PERM_WRITE))
        #: what the check rounds did, for tests: ("check", uniq key, times, client channel)
        self.log: list[tuple[str, str, int]] = []

    def __repr__(self) -> str:
        open_halves = self.store.max_offset(HALF_TOPIC, 0) - len(self._done)
        return f"Transactions(halves={open_halves}, next_round={self._next_round})"

    # -- the half message ----------------------------------------------------------------

    def prepare(
        self, sent_properties: str | None, topic: str, queue_id: int, pending: PendingMessage
    ) -> StoredMessage | None:
        """Park ``pending`` as a half message if it was sent as one (``TRAN_MSG=true``, as
        ``SendMessageProcessor`` decides); ``None`` otherwise. A half keeps the ``WAIT`` it
        was sent with (``parseHalfMessageInner`` rebuilds the properties string)."""
        sent = decode_properties(sent_properties or "")
        if sent.get(TRANSACTION_PREPARED) != "true":
            return None
        props = {**pending.properties, REAL_TOPIC: topic, REAL_QUEUE_ID: str(queue_id)}
        if WAIT in sent:
            props[WAIT] = sent[WAIT]
        grown = properties_length(props) - properties_length(pending.properties)
        grown += len(HALF_TOPIC) - len(topic.encode())
        half = replace(
            pending,
            properties=props,
            size=pending.size + grown,
            sys_flag=pending.sys_flag & ~_TRANSACTION_BITS,
        )
        return self._put_half(half)

    def _put_half(self, pending: PendingMessage) -> StoredMessage:
        stored = self.store.append(HALF_TOPIC, 0, [pending])[0]
        self._halves[stored.commit_log_offset] = _Half(stored, pending.size)
        return stored

    def take_over(self) -> None:
        """Become the master of a store copied from another (a promoted slave): the halves
        and their op records are the copied ones (the commit log holds both); the check
        service, which never ran on the slave, starts from the half queue's first offset."""
        for message in self.store.messages(HALF_TOPIC):
            body = message.body if message.wire_body is None else message.wire_body
            size = stored_size(len(body), len(HALF_TOPIC), properties_length(message.properties))
            self._halves[message.commit_log_offset] = _Half(message, size)
        for op in self.store.messages(OP_TOPIC):
            self._done.update(int(o) for o in op.body.decode().split(OFFSET_SEPARATOR) if o)

    # -- END_TRANSACTION -----------------------------------------------------------------

    def lose_end(self, uniq_key: str | None = None, count: int = 1) -> None:
        """The next ``count`` END_TRANSACTIONs of message ``uniq_key`` (of any, when
        ``None``) are lost before the broker reads them, as on a broken connection."""
        self._lost_ends.append(_LostEnds(uniq_key, count))

    def _is_lost(self, request: RemotingCommand) -> bool:
        key = request.field("msgId")
        rule = next((r for r in self._lost_ends if r.uniq_key in (None, key)), None)
        if rule is None:
            return False
        rule.left -= 1
        if rule.left <= 0:
            self._lost_ends.remove(rule)
        self.log.append(("lost end", key or "", 0))
        return True

    def end(self, request: RemotingCommand) -> RemotingCommand | None:
        """The broker's answer (``None``: it sends none, as for state 0)."""
        if self._is_lost(request):
            return None
        if request.field("commitOrRollback") not in ("0", "8", "12"):
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=_STATE_WRONG)
        if request.field("commitOrRollback") == "0":
            return None  # "pending status": logged, never answered
        commit = request.field("commitOrRollback") == "8"
        if request.field("commitLogOffset") is None:
            method, line = ("commitMessage", 479) if commit else ("rollbackMessage", 484)
            remark = _NO_OFFSET.format(method=method, line=line)
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=remark)
        try:
            end = parse_end_transaction(request)
        except RemoteProtocolError as exc:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=str(exc))
        half = self._halves.get(end.commit_log_offset)
        if half is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=_NOT_FOUND)
        wrong = _wrong_end(half.message, end.producer_group, end.tran_state_table_offset)
        if wrong is not None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=wrong)
        if end.state is TransactionState.COMMIT:
            self._commit(half, end.commit_log_offset)
            self._remove(half.message)
            return request.make_response(ResponseCode.SUCCESS)
        self._remove(half.message)
        return request.make_response(ResponseCode.SUCCESS, remark=_FRESH_REMARK)

    def _commit(self, half: _Half, commit_log_offset: int) -> StoredMessage:
        """``endMessageTransaction`` + ``sendFinalMessage``: the real topic's copy keeps
        every property (REAL_*, TRAN_MSG included: the string was built before they were
        cleared)."""
        message = half.message
        topic = message.properties[REAL_TOPIC]
        final = PendingMessage(
            body=message.body,
            properties=message.properties,
            size=half.size - len(HALF_TOPIC) + len(topic.encode()),
            born_timestamp=message.born_timestamp,
            sys_flag=(message.sys_flag & ~_TRANSACTION_BITS) | TRANSACTION_COMMIT_TYPE,
            flag=message.flag,
            born_host=message.born_host,
            reconsume_times=message.reconsume_times,
            prepared_transaction_offset=commit_log_offset,
        )
        return self.store.append(topic, int(message.properties[REAL_QUEUE_ID]), [final])[0]

    def _remove(self, half: StoredMessage) -> None:
        """Mark ``half`` done: its op record now (4.9.4), or with the next batch (5.x)."""
        if self.op_batch_interval_ms == 0:
            self._write_op(str(half.queue_offset).encode(), [half.queue_offset])
            return
        if self._last_op_write is None:
            self._last_op_write = self._clock_ms()
        self._pending_ops.append(half.queue_offset)
        size = sum(len(f"{o}{OFFSET_SEPARATOR}") for o in self._pending_ops)
        if size >= OP_MSG_MAX_SIZE:
            self._flush_ops()

    def _op_batch_wakeup(self, now: int) -> None:
        """``TransactionalOpBatchService``: every interval, write the ops waiting if the
        last write is an interval old."""
        if self.op_batch_interval_ms == 0 or now < self._next_op_wakeup:
            return
        self._next_op_wakeup = now + self.op_batch_interval_ms
        last = self._last_op_write
        if self._pending_ops and last is not None and now - last >= self.op_batch_interval_ms:
            self._flush_ops()

    def _flush_ops(self) -> None:
        """``batchSendOpMessage``: one op message for every offset waiting."""
        offsets, self._pending_ops = self._pending_ops, []
        self._last_op_write = self._clock_ms()
        body = "".join(f"{o}{OFFSET_SEPARATOR}" for o in offsets).encode()
        self._write_op(body, offsets)

    def _write_op(self, body: bytes, offsets: list[int]) -> None:
        """The op record that marks the halves at ``offsets`` done."""
        props = {TAGS: REMOVE_TAG, WAIT: "true"}
        op = PendingMessage(
            body=body,
            properties=props,
            size=stored_size(len(body), len(OP_TOPIC), properties_length(props)),
            born_timestamp=self._clock_ms(),
            born_host=self.store.store_host,
        )
        self.store.append(OP_TOPIC, 0, [op])
        self._done.update(offsets)

    def open_keys(self) -> set[str]:
        """UNIQ_KEYs of the half messages still in doubt: the latest copy of each has no op
        record and was not dropped after ``check_max`` checks (the check rounds go by the
        copy: an END naming an older copy leaves it to be checked, as 4.9.4 does)."""
        latest = {m.properties.get(UNIQ_KEY, ""): m for m in self.store.messages(HALF_TOPIC)}
        settled = self._done | self._dropped
        return {key for key, m in latest.items() if m.queue_offset not in settled}

    # -- check rounds --------------------------------------------------------------------

    def tick(self) -> None:
        """Run a check round when one is due (the next one ``interval_ms`` after it)."""
        now = self._clock_ms()
        self._op_batch_wakeup(now)
        if now < self._next_round:
            return
        self._next_round = now + self.config.interval_ms
        self.check_round(now)

    def check_round(self, now: int) -> None:
        """One pass of the check service over the half queue, from where it stopped."""
        end = self.store.max_offset(HALF_TOPIC, 0)
        while self._checked_to < end:
            offset = self._checked_to
            if offset not in self._done:
                message = self.store.read(HALF_TOPIC, 0, offset, 1)[0]
                if not self._settle(message, now):
                    return  # too young (or stored this round): later halves are younger
            self._checked_to += 1

    def _settle(self, message: StoredMessage, now: int) -> bool:
        """Discard or check ``message``; ``False`` when it must wait for a later round."""
        times = message.properties.get(TRANSACTION_CHECK_TIMES)
        if times is not None and int(times) >= self.config.check_max:
            self._discard(message)
            return True
        if message.store_timestamp >= now:
            return False
        age = now - message.born_timestamp
        if 0 <= age < self.config.timeout_ms:
            return False
        self._check(message, 1 if times is None else int(times) + 1)
        return True

    def _discard(self, message: StoredMessage) -> None:
        size = self._halves[message.commit_log_offset].size
        moved = _pending_of(message, size + len(CHECK_MAX_TOPIC) - len(HALF_TOPIC))
        if self.store.topic(CHECK_MAX_TOPIC) is None:
            self.store.put_topic(TopicConfig(CHECK_MAX_TOPIC, 1, 1, PERM_READ | PERM_WRITE))
        self.store.append(CHECK_MAX_TOPIC, 0, [moved])
        self._dropped.add(message.queue_offset)
        self.log.append(("discard", message.properties.get(UNIQ_KEY, ""), 0))

    def _check(self, message: StoredMessage, times: int) -> None:
        """``putBackHalfMsgQueue`` then ``sendCheckMessage`` to one producer of the group."""
        props = {**message.properties, TRANSACTION_CHECK_TIMES: str(times)}
        size = self._halves[message.commit_log_offset].size
        size += properties_length(props) - properties_length(message.properties)
        copy = self._put_half(replace(_pending_of(message, size), properties=props))
        uniq_key = props.get(UNIQ_KEY, "")
        channel = self.producers.available(props.get(PRODUCER_GROUP, ""))
        self.log.append(("check" if channel is not None else "no producer", uniq_key, times))
        if channel is not None:
            channel.write(encode_frame(self._check_request(message, copy)))

    def _check_request(self, read: StoredMessage, copy: StoredMessage) -> RemotingCommand:
        """CHECK_TRANSACTION_STATE naming ``copy``; the body is the message as read before
        the copy (its store time) with the copy's offsets, real topic and queue, and
        ``WAIT=false`` (``renewHalfMessageInner`` writes it into the shared map)."""
        props = dict(copy.properties)
        props[WAIT] = "false"
        shown = replace(
            copy,
            topic=props[REAL_TOPIC],
            queue_id=int(props[REAL_QUEUE_ID]),
            store_timestamp=read.store_timestamp,
            properties=props,
        )
        uniq_key = props.get(UNIQ_KEY, "")
        fields = {
            "commitLogOffset": str(copy.commit_log_offset),
            "msgId": uniq_key,
            "tranStateTableOffset": str(copy.queue_offset),
            "offsetMsgId": copy.offset_msg_id,
            "transactionId": uniq_key,
        }
        return RemotingCommand(
            RequestCode.CHECK_TRANSACTION_STATE,
            opaque=next(self._opaques),
            flag=FLAG_ONEWAY,
            ext_fields=fields,
            body=encode_record(pulled_record(shown)),
        )


def _wrong_end(half: StoredMessage, group: str, queue_offset: int) -> str | None:
    """``checkPrepareMessage``: the group, then the half-queue offset."""
    if half.properties.get(PRODUCER_GROUP) != group:
        return "The producer group wrong"
    if half.queue_offset != queue_offset:
        return "The transaction state table offset wrong"
    return None


def _pending_of(message: StoredMessage, size: int) -> PendingMessage:
    """``message`` to be stored again, ``size`` bytes long."""
    props: Mapping[str, str] = message.properties
    return PendingMessage(
        body=message.body,
        properties=props,
        size=size,
        born_timestamp=message.born_timestamp,
        sys_flag=message.sys_flag,
        flag=message.flag,
        born_host=message.born_host,
        reconsume_times=message.reconsume_times,
    )
