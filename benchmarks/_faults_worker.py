"""One routing strategy through one fault scenario, in a process of its own.

``python -m benchmarks._faults_worker CONFIG_JSON`` (run by :mod:`benchmarks.faults`):
a fresh producer on a fresh event loop sends to the shared dev cluster, first for a
healthy warm-up, then for the measured window while the scenario's script drives the
faults over HTTP; sends still in flight are waited for. It prints one JSON line: the
run's summary (see :func:`benchmarks._faults_stats.summarize`).

Loads (``load``): ``"async"`` - ``send_async`` at a fixed offered rate; ``"await"`` -
``loops`` tasks, each ``await send`` in a loop paced to ``rate / loops`` (a late loop
sends at once); ``"closed"`` - ``loops`` unpaced ``await send`` loops (throughput).
Latency is from the call to its answer (or final failure).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from benchmarks import _common as common
from benchmarks._faults_scenarios import SCENARIOS, FaultControl, ScriptContext
from benchmarks._faults_stats import Sample, summarize
from producer import AttemptContext, Message, Producer, SendResult
from producer.errors import ProducerError

TICK_S = 0.005


@dataclass
class Recorder:
    """Every send of the run; ``origin`` is the window's start (perf_counter)."""

    origin: float = 0.0
    samples: list[Sample] = field(default_factory=list)
    outstanding: int = 0
    idle: asyncio.Event = field(default_factory=asyncio.Event)

    def start(self) -> float:
        self.outstanding += 1
        return time.perf_counter()

    def ok(self, started: float, result: SendResult) -> None:
        brokers = tuple(a.broker_name for a in result.attempts)
        self._add(started, True, brokers, result.queue.broker_name)

    def failed(self, started: float, error: ProducerError) -> None:
        self._add(started, False, tuple(a.broker_name for a in error.attempts), None)

    def _add(self, started: float, ok: bool, brokers: tuple[str, ...], broker: str | None) -> None:
        now = time.perf_counter()
        self.samples.append(Sample(started - self.origin, now - started, ok, brokers, broker))
        self.outstanding -= 1
        if not self.outstanding:
            self.idle.set()

    async def drained(self, timeout_s: float) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._settled(), timeout_s)

    async def _settled(self) -> None:
        while self.outstanding:
            self.idle.clear()
            await self.idle.wait()


class OutstandingHook:
    """A send hook counting this producer's attempts in flight per broker."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def before_attempt(self, ctx: AttemptContext) -> None:
        self.counts[ctx.queue.broker_name] += 1

    def after_attempt(self, ctx: AttemptContext) -> None:
        self.counts[ctx.queue.broker_name] -= 1


async def offer_async(
    producer: Producer, recorder: Recorder, message: Message, rate: float, stop: asyncio.Event
) -> None:
    """``send_async`` at ``rate`` msg/s (in ticks of 5 ms) until ``stop`` is set."""
    perf = time.perf_counter
    begin, sent = perf(), 0
    while not stop.is_set():
        due = int((perf() - begin) * rate) + 1
        while sent < due:
            started = recorder.start()
            producer.send_async(
                message,
                on_success=functools.partial(recorder.ok, started),
                on_exception=functools.partial(recorder.failed, started),
            )
            sent += 1
        await asyncio.sleep(TICK_S)


async def await_loop(
    producer: Producer,
    recorder: Recorder,
    message: Message,
    interval_s: float | None,
    offset_s: float,
    stop: asyncio.Event,
) -> None:
    """``await send`` in a loop; paced to one send per ``interval_s`` if given."""
    perf = time.perf_counter
    next_at = perf() + offset_s
    while not stop.is_set():
        if interval_s is not None:
            wait = next_at - perf()
            if wait > 0:
                await asyncio.sleep(wait)
            next_at = max(next_at + interval_s, perf() - interval_s)  # late: catch up once
        started = recorder.start()
        try:
            result = await producer.send(message)
        except ProducerError as error:
            recorder.failed(started, error)
        else:
            recorder.ok(started, result)


def start_load(
    config: dict[str, Any], producer: Producer, recorder: Recorder, stop: asyncio.Event
) -> list[asyncio.Task[None]]:
    message = Message(config["topic"], b"x" * 1024)
    rate, load, loops = float(config["rate"]), config["load"], int(config["loops"])
    if load == "async":
        return [asyncio.create_task(offer_async(producer, recorder, message, rate, stop))]
    interval = None if load == "closed" else loops / rate
    return [
        asyncio.create_task(
            await_loop(producer, recorder, message, interval, i * (interval or 0) / loops, stop)
        )
        for i in range(loops)
    ]


async def run(config: dict[str, Any]) -> dict[str, Any]:
    scenario = SCENARIOS[config["scenario"]]
    window_s = float(config["window_s"])
    hook = OutstandingHook()
    recorder, stop = Recorder(), asyncio.Event()
    async with contextlib.AsyncExitStack() as stack:
        producer = await stack.enter_async_context(
            Producer(
                f"bench-faults-{config['strategy']}",
                namesrv=config["namesrv"],
                routing=config["strategy"],
                send_timeout_ms=float(config["send_timeout_ms"]),
                hooks=[hook] if scenario.needs_outstanding else [],
            )
        )
        session = await stack.enter_async_context(aiohttp.ClientSession())
        control = FaultControl(config["http"], session)
        loads = start_load(config, producer, recorder, stop)
        await asyncio.sleep(float(config["warmup_s"]))
        context = ScriptContext(
            window_s=window_s,
            rate=float(config["rate"]),
            flap_period_s=float(config["flap_period_s"]),
            outstanding=lambda broker: hook.counts[broker],
        )
        cpu0, recorder.origin = common.cpu_seconds(), time.perf_counter()
        try:
            await scenario.script(control, context)
        finally:
            await control.clear_all()
        cpu = common.cpu_seconds()
        stop.set()
        await asyncio.gather(*loads)
        await recorder.drained(float(config["send_timeout_ms"]) / 1000.0 + 2.0)
    cpu_s = None if cpu is None or cpu0 is None else cpu - cpu0
    return summarize(recorder.samples, window_s, config, cpu_s)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    config = json.loads(argv[0])
    summary = common.run(lambda: run(config), config["loop"])
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
