"""Measuring a running load: a counter the load bumps, and a timed window over it."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from benchmarks._common import CpuMeter, latency_summary


class Counter:
    """What a load generator updates: completed messages, failures, latency samples.

    Latencies (seconds) are kept only while ``recording`` is set, i.e. inside the
    measuring window, so warm-up and drain do not count.
    """

    __slots__ = ("done", "failed", "latencies", "recording")

    def __init__(self) -> None:
        self.done = 0
        self.failed = 0
        self.recording = False
        self.latencies: list[float] = []


async def measure(
    counter: Counter, *, warmup_s: float, duration_s: float, server_pid: int | None
) -> dict[str, Any]:
    """Wait out the warm-up, then count for ``duration_s``: rate, latency, CPU of both sides.

    CPU is a fraction of one core: ``client_cpu`` for this process, ``server_cpu`` for
    the broker process (``None`` when it is not ours to read, e.g. a real cluster).
    """
    await asyncio.sleep(warmup_s)
    client, server = CpuMeter(), CpuMeter(server_pid) if server_pid else None
    counter.latencies = []
    done0, failed0 = counter.done, counter.failed
    started = time.perf_counter()
    counter.recording = True
    await asyncio.sleep(duration_s)
    counter.recording = False
    elapsed = time.perf_counter() - started
    done = counter.done - done0
    return {
        "msgs_per_s": round(done / elapsed, 1),
        "messages": done,
        "failed": counter.failed - failed0,
        "seconds": round(elapsed, 3),
        "latency": latency_summary(counter.latencies),
        "client_cpu": client.read(),
        "server_cpu": server.read() if server is not None else None,
    }
