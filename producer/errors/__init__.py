"""Every error the SDK raises, in one tree rooted at :class:`ProducerError`.

Each error says what is known about the message's fate:

* ``Fate.NOT_STORED`` - the broker certainly did not store it (it was never written,
  or the broker answered with an error code); resending cannot duplicate it.
* ``Fate.UNKNOWN`` - the request was written and no answer came (timeout, connection
  lost after the write); the broker may have stored it.

Errors raised by a send also carry ``attempts``: one :class:`AttemptRecord` per try, and
``msg_id``: the ``UNIQ_KEY`` the message went out under. After ``Fate.UNKNOWN``, send it
again as ``Message(..., msg_id=error.msg_id)`` and consumers can de-duplicate the copies.
"""

from __future__ import annotations

from producer._response_codes import response_code_name
from producer._types.attempt_record import AttemptOutcome, AttemptRecord
from producer._types.fate import Fate
from producer.errors._base import (
    BackpressureError,
    CodecUnavailableError,
    ConnectError,
    ConnectionLostError,
    CorruptBodyError,
    InvalidOptionError,
    LocalProtocolError,
    MessageTypeError,
    MessageValidationError,
    NameServerError,
    NoRouteError,
    OffsetOutOfRangeError,
    ProducerClosedError,
    ProducerError,
    RemoteProtocolError,
    RequestTimeout,
    SendTimeout,
    SqlFilterError,
    TimedDeliveryUnsupportedError,
    TlsError,
    TransactionError,
    TransportError,
    UndecodableBodyError,
)
from producer.errors._broker import (
    AclError,
    BrokerError,
    BrokerSystemError,
    FlowControlError,
    GoAwayError,
    InvalidParameterError,
    MessageIllegalError,
    NoBuyerIdError,
    NoPermissionError,
    NotInCurrentUnitError,
    RequestCodeNotSupportedError,
    ServiceNotAvailableError,
    SubscriptionParseError,
    SystemBusyError,
    TopicNotExistError,
)
from producer.errors._pop import PopUnsupportedError, ReceiptHandleExpiredError
from producer.errors._reply import (
    NoReplyTopicError,
    NotARequestError,
    ReplyRefusedError,
    ReplyTimeout,
)

__all__ = [
    "AclError",
    "AttemptOutcome",
    "AttemptRecord",
    "BackpressureError",
    "BrokerError",
    "BrokerSystemError",
    "CodecUnavailableError",
    "ConnectError",
    "ConnectionLostError",
    "CorruptBodyError",
    "Fate",
    "FlowControlError",
    "GoAwayError",
    "InvalidOptionError",
    "InvalidParameterError",
    "LocalProtocolError",
    "MessageIllegalError",
    "MessageTypeError",
    "MessageValidationError",
    "NoBuyerIdError",
    "NoPermissionError",
    "NoReplyTopicError",
    "NotARequestError",
    "NameServerError",
    "NoRouteError",
    "NotInCurrentUnitError",
    "OffsetOutOfRangeError",
    "PopUnsupportedError",
    "ProducerClosedError",
    "ProducerError",
    "ReceiptHandleExpiredError",
    "RemoteProtocolError",
    "ReplyRefusedError",
    "ReplyTimeout",
    "RequestCodeNotSupportedError",
    "RequestTimeout",
    "SendTimeout",
    "ServiceNotAvailableError",
    "SqlFilterError",
    "SubscriptionParseError",
    "SystemBusyError",
    "TimedDeliveryUnsupportedError",
    "TlsError",
    "TopicNotExistError",
    "TransactionError",
    "TransportError",
    "UndecodableBodyError",
    "response_code_name",
]

# Shown as producer.errors.X in tracebacks and reprs, where users import them from; the
# value types re-exported here (Fate, AttemptRecord, ...) keep their home, producer._types.
for _name in __all__:
    _value = globals()[_name]
    if isinstance(_value, type) and issubclass(_value, BaseException):
        _value.__module__ = __name__
