"""Consumer telemetry with an OpenTelemetry SDK: a span per listener call linked to the
trace that sent each message, the listener's spans its children, and metrics for
outcomes, sends back, dead letters and lag. Run in a fresh interpreter: SDK providers are
process-global and other tests install their own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import anyio
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from producer import Message, Producer
from producer.consumer import ConsumeStatus, PushConsumer
from producer.testing import DevClusterThread

spans = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(spans))
trace.set_tracer_provider(provider)
reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
tracer = trace.get_tracer("app")
FAST = {"persist_interval_ms": 50, "rebalance_interval_ms": 500, "suspend_timeout_ms": 1000}

async def main(addr):
    async with Producer("pg", addr) as producer:
        with tracer.start_as_current_span("handle-order") as handler:
            sent_trace = handler.get_span_context().trace_id
            for body in (b"ok-1", b"retry-once", b"dead", b"ok-2", b"poison"):
                await producer.send(Message("Orders", body))
    calls = []

    def listener(messages, context):
        (m,) = messages
        calls.append((m.body, m.reconsume_times))
        with tracer.start_as_current_span("inside-listener"):
            pass
        if m.body == b"dead":
            context.delay_level = -1
            return ConsumeStatus.RECONSUME_LATER
        if m.body == b"poison":  # fails every time: dead once its 1 retry is used
            return ConsumeStatus.RECONSUME_LATER
        if m.body == b"retry-once" and m.reconsume_times == 0:
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.SUCCESS

    consumer = PushConsumer(
        "cg", addr, listener=listener, consume_from="first", max_reconsume_times=1, **FAST
    )
    consumer.subscribe("Orders")
    async with consumer:
        with anyio.fail_after(20):
            while len(calls) < 7 or consumer.stats["sent_back"] < 4:
                await anyio.sleep(0.02)
        await anyio.sleep(0.2)  # a pull after the last settle: lag as of now
        observed = []
        for resource in reader.get_metrics_data().resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == "rocketmq.consumer.lag":
                        observed += [(dict(p.attributes), p.value) for p in metric.data.data_points]
        lag = (consumer.stats["lag"], observed, len(consumer.assigned_queues))
    return sent_trace, calls, lag

with DevClusterThread(brokers=2, topics={"Orders": 2}, delay_levels=" ".join(["100ms"] * 18)) as c:
    sent_trace, calls, lag = anyio.run(main, c.namesrv_addr)

process = [s for s in spans.get_finished_spans() if s.name == "Orders process"]
assert len(process) == 7, [s.name for s in spans.get_finished_spans()]
assert all(s.kind is SpanKind.CONSUMER for s in process)
assert all(len(s.links) == 1 and s.links[0].context.trace_id == sent_trace for s in process)
inside = [s for s in spans.get_finished_spans() if s.name == "inside-listener"]
assert sorted(s.parent.span_id for s in inside) == sorted(s.context.span_id for s in process)
failed = [s for s in process if s.status.status_code.name == "ERROR"]
assert len(failed) == 4, failed  # dead, retry-once's first delivery, poison twice

points = {}
for resource in reader.get_metrics_data().resource_metrics:
    for scope in resource.scope_metrics:
        for metric in scope.metrics:
            points.setdefault(metric.name, []).extend(metric.data.data_points)
outcomes = {}
for p in points["rocketmq.consumer.messages"]:
    outcomes[p.attributes["outcome"]] = outcomes.get(p.attributes["outcome"], 0) + p.value
assert outcomes == {"consumed": 3, "retried": 2}, outcomes
# The client's own count of what the broker dead-letters: level -1 at once, and poison's
# second failure (stored count 1 = the maximum), not its first (docs/consuming.md 3.1).
assert sum(p.value for p in points["rocketmq.consumer.sent_back"]) == 2
assert sum(p.value for p in points["rocketmq.consumer.dead_letters"]) == 2
assert sum(p.count for p in points["messaging.process.duration"]) == 7
stats_lag, observed, queues = lag
assert stats_lag == 0 and len(observed) == queues and {v for _, v in observed} == {0}, lag
assert {a["messaging.consumer.group.name"] for a, _ in observed} == {"cg"}
print("ok")
"""


def test_spans_link_to_the_sending_trace_and_metrics_count_outcomes() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"
