"""The push consumer's settings, checked once (Java's defaults unless said otherwise)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from producer._consume.decisions import FlowLimits
from producer._consume.policy import ConsumeRetryPolicy, SeenRecently
from producer._remoting.codecs import DEFAULT_CODECS, BodyCodecs
from producer._remoting.consumer_requests import ConsumeFromWhere, MessageModel
from producer._remoting.delay_levels import DEFAULT_MAX_RECONSUME_TIMES
from producer.errors import InvalidOptionError

__all__ = ["ConsumerOptions"]

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
        flow = FlowLimits(
            max_messages=_positive(values.pop("max_cached_messages", 1000), "max_cached_messages"),
            max_bytes=_positive(
                values.pop("max_cached_bytes", 100 * 1024 * 1024), "max_cached_bytes"
            ),
            max_span=_positive(values.pop("max_span", 2000), "max_span"),
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
#: The tuning keywords PushConsumer spells out and passes to :meth:`ConsumerOptions.build`:
#: the fields it does not compute, and the flow limits by their Java-like names.
_COMPUTED = {"model", "consume_from", "consume_timestamp_ms", "flow"}
TUNING = frozenset({f.name for f in fields(ConsumerOptions)} - _COMPUTED) | {
    "max_cached_messages",
    "max_cached_bytes",
    "max_span",
}
