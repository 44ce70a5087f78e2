"""Transactional messages on the wire (pure: no I/O, no clock).

What the 4.9.4 client does, and this module encodes once for the client and the dev broker:

* the half message is a normal send with ``TRAN_MSG=true``, ``PGROUP=<group>`` and the
  prepared bit in ``sysFlag`` (``DefaultMQProducerImpl.sendMessageInTransaction``);
* its outcome goes back as a oneway END_TRANSACTION (37) whose header names the half
  message by its half-queue offset and commit-log offset (``endTransaction``);
* the broker asks again with CHECK_TRANSACTION_STATE (39), whose header names the copy it
  re-stored for the check and whose body is that message
  (``ClientRemotingProcessor.checkTransactionState``); the answer is END_TRANSACTION with
  ``fromTransactionCheck=true`` and the check's offsets (``checkTransactionState``).
"""

from __future__ import annotations

from dataclasses import dataclass

from producer._remoting.command import RemotingCommand
from producer._remoting.message_codec import TRANSACTION_PREPARED_TYPE, parse_offset_msg_id
from producer._remoting.producer_requests import PreparedMessage
from producer._remoting.properties import (
    NAME_VALUE_SEPARATOR,
    PRODUCER_GROUP,
    PROPERTY_SEPARATOR,
    TRANSACTION_PREPARED,
    UNIQ_KEY,
)
from producer._remoting.request_codes import RequestCode
from producer._remoting.store_record import StoreRecord, decode_records
from producer._types.transaction_state import TransactionState
from producer.errors import LocalProtocolError, RemoteProtocolError

__all__ = [
    "CHECK_FAILED_REMARK",
    "EXECUTE_FAILED_REMARK",
    "CheckRequest",
    "EndTransaction",
    "end_after_check",
    "end_after_send",
    "end_transaction_request",
    "half_message",
    "parse_check_request",
    "parse_end_transaction",
]

# The remarks the Java client puts on END_TRANSACTION when the user's code threw
# (the recording's frames 174 and 162): the prefix, then a short description.
EXECUTE_FAILED_REMARK = "executeLocalTransactionBranch exception: "
CHECK_FAILED_REMARK = "checkLocalTransactionState Exception: "


def half_message(prepared: PreparedMessage, group: str) -> PreparedMessage:
    """``prepared`` as a half message of ``group``: the two properties Java adds and the
    prepared bit. Everything else (header, body, UNIQ_KEY) is the normal send's."""
    if prepared.is_batch:
        raise LocalProtocolError("a batch cannot be transactional (send one message)")
    extra = PROPERTY_SEPARATOR.join(
        (
            TRANSACTION_PREPARED + NAME_VALUE_SEPARATOR + "true",
            PRODUCER_GROUP + NAME_VALUE_SEPARATOR + group,
        )
    )
    properties = (
        f"{prepared.properties}{PROPERTY_SEPARATOR}{extra}" if prepared.properties else extra
    )
    return PreparedMessage(
        prepared.topic,
        prepared.body,
        prepared.sys_flag | TRANSACTION_PREPARED_TYPE,
        prepared.flag,
        properties,
        prepared.msg_id,
        False,
        prepared.head,
    )


@dataclass(frozen=True, slots=True)
class EndTransaction:
    """END_TRANSACTION's header (``EndTransactionRequestHeader``) and remark."""

    producer_group: str
    tran_state_table_offset: int
    commit_log_offset: int
    state: TransactionState
    from_check: bool
    msg_id: str | None
    transaction_id: str | None = None
    remark: str | None = None


def end_after_send(
    group: str,
    state: TransactionState,
    *,
    queue_offset: int,
    offset_msg_id: str,
    msg_id: str,
    transaction_id: str | None,
    remark: str | None = None,
) -> EndTransaction:
    """After the local transaction: the half message is named by the send's answer."""
    return EndTransaction(
        producer_group=group,
        tran_state_table_offset=queue_offset,
        commit_log_offset=parse_offset_msg_id(offset_msg_id).commit_offset,
        state=state,
        from_check=False,
        msg_id=msg_id,
        transaction_id=transaction_id,
        remark=remark,
    )


def end_transaction_request(end: EndTransaction) -> RemotingCommand:
    """The oneway END_TRANSACTION (the caller's transport sets the oneway flag). Fields in
    the order the Java client wrote them; an absent ``transactionId`` is left out."""
    fields = {"producerGroup": end.producer_group, "commitLogOffset": str(end.commit_log_offset)}
    if end.msg_id is not None:
        fields["msgId"] = end.msg_id
    fields["tranStateTableOffset"] = str(end.tran_state_table_offset)
    fields["commitOrRollback"] = str(int(end.state))
    if end.transaction_id is not None:
        fields["transactionId"] = end.transaction_id
    fields["fromTransactionCheck"] = "true" if end.from_check else "false"
    return RemotingCommand(RequestCode.END_TRANSACTION, ext_fields=fields, remark=end.remark)


@dataclass(frozen=True, slots=True)
class CheckRequest:
    """A CHECK_TRANSACTION_STATE: which stored copy is asked about, and the message."""

    tran_state_table_offset: int
    commit_log_offset: int
    msg_id: str | None
    transaction_id: str | None
    offset_msg_id: str | None
    record: StoreRecord

    @property
    def producer_group(self) -> str | None:
        return self.record.properties.get(PRODUCER_GROUP)

    @property
    def uniq_key(self) -> str:
        """``UNIQ_KEY`` of the message, else the broker's msgId (as Java falls back)."""
        return self.record.properties.get(UNIQ_KEY) or self.msg_id or self.offset_msg_id or ""


def _long(request: RemotingCommand, name: str) -> int:
    text = request.field(name)
    if text is None or not text.lstrip("-").isdigit():
        raise RemoteProtocolError(f"{name} of request {request.code} is {text!r}, not a number")
    return int(text)


def parse_check_request(request: RemotingCommand) -> CheckRequest:
    """The header and the one stored message of a CHECK_TRANSACTION_STATE."""
    records = decode_records(request.body or b"")
    if len(records) != 1:
        raise RemoteProtocolError(f"a transaction check carries {len(records)} messages, not 1")
    return CheckRequest(
        tran_state_table_offset=_long(request, "tranStateTableOffset"),
        commit_log_offset=_long(request, "commitLogOffset"),
        msg_id=request.field("msgId"),
        transaction_id=request.field("transactionId"),
        offset_msg_id=request.field("offsetMsgId"),
        record=records[0],
    )


def end_after_check(
    check: CheckRequest, group: str, state: TransactionState, remark: str | None = None
) -> EndTransaction:
    """The answer to ``check``: its offsets and transaction id, the message's UNIQ_KEY."""
    return EndTransaction(
        producer_group=group,
        tran_state_table_offset=check.tran_state_table_offset,
        commit_log_offset=check.commit_log_offset,
        state=state,
        from_check=True,
        msg_id=check.uniq_key,
        transaction_id=check.transaction_id,
        remark=remark,
    )


def parse_end_transaction(request: RemotingCommand) -> EndTransaction:
    """An END_TRANSACTION as a broker reads it; a missing or non-numeric offset, or a
    ``commitOrRollback`` outside 0/8/12, raises ``RemoteProtocolError`` (whose text the
    dev broker turns into the real broker's remark)."""
    try:
        state = TransactionState(_long(request, "commitOrRollback"))
    except ValueError:
        raise RemoteProtocolError("commitOrRollback field wrong") from None
    return EndTransaction(
        producer_group=request.field("producerGroup") or "",
        tran_state_table_offset=_long(request, "tranStateTableOffset"),
        commit_log_offset=_long(request, "commitLogOffset"),
        state=state,
        from_check=request.field("fromTransactionCheck") == "true",
        msg_id=request.field("msgId"),
        transaction_id=request.field("transactionId"),
        remark=request.remark,
    )
