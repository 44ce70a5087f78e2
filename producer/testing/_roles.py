"""A broker's role in its group (master or slave) and what it changes in the answers,
as 4.9.4 decides them (no I/O, no state beyond the settings).

* ``PullMessageProcessor.processRequest``: ``suggestWhichBrokerId`` is, with
  ``slaveReadEnable``, the group's ``whichBrokerWhenConsumeSlowly`` (1) when the pull
  read far behind the commit log's end (``GetMessageResult.isSuggestPullingFromSlave``:
  more than ``accessMessageInMemoryMaxRatio`` = 40 % of the machine's memory behind),
  else the group's ``brokerId`` (0); without ``slaveReadEnable`` (the default, and the
  refmq kit's) always 0. A slave without ``slaveReadEnable`` sets PULL_RETRY_IMMEDIATELY
  first, but the status switch that follows overwrites the code: it serves the pull as a
  master would. A slave answers PULL_OFFSET_MOVED as PULL_RETRY_IMMEDIATELY suggesting
  the group's ``brokerId``, with the offset asked as ``nextBeginOffset``
  (``offsetCheckInSlave=false``: ``nextOffsetCorrection`` corrects nothing on a slave),
  and does not store the offset a pull carries (``storeOffsetEnable`` excludes SLAVE).
* 5.x (5.2.0) differs: a slave without ``slaveReadEnable`` rejects pulls before reading
  them (``rejectRequest``: SYSTEM_BUSY ``[REJECTREQUEST]...``); a slave with it, while its
  master is in the group and the pull is not slow, suggests 0 and answers anything but
  FOUND with PULL_RETRY_IMMEDIATELY (so it holds no pull); any broker stores the offset a
  pull carries (``DefaultPullMessageResultHandler``).
* ``DefaultMessageStore.checkStoreStatus``: a slave refuses every put with
  SERVICE_NOT_AVAILABLE (a send: code 14 and ``handlePutMessageResult``'s remark; a
  send-back: SYSTEM_ERROR with the status name); ``EndTransactionProcessor``: SLAVE_NOT_AVAILABLE
  with no remark.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from producer._remoting.command import RemotingCommand
from producer._remoting.request_codes import RequestCode
from producer._response_codes import ResponseCode

__all__ = [
    "MASTER_BROKER_ID",
    "SLAVE_BROKER_ID",
    "SLAVE_REFUSED",
    "BrokerRole",
    "physical_memory_share",
    "slave_refusal",
]

MASTER_BROKER_ID = 0  # MixAll.MASTER_ID, SubscriptionGroupConfig.brokerId's default
SLAVE_BROKER_ID = 1  # the slave's brokerId, SubscriptionGroupConfig.whichBrokerWhenConsumeSlowly
_IN_MEMORY_RATIO = 0.40  # MessageStoreConfig.accessMessageInMemoryMaxRatio = 40
# SendMessageProcessor.handlePutMessageResult, SERVICE_NOT_AVAILABLE; the real remark's
# disk figures are the machine's (``diskUtil()``), these are the refmq kit's at recording.
_SLAVE_PUT_REMARK = (
    "service not available now. It may be caused by one of the following reasons: "
    "the broker's disk is full [{disk}], messages are put to the slave, message store "
    "has been shut down, etc."
)


def physical_memory_share() -> int:
    """``TOTAL_PHYSICAL_MEMORY_SIZE * accessMessageInMemoryMaxRatio / 100`` of this machine."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not POSIX: a 16 GiB machine
        total = 16 << 30
    return int(total * _IN_MEMORY_RATIO)


_SENDS = frozenset(
    {RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE}
)
# AdminBrokerProcessor.validateSlave (4.9.4 and 5.x): topic and subscription-group writes
_ADMIN_WRITES = frozenset(
    {
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
    }
)
_ADMIN_WRITE_REMARK = (
    "Can't modify topic or subscription group from slave broker, "
    "please execute it from master broker."
)
#: What a slave refuses (it has no ``msgCheck`` failure to report first here: checked
#: against a real 4.9.4 slave, tests/golden/ha_slave_494; the admin writes as a real
#: 4.9.4 slave answered ``mqadmin deleteTopic -c``).
SLAVE_REFUSED = (
    _SENDS | {RequestCode.END_TRANSACTION, RequestCode.CONSUMER_SEND_MSG_BACK} | _ADMIN_WRITES
)


def slave_refusal(request: RemotingCommand, region: str) -> RemotingCommand:
    """A slave's answer to a put (send, send-back), an END_TRANSACTION or an admin write."""
    if request.code in _SENDS:
        trace = {"MSG_REGION": region, "TRACE_ON": "true"}
        remark = _SLAVE_PUT_REMARK.format(disk="CL:  0.24 CQ:  0.24 INDEX:  0.24")
        return request.make_response(
            ResponseCode.SERVICE_NOT_AVAILABLE, ext_fields=trace, remark=remark
        )
    if request.code in _ADMIN_WRITES:
        return request.make_response(ResponseCode.SYSTEM_ERROR, remark=_ADMIN_WRITE_REMARK)
    if request.code == RequestCode.END_TRANSACTION:
        # createResponseCommand's default remark: the processor sets none
        return request.make_response(
            ResponseCode.SLAVE_NOT_AVAILABLE, remark="not set any response code"
        )
    return request.make_response(ResponseCode.SYSTEM_ERROR, remark="SERVICE_NOT_AVAILABLE")


@dataclass
class BrokerRole:
    """``brokerRole`` (master or ``SLAVE``), ``slaveReadEnable`` and the in-memory bound
    past which a pull is suggested to go to a slave (``memory_bytes``)."""

    slave: bool = False
    slave_read_enable: bool = False
    memory_bytes: int = 0  # 0: this machine's share (physical_memory_share)
    five: bool = False  # a 5.x broker's rules (below)
    master_alive: bool = True  # 5.x ``getMinBrokerIdInGroup() == MASTER_ID``, for a slave

    @property
    def broker_id(self) -> int:
        """The id the broker registers with."""
        return SLAVE_BROKER_ID if self.slave else MASTER_BROKER_ID

    def pull_answer(
        self, code: int, next_offset: int, requested: int, behind_bytes: int | None
    ) -> tuple[int, int, int]:
        """A pull's (code, nextBeginOffset, suggestWhichBrokerId) by the role's rules, from
        the store's answer and how far behind the commit log's end the pull read
        (``None``: it read no entry, so it is not "slow")."""
        bound = self.memory_bytes or physical_memory_share()
        slow = behind_bytes is not None and behind_bytes > bound
        suggest = SLAVE_BROKER_ID if slow and self.slave_read_enable else MASTER_BROKER_ID
        if self.slave and code == ResponseCode.PULL_OFFSET_MOVED:
            return ResponseCode.PULL_RETRY_IMMEDIATELY, requested, MASTER_BROKER_ID
        redirect = self.five and self.slave and not slow and self.master_alive
        if redirect and code != ResponseCode.SUCCESS:  # "slave redirect pullRequest to master"
            code = ResponseCode.PULL_RETRY_IMMEDIATELY
        return code, next_offset, suggest

    def rejects_pull(self) -> bool:
        """5.x ``PullMessageProcessor.rejectRequest``: a slave without ``slaveReadEnable``."""
        return self.five and self.slave and not self.slave_read_enable

    def stores_pulled_offset(self) -> bool:
        """Whether the offset a pull carries (``FLAG_COMMIT_OFFSET``) is stored."""
        return self.five or not self.slave
