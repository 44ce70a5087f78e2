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

import enum
from collections.abc import Sequence
from typing import ClassVar, TypeVar

import msgspec

from producer._response_codes import RETRIED_BY_DEFAULT, ResponseCode, response_code_name

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
    "NameServerError",
    "NoRouteError",
    "NotInCurrentUnitError",
    "OffsetOutOfRangeError",
    "ProducerClosedError",
    "ProducerError",
    "RemoteProtocolError",
    "RequestCodeNotSupportedError",
    "RequestTimeout",
    "SendTimeout",
    "ServiceNotAvailableError",
    "SystemBusyError",
    "TimedDeliveryUnsupportedError",
    "TlsError",
    "TopicNotExistError",
    "TransactionError",
    "TransportError",
    "UndecodableBodyError",
    "response_code_name",
]


# -- what an error carries -------------------------------------------------------------
class AttemptOutcome(enum.Enum):
    """How one attempt ended, as far as the client could tell."""

    OK = "ok"
    NOT_STORED_OK = "not_store_ok"  # FLUSH_DISK_TIMEOUT / FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE
    BROKER_ERROR = "broker_error"
    CONNECT_ERROR = "connect_error"
    CONNECTION_LOST = "connection_lost"
    TIMEOUT = "timeout"
    PROTOCOL_ERROR = "protocol_error"
    CANCELLED = "cancelled"


class AttemptRecord(msgspec.Struct, frozen=True):
    """One attempt of one send: where it went and what came back."""

    broker_name: str
    queue_id: int
    outcome: AttemptOutcome
    code: int | None
    latency_ms: float

    def __str__(self) -> str:
        code = "" if self.code is None else f" code={self.code}"
        return (
            f"{self.broker_name}/q{self.queue_id}: {self.outcome.value}{code} "
            f"in {self.latency_ms:.1f} ms"
        )


class Fate(enum.Enum):
    """What the client knows about whether a failed message was stored."""

    NOT_STORED = "not_stored"
    UNKNOWN = "unknown"


_E = TypeVar("_E", bound="ProducerError")


class ProducerError(Exception):
    """Root of every error raised by this SDK."""

    default_fate: ClassVar[Fate] = Fate.NOT_STORED

    def __init__(
        self,
        message: str,
        *,
        code: int | None = None,
        fate: Fate | None = None,
        attempts: Sequence[AttemptRecord] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.fate = self.default_fate if fate is None else fate
        self.attempts: tuple[AttemptRecord, ...] = tuple(attempts)
        # The UNIQ_KEY a failed send went out under (comma-joined for send_batch); None
        # when it failed before it had one. Re-send under it when the fate is UNKNOWN.
        self.msg_id: str | None = None

    @property
    def definitely_not_stored(self) -> bool:
        return self.fate is Fate.NOT_STORED

    def copy(self: _E) -> _E:
        """The same error as a new instance (each member of a batch gets its own)."""
        clone = type(self).__new__(type(self))
        clone.args = self.args
        clone.__dict__.update(self.__dict__)
        clone.__cause__ = self.__cause__
        return clone

    def with_attempts(self, attempts: Sequence[AttemptRecord]) -> ProducerError:
        """Attach the send's attempt history (in place) and return self for ``raise``."""
        self.attempts = tuple(attempts)
        return self

    def __str__(self) -> str:
        if not self.attempts:
            return self.message
        history = "; ".join(str(a) for a in self.attempts)
        return f"{self.message} [attempts: {history}]"


# -- local misuse ---------------------------------------------------------------------


class LocalProtocolError(ProducerError):
    """The SDK was used wrongly (bad argument, wrong state)."""


class MessageValidationError(LocalProtocolError, ValueError):
    """A message or argument broke one of RocketMQ's client-side rules; nothing was sent.

    ``field`` names what was wrong, ``value`` is the offending value (possibly truncated)
    and ``limit`` the rule it broke.
    """

    def __init__(self, field: str, value: object, limit: str) -> None:
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        super().__init__(f"{field} {_rule_sentence(limit)} (got {shown})")
        self.field = field
        self.value = value
        self.limit = limit


def _rule_sentence(limit: str) -> str:
    """A validation rule as the rest of a sentence about the field it names."""
    if limit.startswith("only "):
        return f"must contain {limit} characters"
    if limit.startswith("no "):
        return f"must have {limit}"
    if "forbidden" in limit:
        return f"is not allowed: {limit}"
    return f"must be {limit}"


class MessageTypeError(MessageValidationError, TypeError):
    """A message field has the wrong type (e.g. a ``str`` body); nothing was sent."""


class InvalidOptionError(LocalProtocolError, ValueError, TypeError):
    """A constructor argument or option is invalid (names the option and the bad value),
    or unknown (names the nearest option there is): a ``TypeError`` too, as Python's own
    error for an unexpected keyword is."""


class ProducerClosedError(LocalProtocolError):
    """The producer is closed (or closing) and accepts no more sends."""


class TransactionError(LocalProtocolError):
    """A transaction step that cannot be taken: ending a half message this producer did not
    send or already ended, or committing one the broker did not store SEND_OK."""


class BackpressureError(ProducerError):
    """The in-flight limit is reached and the producer is set to fail fast."""


# -- the wire ---------------------------------------------------------------------------


class RemoteProtocolError(ProducerError):
    """The peer sent bytes that are not a valid remoting frame; the connection is closed."""

    default_fate = Fate.UNKNOWN


class TransportError(ProducerError):
    """A connection-level failure talking to a name server or broker."""


class ConnectError(TransportError):
    """Could not open a connection; nothing was sent on it."""


class TlsError(ConnectError):
    """The TLS handshake failed: an untrusted or mismatched certificate, or a peer that
    does not speak TLS. Nothing was written; the message names the fix."""


class ConnectionLostError(TransportError):
    """The connection closed with the request pending.

    ``written`` tells whether the request had been handed to the socket: if it had, the
    broker may have processed it (fate unknown); if not, it was definitely not sent.
    """

    def __init__(self, message: str, *, written: bool, **kwargs: object) -> None:
        fate = Fate.UNKNOWN if written else Fate.NOT_STORED
        super().__init__(message, fate=fate, **kwargs)  # type: ignore[arg-type]
        self.written = written


class RequestTimeout(TransportError, TimeoutError):
    """No response within the attempt's network timeout (fate unknown once written)."""

    default_fate = Fate.UNKNOWN


class SendTimeout(ProducerError, TimeoutError):
    """The send's total budget (``send_timeout_ms``) ran out; carries the last attempt error."""

    def __init__(
        self,
        message: str,
        *,
        last_error: ProducerError | None = None,
        attempts: Sequence[AttemptRecord] = (),
    ) -> None:
        fate = Fate.NOT_STORED if last_error is None else last_error.fate
        code = None if last_error is None else last_error.code
        super().__init__(message, code=code, fate=fate, attempts=attempts)
        self.last_error = last_error


class NoRouteError(ProducerError):
    """The name servers answered and the topic has no writable queue (unknown, or read-only).

    ``code`` is the name server's response code (17 TOPIC_NOT_EXIST) when it gave one.
    """

    def __init__(
        self,
        topic: str,
        namesrv_addrs: Sequence[str],
        reason: str = "",
        *,
        code: int | None = None,
    ) -> None:
        detail = f": {reason}" if reason else ""
        super().__init__(
            f"no route for topic {topic!r} from name servers {list(namesrv_addrs)}{detail}",
            code=code,
        )
        self.topic = topic
        self.namesrv_addrs = tuple(namesrv_addrs)


class NameServerError(ConnectError):
    """No name server answered as a RocketMQ name server (nothing listening, another
    protocol on the port, a broker's port): check the ``namesrv`` addresses."""


# -- consuming --------------------------------------------------------------------------


class OffsetOutOfRangeError(ProducerError):
    """A consumer asked for an offset its queue no longer has: below the queue's minimum
    (those messages were deleted before they were read: data loss) or beyond its maximum.
    ``suggested`` is the offset the broker offered instead; seek there to go on."""

    def __init__(
        self, queue: str, requested: int, suggested: int, min_offset: int, max_offset: int
    ) -> None:
        why = (
            f"{min_offset - requested} messages were deleted before they were read"
            if requested < min_offset
            else "past the end"
        )
        super().__init__(
            f"offset {requested} of {queue} is out of range [{min_offset}, {max_offset}] "
            f"({why}); the broker suggests {suggested}: seek there to go on"
        )
        self.queue = queue
        self.requested = requested
        self.suggested = suggested
        self.min_offset = min_offset
        self.max_offset = max_offset


# -- broker answers ---------------------------------------------------------------------


class BrokerError(ProducerError):
    """The broker (or name server) answered with an error response code.

    ``BrokerError.for_code(code, remark)`` picks the subclass for the code. Each class's
    ``code_name`` and ``retriable`` come from the one code table
    (:class:`producer._response_codes.ResponseCode`): ``retriable`` says whether the
    default :class:`~producer.RetryPolicy` retries the code (throttling codes after a
    back-off); the policy in use has the final word.
    """

    code_value: ClassVar[ResponseCode | None] = None
    code_name: ClassVar[str] = "UNKNOWN"
    retriable: ClassVar[bool] = False
    #: The refusal is about the sender, not the broker: no broker or policy retries it.
    never_retried: ClassVar[bool] = False
    _by_code: ClassVar[dict[int, type[BrokerError]]] = {}

    def __init__(self, code: int, remark: str | None = None, **kwargs: object) -> None:
        text = f"broker error {code} {response_code_name(code)}"
        if remark:
            text += f": {remark}"
        super().__init__(text, code=code, **kwargs)  # type: ignore[arg-type]
        self.remark = remark

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        code = cls.code_value
        if code is not None:
            cls.code_name = code.name
            cls.retriable = code.value in RETRIED_BY_DEFAULT
            BrokerError._by_code[code.value] = cls

    @classmethod
    def for_code(cls, code: int, remark: str | None = None) -> BrokerError:
        """The typed error for a response code (``BrokerError`` itself for other codes);
        an ACL refusal, which a 4.x broker answers as SYSTEM_ERROR, is an :class:`AclError`."""
        if code == ResponseCode.SYSTEM_ERROR and remark and _ACL_EXCEPTION in remark:
            return AclError(code, remark)
        return cls._by_code.get(code, BrokerError)(code, remark)


_ACL_EXCEPTION = "org.apache.rocketmq.acl.common.AclException"


class AclError(BrokerError):
    """The broker's access control refused the request: no access key, an unknown one, a
    signature that does not match, or no permission for the topic. A 4.x broker answers
    1 SYSTEM_ERROR with an ``AclException`` remark; it is never retried (every broker of
    the cluster would say the same). Check ``credentials=`` and the account's
    permissions (the remark says which)."""

    code_name = "SYSTEM_ERROR"
    never_retried = True


class BrokerSystemError(BrokerError):
    """1 SYSTEM_ERROR: the broker failed internally."""

    code_value = ResponseCode.SYSTEM_ERROR


class SystemBusyError(BrokerError):
    """2 SYSTEM_BUSY: the broker is throttling."""

    code_value = ResponseCode.SYSTEM_BUSY


class RequestCodeNotSupportedError(BrokerError):
    """3 REQUEST_CODE_NOT_SUPPORTED: the peer does not know the request."""

    code_value = ResponseCode.REQUEST_CODE_NOT_SUPPORTED


class MessageIllegalError(BrokerError):
    """13 MESSAGE_ILLEGAL: the broker rejected the message's size or properties."""

    code_value = ResponseCode.MESSAGE_ILLEGAL


class ServiceNotAvailableError(BrokerError):
    """14 SERVICE_NOT_AVAILABLE: the broker cannot take writes now."""

    code_value = ResponseCode.SERVICE_NOT_AVAILABLE


class NoPermissionError(BrokerError):
    """16 NO_PERMISSION: the broker refuses writes to this topic."""

    code_value = ResponseCode.NO_PERMISSION


class TopicNotExistError(BrokerError):
    """17 TOPIC_NOT_EXIST: the broker (or name server) does not know the topic."""

    code_value = ResponseCode.TOPIC_NOT_EXIST


class InvalidParameterError(BrokerError):
    """29 INVALID_PARAMETER: a request header field was rejected."""

    code_value = ResponseCode.INVALID_PARAMETER


class NoBuyerIdError(BrokerError):
    """204 NO_BUYER_ID."""

    code_value = ResponseCode.NO_BUYER_ID


class NotInCurrentUnitError(BrokerError):
    """205 NOT_IN_CURRENT_UNIT."""

    code_value = ResponseCode.NOT_IN_CURRENT_UNIT


class FlowControlError(BrokerError):
    """215 FLOW_CONTROL: the broker is throttling."""

    code_value = ResponseCode.FLOW_CONTROL


class GoAwayError(BrokerError):
    """1500 GO_AWAY: the broker is shutting down; try another."""

    code_value = ResponseCode.GO_AWAY


# -- message bodies -----------------------------------------------------------------------


class CodecUnavailableError(LocalProtocolError, ImportError):
    """A body's codec (LZ4 or zstd) needs a library this install lacks. ``codec`` names
    it; install the extra the message names (``rocketmq-aio-producer[compression]``)."""

    def __init__(self, codec: str, module: str, extra: str) -> None:
        super().__init__(
            f"{codec} bodies need the {module!r} package: "
            f'pip install "rocketmq-aio-producer[{extra}]"'
        )
        self.codec = codec
        self.extra = extra


class CorruptBodyError(RemoteProtocolError):
    """A compressed body does not decode with the codec its sysFlag names (corrupt,
    truncated, or inflating beyond the size bound)."""


class UndecodableBodyError(ProducerError):
    """A pulled message's body could not be decoded, so its listener was not called: the
    message is a consume failure (retried, then dead-lettered) and never reaches a
    listener as if it were the message. ``cause`` is the :class:`CodecUnavailableError`
    (install the extra; ``permanent`` is False) or :class:`CorruptBodyError`
    (``permanent``: it is dead-lettered at once)."""

    def __init__(
        self, msg_id: str, cause: ProducerError, *, queue: str = "", offset: int = -1
    ) -> None:
        # A pull consumer says where the message is, and how to step over it.
        where = f" (offset {offset} of {queue}; to skip it, seek that queue to {offset + 1})"
        super().__init__(
            f"message {msg_id}: body cannot be decoded: {cause.message}" + (where if queue else "")
        )
        self.msg_id = msg_id
        self.cause = cause
        self.permanent = not isinstance(cause, CodecUnavailableError)
        self.queue = queue
        self.offset = offset


class TimedDeliveryUnsupportedError(LocalProtocolError):
    """A timed message (``deliver_at_ms`` / ``delay_ms``) for a topic served by a broker
    older than 5.0, which would ignore the timer and deliver it at once. Nothing was
    written. Use ``delay_level`` (the 18 fixed levels) with a 4.x broker."""

    def __init__(self, broker_name: str, addr: str, version: str) -> None:
        super().__init__(
            f"broker {broker_name} ({addr}) answers as {version}, which has no timed "
            "delivery and would deliver the message at once: use delay_level (1-18) on a "
            "4.x broker, or send deliver_at_ms/delay_ms to a 5.x broker"
        )
        self.broker_name = broker_name
        self.broker_version = version
