"""OpenTelemetry through ``opentelemetry-api`` only: a no-op until the app installs an SDK.

One span per send (``<topic> publish``, kind PRODUCER) with an event per attempt, messaging
semantic-convention attributes, and metrics: send duration, attempts, retries and bans.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Awaitable, Callable, Sequence

from opentelemetry import metrics, propagate, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from producer._client.clock import Clock
from producer._types.message import Message
from producer._types.send_result import SendResult
from producer.errors import AttemptRecord, ProducerError

_SCOPE = "rocketmq-aio-producer"
_RECHECK_MS = 1000.0
# The API's own providers (a proxy until an SDK is set, or explicit no-ops): by class name,
# as the proxy meter provider's class is private.
_API_DEFAULTS = ("_Proxy", "NoOp")


TRACEPARENT = "traceparent"  # W3C trace context, carried as a user property


def with_trace_context(message: Message) -> Message:
    """``message`` with the current span's trace context (W3C ``traceparent``, through the
    global propagator) among its properties, so that a consumer's span can link to the
    trace that sent it. Unchanged when no span is current or it already carries one."""
    if TRACEPARENT in message.properties:
        return message
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    if not carrier:
        return message
    return dataclasses.replace(message, properties={**message.properties, **carrier})


class Telemetry:
    """The producer's instruments; cheap when no SDK is configured."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._enabled = True
        self._recheck_at_ms = -math.inf
        self._tracing_seen = self.tracing
        self._tracer = trace.get_tracer(_SCOPE)
        meter = metrics.get_meter(_SCOPE)
        self._duration = meter.create_histogram(
            "messaging.client.operation.duration",
            unit="s",
            description="Duration of a send, all attempts included",
        )
        self._attempts = meter.create_counter(
            "rocketmq.producer.attempts", unit="{attempt}", description="Send attempts by outcome"
        )
        self._retries = meter.create_counter(
            "rocketmq.producer.retries", unit="{retry}", description="Attempts after the first"
        )
        self._bans = meter.create_counter(
            "rocketmq.producer.broker_bans",
            unit="{ban}",
            description="Times fault-aware routing started avoiding a broker",
        )

    def enabled(self, now_ms: float) -> bool:
        """Whether an SDK is installed for traces or metrics, checked at most once a
        second (``now_ms``: the caller's clock): without one, a send makes no
        OpenTelemetry call at all, where even the API's no-op objects cost microseconds.
        An SDK installed later is seen within a second."""
        if now_ms >= self._recheck_at_ms:
            self._recheck_at_ms = now_ms + _RECHECK_MS
            meter_provider = type(metrics.get_meter_provider()).__name__
            self._tracing_seen = self.tracing
            self._enabled = self._tracing_seen or not meter_provider.startswith(_API_DEFAULTS)
        return self._enabled

    @property
    def tracing(self) -> bool:
        """An SDK's tracer provider is installed (spans would be recorded)."""
        return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)

    def carry_context(self, message: Message) -> Message:
        """With tracing on, the message carries the caller's trace context to consumers.

        Tracing as last seen by :meth:`enabled` (at most a second old): asking the API
        reads ``os.environ`` while no SDK is installed, 0.7 us a message."""
        return with_trace_context(message) if self._tracing_seen else message

    async def traced(
        self,
        topic: str,
        operation: str,
        msg_ids: Sequence[str],
        clock: Clock,
        started_ms: float,
        send: Callable[[tuple[Span, ...]], Awaitable[SendResult | None]],
    ) -> SendResult | None:
        """``send`` run with its spans (several: with tracing on, one per message of a
        transparent batch, ``msg_ids`` holding more than one, as if each were sent alone),
        then each span ended with the result or the error, and the send's duration since
        ``started_ms`` recorded."""
        if len(msg_ids) > 1 and self.tracing:
            spans = tuple(self.start_send(topic, operation) for _ in msg_ids)
        else:
            spans = (self.start_send(topic, operation),)
        try:
            result = await send(spans)
        except ProducerError as exc:
            seconds = (clock.monotonic_ms() - started_ms) / 1000.0
            self.finish_error(spans, topic, exc, seconds, len(msg_ids))
            raise
        except BaseException:
            for span in spans:
                span.end()
            raise
        self.finish_ok(spans, topic, result, (clock.monotonic_ms() - started_ms) / 1000.0, msg_ids)
        return result

    def start_send(self, topic: str, operation: str) -> Span:
        span = self._tracer.start_span(f"{topic} publish", kind=SpanKind.PRODUCER)
        if span.is_recording():
            span.set_attributes(
                {
                    "messaging.system": "rocketmq",
                    "messaging.operation.type": "publish",
                    "messaging.operation.name": operation,
                    "messaging.destination.name": topic,
                    "messaging.rocketmq.client_group": self.group,
                }
            )
        return span

    def attempt(
        self, spans: Sequence[Span], topic: str, record: AttemptRecord, number: int, messages: int
    ) -> None:
        """One attempt of a send of ``messages`` messages (several: a transparent batch):
        counted per message, whether or not spans are recorded; an event on each span."""
        attrs = {
            "messaging.destination.name": topic,
            "rocketmq.broker.name": record.broker_name,
            "rocketmq.outcome": record.outcome.value,
        }
        self._attempts.add(messages, attrs)
        if number > 1:
            self._retries.add(messages, {"rocketmq.broker.name": record.broker_name})
        event: dict[str, AttributeValue] = {
            "rocketmq.attempt": number,
            "rocketmq.broker.name": record.broker_name,
            "messaging.destination.partition.id": str(record.queue_id),
            "rocketmq.outcome": record.outcome.value,
            "rocketmq.response_code": -1 if record.code is None else record.code,
            "rocketmq.latency_ms": record.latency_ms,
        }
        for span in spans:
            if span.is_recording():
                span.add_event("attempt", event)

    def ban(self, broker: str) -> None:
        self._bans.add(1, {"rocketmq.broker.name": broker})

    def finish_ok(
        self,
        spans: Sequence[Span],
        topic: str,
        result: SendResult | None,
        seconds: float,
        msg_ids: Sequence[str],
    ) -> None:
        """``result`` is ``None`` for a oneway send: written, never answered. ``msg_ids``:
        one per message; with one span per message each span gets its own id."""
        attrs = {"messaging.destination.name": topic}
        for _ in msg_ids:
            self._duration.record(seconds, attrs)
        for span, msg_id in zip(spans, msg_ids, strict=False):
            if result is not None and span.is_recording():
                span.set_attributes(
                    {
                        "messaging.message.id": msg_id if len(spans) > 1 else result.msg_id,
                        "messaging.destination.partition.id": str(result.queue.queue_id),
                        "rocketmq.broker.name": result.queue.broker_name,
                        "rocketmq.send_status": result.status.value,
                    }
                )
            span.end()

    def finish_error(
        self, spans: Sequence[Span], topic: str, error: ProducerError, seconds: float, messages: int
    ) -> None:
        attrs = {"messaging.destination.name": topic, "error.type": type(error).__name__}
        for _ in range(messages):
            self._duration.record(seconds, attrs)
        for span in spans:
            if span.is_recording():
                span.set_attribute("error.type", type(error).__name__)
                span.set_status(Status(StatusCode.ERROR, str(error.message)))
            span.end()
