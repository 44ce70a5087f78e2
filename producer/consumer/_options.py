"""The consumers' settings, one options class per client, each checked once (Java's
defaults unless said otherwise).

Each option's name, type, default and validation are written here: the keywords a
consumer's constructor takes are its options class's ``keywords()``, checked against its
signature when it is defined (``producer._client.keywords.takes_options``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from producer._client.keywords import Keyword, dataclass_keywords
from producer._consume.decisions import FlowLimits
from producer._consume.policy import SeenRecently
from producer._remoting.codecs import DEFAULT_CODECS, BodyCodecs
from producer._remoting.consumer_requests import ConsumeFromWhere, MessageModel
from producer._remoting.delay_levels import DEFAULT_MAX_RECONSUME_TIMES
from producer._remoting.namespace import check_namespace
from producer._remoting.pop_requests import MAX_POP_MESSAGES
from producer._types.consumer.retry_policy import ConsumeRetryPolicy
from producer.errors import InvalidOptionError

__all__ = [
    "ConsumerOptions",
    "DeadLetterOptions",
    "PopConsumerOptions",
    "PullOptions",
    "SimpleOptions",
]

#: Where a consumer with no committed offset starts: one setting, two vocabularies taken
#: alike by PushConsumer(consume_from=) and PullConsumer(auto_offset_reset=) - Kafka's
#: and Spark's "earliest"/"latest", and Java's CONSUME_FROM_FIRST/LAST_OFFSET.
START_WORDS = {"earliest": "earliest", "first": "earliest", "latest": "latest", "last": "latest"}
START_WORDS_HELP = "'earliest' (or 'first'), 'latest' (or 'last')"
_CONSUME_FROM = {"latest": ConsumeFromWhere.LAST_OFFSET, "earliest": ConsumeFromWhere.FIRST_OFFSET}
ORDERLY_MAX_RECONSUME_TIMES = 2**31 - 1  # Java's default for orderly: retry for ever
_MODELS = {"clustering": MessageModel.CLUSTERING, "broadcasting": MessageModel.BROADCASTING}


@dataclass(frozen=True, slots=True)
class ConsumerOptions:
    """A :class:`PushConsumer`'s settings, built from its keywords by :meth:`build`."""

    model: MessageModel = MessageModel.CLUSTERING
    consume_from: ConsumeFromWhere = ConsumeFromWhere.LAST_OFFSET
    consume_timestamp_ms: int | None = None
    orderly: bool = False
    consume_batch_size: int = 1
    pull_batch_size: int = 32
    max_concurrency: int = 20
    max_reconsume_times: int = DEFAULT_MAX_RECONSUME_TIMES
    retry_policy: ConsumeRetryPolicy = field(default_factory=ConsumeRetryPolicy)
    idempotency_window_ms: float | None = None  # opt-in: drop re-deliveries of successes
    idempotency_max_ids: int = 100_000
    flow: FlowLimits = field(default_factory=FlowLimits)
    suspend_timeout_ms: int = 15_000  # BROKER_SUSPEND_MAX_TIME_MILLIS
    pull_retry_delay_ms: float = 3000.0  # pullTimeDelayMillsWhenException
    suspend_current_queue_time_ms: int = 1000  # orderly: pause of a queue after a failure
    lock_interval_ms: float = 20_000.0  # orderly: LOCK_BATCH_MQ of every held queue
    flow_control_delay_ms: float = 50.0
    local_retry_delay_ms: float = 5000.0  # when send-back and its fallback both fail
    persist_interval_ms: float = 5000.0
    rebalance_interval_ms: float = 20_000.0
    heartbeat_interval_ms: float = 30_000.0
    close_timeout_ms: float = 10_000.0
    consume_timeout_ms: float = 15 * 60_000.0  # a listener call this old is sent back
    connect_timeout_ms: float = 3000.0
    body_codecs: BodyCodecs = DEFAULT_CODECS  # LZ4/zstd libraries found here (a test seam)

    @classmethod
    def build(
        cls, *, model: str = "clustering", consume_from: str | int = "last", **values: object
    ) -> ConsumerOptions:
        """Options from user-facing values: ``model`` is ``"clustering"`` or
        ``"broadcasting"``; ``consume_from`` is ``"latest"`` (or ``"last"``), ``"earliest"``
        (or ``"first"``) or a wall-clock timestamp in ms."""
        chosen_model = _MODELS.get(model)
        if chosen_model is None:
            raise InvalidOptionError(
                f"model={model!r}: use 'clustering' (each message to one member of the group) "
                "or 'broadcasting' (to every member)"
            )
        timestamp: int | None = None
        if isinstance(consume_from, bool) or not isinstance(consume_from, (str, int)):
            raise InvalidOptionError(f"consume_from={consume_from!r}: {START_WORDS_HELP} or ms")
        if isinstance(consume_from, int):
            where, timestamp = ConsumeFromWhere.TIMESTAMP, consume_from
        elif consume_from in START_WORDS:
            where = _CONSUME_FROM[START_WORDS[consume_from]]
        else:
            raise InvalidOptionError(
                f"consume_from={consume_from!r}: {START_WORDS_HELP}, or a timestamp in ms"
            )
        limits = FlowLimits()
        flow = FlowLimits(
            max_messages=_positive(
                values.pop("max_cached_messages", limits.max_messages), "max_cached_messages"
            ),
            max_bytes=_positive(
                values.pop("max_cached_bytes", limits.max_bytes), "max_cached_bytes"
            ),
            max_span=_positive(values.pop("max_span", limits.max_span), "max_span"),
        )
        for name in ("consume_batch_size", "pull_batch_size", "max_concurrency"):
            if name in values:
                _positive(values[name], name)
        if "max_reconsume_times" in values:
            _non_negative(values["max_reconsume_times"], "max_reconsume_times")
        elif values.get("orderly"):
            values["max_reconsume_times"] = ORDERLY_MAX_RECONSUME_TIMES
        if not isinstance(values.get("retry_policy", ConsumeRetryPolicy()), ConsumeRetryPolicy):
            raise InvalidOptionError("retry_policy: a producer.consumer.ConsumeRetryPolicy")
        window = values.get("idempotency_window_ms")
        if window is not None:  # checked now, used at start
            SeenRecently(window, values.get("idempotency_max_ids", 100_000))  # type: ignore[arg-type]
        if "suspend_current_queue_time_ms" in values:
            _positive(values["suspend_current_queue_time_ms"], "suspend_current_queue_time_ms")
        try:
            return cls(
                model=chosen_model,
                consume_from=where,
                consume_timestamp_ms=timestamp,
                flow=flow,
                **values,  # type: ignore[arg-type]
            )
        except TypeError as exc:
            raise InvalidOptionError(f"unknown consumer option: {exc}") from None

    @classmethod
    def keywords(cls) -> Mapping[str, Keyword]:
        """PushConsumer's option keywords: the fields it does not compute, as written
        above, but in the words a user brings (``model``, ``consume_from``, the flow
        limits by their Java-like names; ``None``: the default for the mode)."""
        limits = FlowLimits()
        return {
            "model": Keyword("clustering", "str"),
            "consume_from": Keyword("last", "str | int"),
            **dataclass_keywords(cls, leave_out=_COMPUTED),
            "max_reconsume_times": Keyword(None, "int | None"),  # 16; orderly: for ever
            "retry_policy": Keyword(None, "ConsumeRetryPolicy | None"),
            "max_cached_messages": Keyword(limits.max_messages, "int"),
            "max_cached_bytes": Keyword(limits.max_bytes, "int"),
            "max_span": Keyword(limits.max_span, "int"),
        }

    @classmethod
    def from_keywords(cls, given: Mapping[str, object]) -> ConsumerOptions:
        """The options from the keywords given (a ``None`` tuning value: the default)."""
        values = {k: v for k, v in given.items() if v is not None or k in _WORDS}
        return cls.build(**values)  # type: ignore[arg-type]

    def guard(self) -> SeenRecently | None:
        """The idempotency guard these options ask for (a fresh one), or ``None``."""
        if self.idempotency_window_ms is None:
            return None
        return SeenRecently(self.idempotency_window_ms, self.idempotency_max_ids)


def _positive(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidOptionError(f"{name}={value!r}: must be an integer >= 1")
    return value


def _non_negative(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidOptionError(f"{name}={value!r}: must be an integer >= 0")
    return value


DEFAULT_OPTIONS = ConsumerOptions()  # PushConsumer's defaults: written once, above
#: Fields PushConsumer computes from its keywords, or that are no keyword (a test seam).
_COMPUTED = {"model", "consume_from", "consume_timestamp_ms", "flow", "body_codecs"}
_WORDS = {"model", "consume_from"}  # taken as given, even None (refused, naming the words)


# -- the other consumers ---------------------------------------------------------------

OffsetReset = Literal["earliest", "latest", "first", "last"]
MAX_PULL_MESSAGES = 32  # a 4.9.4 broker sends at most this many per pull (in memory)
CONNECT_TIMEOUT_MS = 3000.0
#: The longest invisible time a pop or a change may ask for: the header's Java ``long``.
#: Neither the 5.2.0 nor the 5.3.3 broker checks invisible times (``PopMessageProcessor``
#: and ``ChangeInvisibleTimeProcessor`` read them as given; the recorded 5.2.0 session
#: served 8 s and 6 s): only the 5.x proxy bounds them (10 s-12 h), and this client talks
#: to brokers. It refuses only a time a message could not be acked within (0 or less).
MAX_INVISIBLE_MS = (1 << 63) - 1
#: The longest a receive waits for messages (12 h).
MAX_AWAIT_MS = 12 * 3600 * 1000
AWAIT_DURATION_MS = 15_000  # how long a pop waits for messages (the 5.2.0 push consumer's)


class _FromFields:
    """Options whose keywords are their fields, one for one."""

    __slots__ = ()

    @classmethod
    def keywords(cls) -> Mapping[str, Keyword]:
        """The constructor's option keywords: one per field."""
        return dataclass_keywords(cls)

    @classmethod
    def from_keywords(cls, given: Mapping[str, object]) -> _FromFields:
        """The options from the keywords given, checked."""
        return cls(**given)


@dataclass(frozen=True, slots=True)
class PullOptions(_FromFields):
    """A :class:`PullConsumer`'s settings."""

    auto_offset_reset: OffsetReset = "latest"
    offset_out_of_range: Literal["reset", "raise"] = "reset"
    max_pull_messages: int = MAX_PULL_MESSAGES
    request_timeout_ms: float = 5000.0
    connect_timeout_ms: float = CONNECT_TIMEOUT_MS
    namespace: str | None = None

    def __post_init__(self) -> None:
        check_namespace(self.namespace)
        if self.auto_offset_reset not in START_WORDS:
            raise InvalidOptionError(
                f"auto_offset_reset must be {START_WORDS_HELP}, got {self.auto_offset_reset!r}"
            )
        if self.offset_out_of_range not in ("reset", "raise"):
            raise InvalidOptionError(
                f"offset_out_of_range must be one of ('reset', 'raise'), "
                f"got {self.offset_out_of_range!r}"
            )
        check_int("max_pull_messages", self.max_pull_messages, 1, 1024)


@dataclass(frozen=True, slots=True)
class SimpleOptions(_FromFields):
    """A :class:`SimpleConsumer`'s settings."""

    await_duration_ms: int = AWAIT_DURATION_MS
    invisible_duration_ms: int = 60_000
    receive_batch: int = 16
    orderly: bool = False
    request_timeout_ms: float = 3000.0
    connect_timeout_ms: float = CONNECT_TIMEOUT_MS

    def __post_init__(self) -> None:
        check_int("await_duration_ms", self.await_duration_ms, 0, MAX_AWAIT_MS)
        check_int("receive_batch", self.receive_batch, 1, MAX_POP_MESSAGES)
        check_invisible(self.invisible_duration_ms)


@dataclass(frozen=True, slots=True)
class PopConsumerOptions(_FromFields):
    """A :class:`PopConsumer`'s settings (its pops' own are checked as a
    :class:`SimpleOptions`)."""

    orderly: bool = False
    consume_batch_size: int = 1
    pop_batch_size: int = 16
    max_cached_messages: int = 64
    invisible_duration_ms: int = 60_000
    await_duration_ms: int = AWAIT_DURATION_MS
    max_reconsume_times: int = DEFAULT_MAX_RECONSUME_TIMES
    close_timeout_ms: float = 30_000.0

    def __post_init__(self) -> None:
        check_int("consume_batch_size", self.consume_batch_size, 1, 1024)
        check_int("pop_batch_size", self.pop_batch_size, 1, MAX_POP_MESSAGES)
        check_int("max_cached_messages", self.max_cached_messages, 1, 1 << 20)
        check_int("max_reconsume_times", self.max_reconsume_times, 1, 1 << 16)


@dataclass(frozen=True, slots=True)
class DeadLetterOptions(_FromFields):
    """A :class:`DeadLetterQueue`'s settings."""

    connect_timeout_ms: float = CONNECT_TIMEOUT_MS


def check_int(name: str, value: object, low: int, high: int) -> None:
    """``value`` is an int in ``low..high``; else :class:`InvalidOptionError` naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidOptionError(f"{name} must be an int in {low}..{high}, got {value!r}")


def check_invisible(value: object) -> None:
    """An invisible time a broker takes (a positive Java ``long`` of ms); else
    :class:`InvalidOptionError`."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_INVISIBLE_MS:
        raise InvalidOptionError(
            f"invisible_duration_ms must be a positive int of ms (the broker hides the "
            f"message that long; 0 or less could never be acked), got {value!r}"
        )
