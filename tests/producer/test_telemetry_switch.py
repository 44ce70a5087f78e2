"""Without an OpenTelemetry SDK a send makes no OpenTelemetry call; an SDK installed later
is seen within a second. Run in a fresh interpreter: SDK providers are process-global and
other tests install them."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from producer._send.telemetry import Telemetry

telemetry = Telemetry("g")
assert not telemetry.enabled(0.0), "no SDK installed"
metrics.set_meter_provider(MeterProvider())
assert not telemetry.enabled(999.0), "checked at most once a second"
assert telemetry.enabled(1000.0), "an SDK's meter provider is seen at the next check"
assert not telemetry.tracing

traced = Telemetry("g")
trace.set_tracer_provider(TracerProvider())
assert traced.enabled(0.0) and traced.tracing
print("ok")
"""


def test_telemetry_is_off_until_an_sdk_is_installed() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


BATCH_METRICS = """
import anyio
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from producer import Message, Producer
from producer.testing import DevClusterThread

reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))  # metrics, no tracing

async def main(addr):
    async with Producer("g", addr, routing="off") as p:
        await p.send(Message("T", b"warm-up"))
        await anyio.sleep(0)
        futures = [p.send_async(Message("T", b"x")) for _ in range(10)]
        for future in futures:
            await future

with DevClusterThread(brokers=1, topics={"T": 4}) as cluster:
    anyio.run(main, cluster.namesrv_addr)
points = {}
for resource in reader.get_metrics_data().resource_metrics:
    for scope in resource.scope_metrics:
        for metric in scope.metrics:
            points[metric.name] = sum(getattr(p, "value", 0) or getattr(p, "count", 0)
                                      for p in metric.data.data_points)
print(points["rocketmq.producer.attempts"], points["messaging.client.operation.duration"])
"""


def test_metrics_count_each_message_of_a_batch_without_tracing() -> None:
    # 11 messages: the warm-up, then 10 of which the first goes alone and 9 as one batch.
    done = subprocess.run(
        [sys.executable, "-c", BATCH_METRICS],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["11", "11"]
