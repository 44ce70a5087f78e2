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
