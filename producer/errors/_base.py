"""The root of the error tree and every error that is not a broker's answer (those are
in :mod:`producer.errors._broker`); what an error carries, its attempts and its fate, are
value types in :mod:`producer._types`. Public through :mod:`producer.errors`."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import ClassVar, TypeVar

from producer._types.attempt_record import AttemptRecord
from producer._types.fate import Fate

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
        """True when the message is known not to be stored: sending it again cannot duplicate it."""
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

    @classmethod
    def unknown(cls, owner: str, name: str, known: Iterable[str]) -> InvalidOptionError:
        """The error for an option ``owner`` does not take, naming the closest one it
        does (``did you mean 'send_timeout_ms'?``)."""
        return cls(f"{owner} got an unknown option {name!r}{did_you_mean(name, known)}")


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``": did you mean 'x'?"`` naming the closest of ``known`` to ``name``, or ``""``."""
    nearest = difflib.get_close_matches(name, list(known), n=1)
    return f": did you mean {nearest[0]!r}?" if nearest else ""


class SqlFilterError(InvalidOptionError):
    """A SQL92 filter (``subscribe(topic, sql=...)``) does not parse. ``reason`` is the
    text a 4.9.4 broker refuses it with (23 SUBSCRIPTION_PARSE_FAILED); RocketMQ's subset
    is comparisons, ``[NOT] BETWEEN``, ``[NOT] IN ('a', ...)``, ``IS [NOT] NULL``,
    ``AND``/``OR``/``NOT``, and string, number, TRUE/FALSE/NULL constants."""

    def __init__(self, expression: str, reason: str) -> None:
        super().__init__(
            f"sql={expression!r} is not a valid SQL92 filter; fix the expression. "
            f"The broker would refuse it with: {reason}"
        )
        self.expression = expression
        self.reason = reason


class ProducerClosedError(LocalProtocolError):
    """The client is not running: closed (or closing) and taking no more calls, or not
    started yet (the message says which, and what to do)."""


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
