"""The one table of response codes: it imports nothing, so both the error tree and the
remoting core build on it (the errors take each class's code, name and retriability
from here; the remoting core maps answers to statuses and errors).

:class:`ResponseCode` is the only place a response code is described: its name, the
send status it maps to (codes 0, 10, 11, 12), whether the Java client retries it (4.9
and 5.3) and whether it means "slow down". Error classes, retry presets and send
statuses are all derived from it.
"""

from __future__ import annotations

import enum

# The value of the ``SendStatus`` (``producer._types.send_status``) a storing code maps
# to: that type sits above this table, which imports nothing.
_OK = "SEND_OK"
_FDT = "FLUSH_DISK_TIMEOUT"
_FST = "FLUSH_SLAVE_TIMEOUT"
_SNA = "SLAVE_NOT_AVAILABLE"
_49 = 0b001  # in DefaultMQProducer.retryResponseCodes of 4.9
_53 = 0b010  # ... of 5.3
_SLOW = 0b100  # throttling: retrying at once only adds load


class ResponseCode(enum.IntEnum):
    """Response codes with their meaning for a send (names as in Java's ``ResponseCode``).

    Code 209 is POLLING_FULL in 5.x (UPDATE_AND_CREATE_ACL_CONFIG_FAILED in 4.9); 215 is
    5.x's FLOW_CONTROL; 29 is INVALID_PARAMETER in 5.x (FLUSH_DISK_FAILED in late 4.9).
    211-213, 501, 604 and 3001-3002 are 5.3.3's (remoting/protocol/ResponseCode.java; the
    controller's 2000-2016 and the client-side RPC_* codes never answer a send); 5.3's
    ``DefaultMQProducer.retryResponseCodes`` retries none of them.
    """

    send_status: str | None  # the value of the SendStatus it maps to
    retried_by_java_4_9: bool
    retried_by_java_5_3: bool
    throttles: bool

    def __new__(cls, code: int, status: str | None = None, traits: int = 0) -> ResponseCode:
        member = int.__new__(cls, code)
        member._value_ = code
        member.send_status = status
        member.retried_by_java_4_9 = bool(traits & _49)
        member.retried_by_java_5_3 = bool(traits & _53)
        member.throttles = bool(traits & _SLOW)
        return member

    #  name = (code, send status, traits)
    SUCCESS = (0, _OK)
    SYSTEM_ERROR = (1, None, _49 | _53)
    SYSTEM_BUSY = (2, None, _53 | _SLOW)
    REQUEST_CODE_NOT_SUPPORTED = 3
    TRANSACTION_FAILED = 4
    FLUSH_DISK_TIMEOUT = (10, _FDT)
    SLAVE_NOT_AVAILABLE = (11, _SNA)
    FLUSH_SLAVE_TIMEOUT = (12, _FST)
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = (14, None, _49 | _53)
    VERSION_NOT_SUPPORTED = 15
    NO_PERMISSION = (16, None, _49 | _53)
    TOPIC_NOT_EXIST = (17, None, _49 | _53)
    TOPIC_EXIST_ALREADY = 18
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    FILTER_DATA_NOT_EXIST = 27
    FILTER_DATA_NOT_LATEST = 28
    INVALID_PARAMETER = 29
    TRANSACTION_SHOULD_COMMIT = 200
    TRANSACTION_SHOULD_ROLLBACK = 201
    TRANSACTION_STATE_UNKNOW = 202
    TRANSACTION_STATE_GROUP_WRONG = 203
    NO_BUYER_ID = (204, None, _49 | _53)
    NOT_IN_CURRENT_UNIT = (205, None, _49 | _53)
    CONSUMER_NOT_ONLINE = 206
    CONSUME_MSG_TIMEOUT = 207
    NO_MESSAGE = 208
    POLLING_FULL = 209
    POLLING_TIMEOUT = 210
    BROKER_NOT_EXIST = 211  # 5.x from here; none is in 5.3's retryResponseCodes
    BROKER_DISPATCH_NOT_COMPLETE = 212
    BROADCAST_CONSUMPTION = 213
    FLOW_CONTROL = (215, None, _SLOW)
    NOT_LEADER_FOR_QUEUE = 501
    ILLEGAL_OPERATION = 604
    GO_AWAY = (1500, None, _53)
    USER_NOT_EXIST = 3001  # 5.3 ACL 2.0
    POLICY_NOT_EXIST = 3002


_BY_VALUE: dict[int, ResponseCode] = {c.value: c for c in ResponseCode}

#: DefaultMQProducer.retryResponseCodes of the 4.9 and 5.3 Java clients.
RETRIED_BY_JAVA_4_9 = frozenset(c.value for c in ResponseCode if c.retried_by_java_4_9)
RETRIED_BY_JAVA_5_3 = frozenset(c.value for c in ResponseCode if c.retried_by_java_5_3)
#: Codes that mean "slow down": retried only after a back-off.
THROTTLING_CODES = frozenset(c.value for c in ResponseCode if c.throttles)
#: What the default retry policy retries: 5.3's codes, and throttling ones after a back-off.
RETRIED_BY_DEFAULT = RETRIED_BY_JAVA_5_3 | THROTTLING_CODES


def response_code_name(code: int) -> str:
    """Java's name for a response code, or ``"UNKNOWN"``."""
    known = _BY_VALUE.get(code)
    return "UNKNOWN" if known is None else known.name
