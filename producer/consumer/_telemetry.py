"""The consumer's OpenTelemetry, through ``opentelemetry-api`` (no-op without an SDK).

A span per listener call (``<topic> process``, kind CONSUMER) that is current while the
listener runs, so the listener's own spans are its children, and links to each message's
sending trace when the message carries a ``traceparent`` (the producer adds it when
tracing is on). Metrics: process duration, messages by outcome, sends back and dead
letters, and an observable gauge of each held queue's lag (the broker's max offset
minus the consumer's offset, as of the last pull).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

from opentelemetry import metrics, propagate, trace
from opentelemetry.metrics import CallbackOptions, NoOpMeterProvider, Observation
from opentelemetry.metrics._internal import _ProxyMeterProvider  # what the API gives without an SDK
from opentelemetry.trace import (
    INVALID_SPAN,
    Link,
    NoOpTracerProvider,
    ProxyTracerProvider,
    Span,
    SpanKind,
    Status,
    StatusCode,
)

from producer._types.consumer.received import ReceivedMessage
from producer._types.message import MessageQueue

__all__ = ["NO_SPAN", "ConsumerTelemetry", "metering", "tracing"]

NO_SPAN = INVALID_SPAN  # what a listener call runs under when nothing traces
_NOT_TRACING = (ProxyTracerProvider, NoOpTracerProvider)


_NOT_METERING = (NoOpMeterProvider, _ProxyMeterProvider)


def tracing() -> bool:
    """Whether an OpenTelemetry SDK traces: without one a listener call takes no span
    (a no-op span still costs a context switch-in and -out per call)."""
    return not isinstance(trace.get_tracer_provider(), _NOT_TRACING)


def metering() -> bool:
    """Whether an OpenTelemetry SDK takes metrics: without one a listener call is not timed."""
    return not isinstance(metrics.get_meter_provider(), _NOT_METERING)


_SCOPE = "rocketmq-aio-producer"
LagSource = Callable[[], Iterable[tuple[MessageQueue, int]]]


class ConsumerTelemetry:
    def __init__(self, group: str) -> None:
        self.group = group
        self.tracing = self.metering = False  # as of the last look()
        self._tracer = trace.get_tracer(_SCOPE)
        meter = metrics.get_meter(_SCOPE)
        self._duration = meter.create_histogram(
            "messaging.process.duration", unit="s", description="Duration of a listener call"
        )
        self._messages = meter.create_counter(
            "rocketmq.consumer.messages",
            unit="{message}",
            description="Messages by outcome: consumed, retried, duplicate, dropped",
        )
        self._sent_back = meter.create_counter(
            "rocketmq.consumer.sent_back", unit="{message}", description="Messages sent back"
        )
        self._dead = meter.create_counter(
            "rocketmq.consumer.dead_letters",
            unit="{message}",
            description="Messages sent to the dead-letter queue by this consumer",
        )
        self._lag_sources: list[LagSource] = []
        meter.create_observable_gauge(
            "rocketmq.consumer.lag",
            callbacks=[self._observe_lag],
            unit="{message}",
            description="Messages of a queue not yet consumed (broker max offset - offset)",
        )

    def look(self) -> None:
        """Whether an SDK traces (``self.tracing``) or takes metrics (``self.metering``),
        asked once per run of listener calls, not per call: the API's answer reads
        ``os.environ`` while no SDK is installed (1.7 us). An SDK, once installed, stays:
        OpenTelemetry sets a provider once per process."""
        self.tracing = self.tracing or tracing()
        self.metering = self.metering or metering()

    def watch_lag(self, source: LagSource) -> None:
        self._lag_sources.append(source)

    def _observe_lag(self, options: CallbackOptions) -> Iterator[Observation]:
        for source in self._lag_sources:
            for queue, lag in source():
                yield Observation(
                    lag,
                    {
                        "messaging.consumer.group.name": self.group,
                        "messaging.destination.name": queue.topic,
                        "rocketmq.broker.name": queue.broker_name,
                        "messaging.destination.partition.id": str(queue.queue_id),
                    },
                )

    @contextmanager
    def processing(self, queue: MessageQueue, batch: Sequence[ReceivedMessage]) -> Iterator[Span]:
        """The span of one listener call, current inside the ``with``."""
        topic = batch[0].topic if batch else queue.topic
        links = [link for link in map(_link_of, batch) if link is not None]
        with self._tracer.start_as_current_span(
            f"{topic} process", kind=SpanKind.CONSUMER, links=links, end_on_exit=True
        ) as span:
            if span.is_recording():
                span.set_attributes(
                    {
                        "messaging.system": "rocketmq",
                        "messaging.operation.type": "process",
                        "messaging.destination.name": topic,
                        "messaging.consumer.group.name": self.group,
                        "messaging.batch.message_count": len(batch),
                        "messaging.destination.partition.id": str(queue.queue_id),
                        "rocketmq.broker.name": queue.broker_name,
                        "messaging.message.id": batch[0].msg_id if len(batch) == 1 else "",
                    }
                )
            yield span

    def processed(self, span: Span, topic: str, status: str, seconds: float, count: int) -> None:
        attrs = {"messaging.destination.name": topic, "rocketmq.consume_status": status}
        self._duration.record(seconds, attrs)
        if span.is_recording() and status != "CONSUME_SUCCESS":
            span.set_status(Status(StatusCode.ERROR, status))

    def count(self, topic: str, outcome: str, messages: int) -> None:
        if messages and self.metering:  # the API's no-op counter still costs its attributes
            self._messages.add(messages, {"messaging.destination.name": topic, "outcome": outcome})

    def sent_back(self, topic: str) -> None:
        self._sent_back.add(1, {"messaging.destination.name": topic})

    def dead_letter(self, topic: str) -> None:
        self._dead.add(1, {"messaging.destination.name": topic})


def _link_of(message: ReceivedMessage) -> Link | None:
    if "traceparent" not in message.properties:
        return None
    context = trace.get_current_span(propagate.extract(message.properties)).get_span_context()
    return Link(context) if context.is_valid else None
