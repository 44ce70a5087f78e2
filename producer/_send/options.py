"""Producer settings: the Java client's names in snake_case, with its defaults, validated.

Each option's name, type, default and validation are written here and nowhere else:
:class:`producer.Producer`'s keyword arguments take their defaults from
:data:`DEFAULT_OPTIONS` and are checked against these fields when it is defined
(``producer._client.keywords.takes_options``). Every duration carries its unit.
:class:`~producer._send.planner.Planner` makes each send's plan from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from latency_fault import ROUTER_NAMES
from producer._client.keywords import Keyword, dataclass_keywords
from producer._remoting.codecs import Codec
from producer._remoting.message_codec import DEFAULT_COMPRESS_LEVEL, DEFAULT_COMPRESS_THRESHOLD
from producer._remoting.namespace import check_namespace
from producer._remoting.producer_requests import SendRequestFactory
from producer._remoting.validation import DEFAULT_MAX_MESSAGE_SIZE, DEFAULT_TIMER_MAX_DELAY_MS
from producer._send.backpressure import InFlightLimiter
from producer._types.retry_policy import RetryPolicy
from producer.errors import InvalidOptionError

Routing = Literal["off", "classic_4_9", "classic_5", "adaptive"]
DEFAULT_ROUTING: Routing = "adaptive"
# Java's CompressionType names (LZ4, ZSTD, ZLIB) are taken too, in any case.
CompressType = Literal["zlib", "lz4", "zstd", "ZLIB", "LZ4", "ZSTD"]
_CODECS: dict[str, Codec] = {"zlib": Codec.ZLIB, "lz4": Codec.LZ4, "zstd": Codec.ZSTD}
# The levels each library takes (Java's Deflater -1..9; zstd 1..22; LZ4 has none).
_LEVELS: dict[Codec, range] = {
    Codec.ZLIB: range(-1, 10),
    Codec.ZSTD: range(1, 23),
    Codec.LZ4: range(-(2**31), 2**31),
}


@dataclass(frozen=True, slots=True)
class ProducerOptions:
    """A :class:`producer.Producer`'s settings, one keyword each (see the README's
    semantics table), checked when built: a bad value raises InvalidOptionError."""

    send_timeout_ms: float = 3000.0
    retry_times_when_send_failed: int = 2
    retry_times_when_send_async_failed: int = 2
    retry_another_broker_when_not_store_ok: bool = False
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    compress_over: int = DEFAULT_COMPRESS_THRESHOLD  # compressMsgBodyOverHowmuch
    compress_level: int = DEFAULT_COMPRESS_LEVEL  # compressLevel (zlib, zstd)
    compress_type: CompressType = "zlib"  # compressType (5.x)
    timer_max_delay_ms: int = DEFAULT_TIMER_MAX_DELAY_MS  # the brokers' timerMaxDelaySec
    retry_policy: RetryPolicy = field(default_factory=RetryPolicy.default)
    routing: Routing = DEFAULT_ROUTING
    route_refresh_interval_ms: float = 30_000.0
    heartbeat_interval_ms: float = 30_000.0
    probe_interval_ms: float = 1_000.0
    connect_timeout_ms: float = 3000.0
    max_in_flight: int = 10_000
    max_in_flight_bytes: int = 256 * 1024 * 1024
    backpressure: Literal["wait", "fail"] = "wait"
    close_timeout_ms: float = 5000.0
    auto_create_topic: bool = True
    batching: bool = True
    batch_max_messages: int = 256
    batch_max_bytes: int = 256 * 1024
    batch_linger_ms: float = 0.0
    namespace: str | None = None  # ClientConfig.namespace: names wrapped as nsA%name

    def __post_init__(self) -> None:
        check_namespace(self.namespace)
        positive = {
            "send_timeout_ms": self.send_timeout_ms,
            "max_message_size": self.max_message_size,
            "route_refresh_interval_ms": self.route_refresh_interval_ms,
            "heartbeat_interval_ms": self.heartbeat_interval_ms,
            "probe_interval_ms": self.probe_interval_ms,
            "connect_timeout_ms": self.connect_timeout_ms,
            "max_in_flight": self.max_in_flight,
            "max_in_flight_bytes": self.max_in_flight_bytes,
            "batch_max_messages": self.batch_max_messages,
            "batch_max_bytes": self.batch_max_bytes,
        }
        for name, value in positive.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise InvalidOptionError(f"{name} must be a positive number, got {value!r}")
        for name in ("retry_times_when_send_failed", "retry_times_when_send_async_failed"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InvalidOptionError(f"{name} must be an int >= 0, got {value!r}")
        if self.compress_over < 0:
            raise InvalidOptionError(f"compress_over must be >= 0, got {self.compress_over!r}")
        if isinstance(self.compress_type, str):  # one spelling kept: Java's is upper case
            object.__setattr__(self, "compress_type", self.compress_type.lower())
        codec = _CODECS.get(self.compress_type)
        if codec is None:
            raise InvalidOptionError(
                f"compress_type must be one of {sorted(_CODECS)} (any case), "
                f"got {self.compress_type!r}"
            )
        level = self.compress_level
        if isinstance(level, bool) or not isinstance(level, int) or level not in _LEVELS[codec]:
            raise InvalidOptionError(
                f"compress_level {level!r} is not a {self.compress_type} level "
                f"({_LEVELS[codec].start}..{_LEVELS[codec].stop - 1})"
            )
        timer_max = self.timer_max_delay_ms
        if isinstance(timer_max, bool) or not isinstance(timer_max, int) or timer_max <= 0:
            raise InvalidOptionError(f"timer_max_delay_ms must be an int > 0, got {timer_max!r}")
        if self.close_timeout_ms < 0:
            raise InvalidOptionError(
                f"close_timeout_ms must be >= 0, got {self.close_timeout_ms!r}"
            )
        if self.routing not in ROUTER_NAMES:
            raise InvalidOptionError(
                f"routing must be one of {sorted(ROUTER_NAMES)}, got {self.routing!r}"
            )
        if self.backpressure not in ("wait", "fail"):
            raise InvalidOptionError(
                f"backpressure must be 'wait' or 'fail', got {self.backpressure!r}"
            )
        if not isinstance(self.batch_linger_ms, (int, float)) or not self.batch_linger_ms >= 0:
            raise InvalidOptionError(f"batch_linger_ms must be >= 0, got {self.batch_linger_ms!r}")
        if self.batch_max_bytes > self.max_message_size:
            raise InvalidOptionError(
                f"batch_max_bytes ({self.batch_max_bytes}) must not exceed max_message_size "
                f"({self.max_message_size}): the broker refuses a larger batch"
            )
        if not isinstance(self.retry_policy, RetryPolicy):
            raise InvalidOptionError(f"retry_policy must be a RetryPolicy: {self.retry_policy!r}")

    @property
    def codec(self) -> Codec:
        """The compression codec ``compress_type`` names."""
        return _CODECS[self.compress_type]

    def request_factory(self, group: str) -> SendRequestFactory:
        """The encoder of ``group``'s send requests, with these size and compression
        settings."""
        return SendRequestFactory(
            group,
            compress_threshold=self.compress_over,
            compress_level=self.compress_level,
            compress_codec=self.codec,
            max_message_size=self.max_message_size,
            namespace=self.namespace,
        )

    def in_flight_limiter(self) -> InFlightLimiter:
        """The backpressure these limits ask for (A7)."""
        return InFlightLimiter(
            self.max_in_flight, self.max_in_flight_bytes, fail_fast=self.backpressure == "fail"
        )

    @classmethod
    def keywords(cls) -> Mapping[str, Keyword]:
        """The producer's option keywords: one per field."""
        return dataclass_keywords(cls)

    @classmethod
    def from_keywords(cls, given: Mapping[str, object]) -> ProducerOptions:
        """The options from the keywords given, checked."""
        return cls(**given)  # type: ignore[arg-type]  # checked by __post_init__


DEFAULT_OPTIONS = ProducerOptions()
