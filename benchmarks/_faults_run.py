"""The fault scenarios: fixed-rate ``send_async`` load per routing strategy, faults by HTTP.

One scenario: every strategy gets a fresh producer and its own fixed-rate load, all at
once on one event loop, against one 3-broker sink cluster in its own process. After a
healthy warm-up, one broker's fault is switched on over the cluster's HTTP API (and, for
flapping, toggled) for the measured window, then cleared; sends still in flight are
waited for. Running the strategies side by side means they face the same fault at the
same instant and the same machine noise, which a sequential run on a shared 2-core host
cannot promise.

Each send is one :class:`Sample`: when it was offered (seconds since the fault began),
its latency, whether it succeeded, its attempts' brokers, the broker that stored it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from producer import Message, Producer, SendResult
from producer._send.options import Routing
from producer.errors import ProducerError

STRATEGIES: tuple[Routing, ...] = ("off", "classic_4_9", "classic_5", "adaptive")
FAULTY = "broker-b"
TICK_S = 0.005


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    fault: dict[str, Any] | None  # FaultSpec JSON for FAULTY; None = healthy
    flap_period_s: float | None = None  # toggle `down` every period (starting down)


def scenarios(flap_period_s: float) -> list[Scenario]:
    return [
        Scenario("healthy", "no fault", None),
        Scenario("brownout", f"{FAULTY} answers 300 ms late", {"latency_ms": 300}),
        Scenario(
            "errors",
            f"{FAULTY} answers 30% of sends with code 14",
            {"error_code": 14, "error_probability": 0.3},
        ),
        Scenario("blackhole", f"{FAULTY} accepts and never answers", {"blackhole": True}),
        Scenario(
            "flapping",
            f"{FAULTY} down {flap_period_s:g} s / up {flap_period_s:g} s",
            {"down": True},
            flap_period_s,
        ),
    ]


@dataclass(slots=True)
class Sample:
    offered_s: float
    latency_s: float
    ok: bool
    attempt_brokers: tuple[str, ...]
    broker: str | None


@dataclass
class Recorder:
    """Collects the samples of one strategy; ``origin`` is the fault's start (perf_counter)."""

    origin: float = 0.0
    samples: list[Sample] = field(default_factory=list)
    outstanding: int = 0
    idle: asyncio.Event = field(default_factory=asyncio.Event)  # set when nothing is out

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


async def offer(
    producer: Producer, recorder: Recorder, rate: float, stop: asyncio.Event, topic: str
) -> None:
    """Send at ``rate`` msg/s (in ticks of 5 ms) until ``stop`` is set."""
    message = Message(topic, b"x" * 1024)
    perf = time.perf_counter
    begin, sent = perf(), 0
    while not stop.is_set():
        due = int((perf() - begin) * rate) + 1
        while sent < due:
            now = perf()
            producer.send_async(
                message,
                on_success=functools.partial(recorder.ok, now),
                on_exception=functools.partial(recorder.failed, now),
            )
            recorder.outstanding += 1
            sent += 1
        await asyncio.sleep(TICK_S)


class FaultControl:
    """PUT / DELETE ``/brokers/{name}/fault`` on the cluster's HTTP API."""

    def __init__(self, base_url: str, session: aiohttp.ClientSession) -> None:
        self.base_url = base_url
        self.session = session

    async def set(self, broker: str, spec: dict[str, Any]) -> None:
        url = f"{self.base_url}/brokers/{broker}/fault"
        async with self.session.put(url, json=spec) as response:
            response.raise_for_status()

    async def clear(self, broker: str) -> None:
        async with self.session.delete(f"{self.base_url}/brokers/{broker}/fault") as response:
            response.raise_for_status()


async def apply_fault(control: FaultControl, scenario: Scenario, window_s: float) -> None:
    """Hold the scenario's fault for ``window_s`` (toggling it when flapping), then clear."""
    try:
        if scenario.fault is None:
            await asyncio.sleep(window_s)
            return
        if scenario.flap_period_s is None:
            await control.set(FAULTY, scenario.fault)
            await asyncio.sleep(window_s)
            return
        end, faulty = time.perf_counter() + window_s, True
        while (left := end - time.perf_counter()) > 0:
            if faulty:
                await control.set(FAULTY, scenario.fault)
            else:
                await control.clear(FAULTY)
            await asyncio.sleep(min(scenario.flap_period_s, left))
            faulty = not faulty
    finally:
        if scenario.fault is not None:
            await control.clear(FAULTY)


async def run_scenario(
    scenario: Scenario,
    *,
    namesrv: str,
    control: FaultControl,
    topic: str,
    rate: float,
    warmup_s: float,
    window_s: float,
    send_timeout_ms: float,
    on_tick: Callable[[float], None] = lambda _: None,
) -> dict[str, list[Sample]]:
    """All strategies at once; returns each one's samples offered inside the window."""
    recorders = {s: Recorder() for s in STRATEGIES}
    stop = asyncio.Event()
    async with contextlib.AsyncExitStack() as stack:  # producers close in reverse order
        producers = {
            s: await stack.enter_async_context(
                Producer(
                    f"bench-faults-{s}", namesrv=namesrv, routing=s, send_timeout_ms=send_timeout_ms
                )
            )
            for s in STRATEGIES
        }
        loads = [
            asyncio.create_task(offer(producers[s], recorders[s], rate, stop, topic))
            for s in STRATEGIES
        ]
        await _ticking(warmup_s, on_tick)
        origin = time.perf_counter()
        for recorder in recorders.values():
            recorder.origin = origin
        await asyncio.gather(apply_fault(control, scenario, window_s), _ticking(window_s, on_tick))
        stop.set()
        await asyncio.gather(*loads)
        await _drain(list(recorders.values()), send_timeout_ms / 1000.0 + 2.0)
    return {
        s: [x for x in r.samples if 0.0 <= x.offered_s < window_s] for s, r in recorders.items()
    }


async def _ticking(seconds: float, on_tick: Callable[[float], None]) -> None:
    end = time.perf_counter() + seconds
    while (left := end - time.perf_counter()) > 0:
        await asyncio.sleep(min(0.25, left))
        on_tick(min(0.25, left))


async def _drain(recorders: list[Recorder], timeout_s: float) -> None:
    """Wait (at most ``timeout_s``) until every send offered has finished."""

    async def settled(recorder: Recorder) -> None:
        while recorder.outstanding:
            recorder.idle.clear()
            await recorder.idle.wait()

    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.gather(*map(settled, recorders)), timeout_s)
