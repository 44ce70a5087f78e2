"""The faults benchmark's scenarios: which broker misbehaves how, and when.

Each scenario is a script run against the dev cluster's HTTP fault API while the load
runs; ``t = 0`` is the start of the measured window, and every fault is cleared when the
script ends. ``broker-b`` is the broker in trouble unless a scenario says otherwise.

``Scenario.goal`` says what adaptive routing is expected to do there (issue 10's targets):
``"win"`` - beat the best classic strategy's p99 by at least 5%; ``"no_harm"`` - stay
within 3% of it (nothing can be won, so nothing may be lost); ``"report"`` - measured
and shown, no target.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp

BROKERS = ("broker-a", "broker-b", "broker-c")
FAULTY = "broker-b"
RAMP_S = 20.0  # the ramp's length; its window is at least this long
LOAD_BASE_MS = 2.0  # load-dependent latency: base + k * queued, k sized per rate (below)
LOAD_FAIR_UTILISATION = 0.9  # ...so that at a fair third of the load b is 90% busy
CONTROL_STEP_S = 0.02  # how often the load-dependent latency is recomputed

Goal = Literal["win", "no_harm", "report"]


class FaultControl:
    """PUT / DELETE ``/brokers/{name}/fault`` on the cluster's HTTP API; remembers what
    it touched so `clear_all` can undo it."""

    def __init__(self, base_url: str, session: aiohttp.ClientSession) -> None:
        self.base_url = base_url
        self.session = session
        self.touched: set[str] = set()

    async def set(self, broker: str, spec: dict[str, Any]) -> None:
        self.touched.add(broker)
        async with self.session.put(f"{self.base_url}/brokers/{broker}/fault", json=spec) as r:
            r.raise_for_status()

    async def clear(self, broker: str) -> None:
        async with self.session.delete(f"{self.base_url}/brokers/{broker}/fault") as r:
            r.raise_for_status()

    async def clear_all(self) -> None:
        for broker in sorted(self.touched):
            await self.clear(broker)
        self.touched.clear()


@dataclass(frozen=True)
class ScriptContext:
    """What a script may use: the window, the offered rate, the flapping half-period,
    and how many attempts this process has outstanding on a broker (for the
    load-dependent latency)."""

    window_s: float
    rate: float
    flap_period_s: float
    outstanding: Callable[[str], int]


Script = Callable[[FaultControl, ScriptContext], Awaitable[None]]


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    goal: Goal
    script: Script
    min_window_s: float = 0.0
    #: Brokers whose share of attempts is reported per 1 s window.
    focus: str = FAULTY
    #: Whether this scenario counts attempts per broker with a send hook.
    needs_outstanding: bool = False

    def window_s(self, default_s: float) -> float:
        return max(default_s, self.min_window_s)


async def _nothing(control: FaultControl, ctx: ScriptContext) -> None:
    await asyncio.sleep(ctx.window_s)


def _hold(faults: dict[str, dict[str, Any]]) -> Script:
    async def script(control: FaultControl, ctx: ScriptContext) -> None:
        for broker, spec in faults.items():
            await control.set(broker, spec)
        await asyncio.sleep(ctx.window_s)

    return script


async def _flap(control: FaultControl, ctx: ScriptContext) -> None:
    """Down for a half-period, up for one, and so on."""
    end, down = time.perf_counter() + ctx.window_s, True
    while (left := end - time.perf_counter()) > 0:
        if down:
            await control.set(FAULTY, {"down": True})
        else:
            await control.clear(FAULTY)
        await asyncio.sleep(min(ctx.flap_period_s, left))
        down = not down


async def _restart(control: FaultControl, ctx: ScriptContext) -> None:
    """Down (connections closed, connects refused) for 2 s, then back on the same port."""
    await control.set(FAULTY, {"down": True})
    await asyncio.sleep(min(2.0, ctx.window_s))
    await control.clear(FAULTY)
    await asyncio.sleep(max(0.0, ctx.window_s - 2.0))


async def _ramp(control: FaultControl, ctx: ScriptContext) -> None:
    """b's latency grows linearly from 1 ms to 500 ms over `RAMP_S`, then holds."""
    begin = time.perf_counter()
    while (elapsed := time.perf_counter() - begin) < ctx.window_s:
        latency = 1.0 + 499.0 * min(1.0, elapsed / RAMP_S)
        await control.set(FAULTY, {"latency_ms": round(latency, 1)})
        await asyncio.sleep(0.25)


async def _load_dependent(control: FaultControl, ctx: ScriptContext) -> None:
    """b answers in `base + k * queued`, queued = our attempts outstanding on b (read
    from a send hook), recomputed every 20 ms. k makes b 90% busy at a fair third of
    the offered rate: unsteered, its latency settles near base / (1 - 0.9) = 20 ms."""
    per_queued_ms = 1000.0 * LOAD_FAIR_UTILISATION / (ctx.rate / len(BROKERS))
    begin, last = time.perf_counter(), -1.0
    while time.perf_counter() - begin < ctx.window_s:
        latency = round(LOAD_BASE_MS + per_queued_ms * ctx.outstanding(FAULTY), 1)
        if latency != last:
            await control.set(FAULTY, {"latency_ms": latency})
            last = latency
        await asyncio.sleep(CONTROL_STEP_S)


def catalogue() -> list[Scenario]:
    slow = {"latency_ms": 300}
    return [
        Scenario("healthy", "no fault", "no_harm", _nothing),
        Scenario("brownout", f"{FAULTY} answers 300 ms late", "win", _hold({FAULTY: slow})),
        Scenario(
            "brownout_50",
            f"{FAULTY} answers 50 ms late (just above healthy jitter)",
            "report",
            _hold({FAULTY: {"latency_ms": 50}}),
        ),
        Scenario(
            "ramp",
            f"{FAULTY}'s latency grows from 1 to 500 ms over {RAMP_S:g} s",
            "win",
            _ramp,
            min_window_s=RAMP_S,
        ),
        Scenario(
            "load",
            f"{FAULTY} answers in {LOAD_BASE_MS:g} ms + k x its queued requests "
            f"({LOAD_FAIR_UTILISATION:.0%} busy at a fair share)",
            "win",
            _load_dependent,
            needs_outstanding=True,
        ),
        Scenario(
            "two_slow",
            "broker-b and broker-c answer 300 ms late",
            "report",
            _hold({"broker-b": slow, "broker-c": slow}),
        ),
        Scenario(
            "all_slow",
            "every broker answers 50 ms late (nothing to steer)",
            "no_harm",
            _hold({b: {"latency_ms": 50} for b in BROKERS}),
        ),
        Scenario(
            "errors",
            f"{FAULTY} answers 30% of sends with code 14",
            "no_harm",
            _hold({FAULTY: {"error_code": 14, "error_probability": 0.3}}),
        ),
        Scenario(
            "blackhole",
            f"{FAULTY} accepts and never answers",
            "win",
            _hold({FAULTY: {"blackhole": True}}),
        ),
        Scenario("flapping", f"{FAULTY} down / up every half-period", "no_harm", _flap),
        Scenario("restart", f"{FAULTY} restarts: down 2 s, then back", "report", _restart),
    ]


SCENARIOS = {s.name: s for s in catalogue()}
