"""Replay broker traces through any router on a virtual clock (pure and seeded).

    report = simulate(scenario, "adaptive", seed=7)
    report.shares(12_000, 35_000)          # each broker's share of attempts in [12 s, 35 s)
    report.recovery_ms("b", 35_000, 55_000)  # how soon after 35 s "b" kept its fair share
    report.p50_ms, report.p99_ms, report.failures

Each message is a `sendDefaultImpl`-like loop (see `Scenario`): select a queue through the
router, draw the broker's outcome from its trace at that virtual time, record it
(rule S8), and on failure retry at once with the last broker passed in. Every
`probe_tick_ms` the harness sends the probes `router.due_probes` asks for and records
their outcomes, as the producer would. Shares count attempts (retries included) by the
window in which they start. Latency percentiles are over messages, from arrival to
success or final failure.

`python -m benchmarks.routing_sim [SEED]` prints every standard scenario for every router.
It is a development tool (not shipped in the wheel): pure and seeded, so unlike the live
benchmarks its figures are exact and reproducible.
"""

from __future__ import annotations

import argparse
import heapq
import random
from dataclasses import dataclass

from benchmarks._sim_model import BrokerTrace, Draw, Fault, Phase, Scenario
from benchmarks._sim_report import TABLE_HEADER, SimReport, percentile
from latency_fault import ROUTER_NAMES, PublishSnapshot, Router, make_router

__all__ = [
    "EPISODE_MS",
    "TABLE_HEADER",
    "BrokerTrace",
    "Draw",
    "Fault",
    "Phase",
    "Scenario",
    "SimQueue",
    "SimReport",
    "compare",
    "simulate",
    "standard_scenarios",
]


@dataclass(frozen=True)
class SimQueue:
    topic: str
    broker_name: str
    queue_id: int


@dataclass
class _Send:
    start_ms: float
    attempts: int = 0
    last_broker: str | None = None


@dataclass
class _Event:
    at_ms: float
    kind: str
    send: _Send | None = None
    broker: str = ""
    draw: Draw | None = None


class _Run:
    """One simulation: the event heap and the tallies."""

    def __init__(self, scenario: Scenario, router: Router, seed: int) -> None:
        master = random.Random(seed)
        self.scenario = scenario
        self.router = router
        self.traces = {t.name: t for t in scenario.brokers}
        self.outcomes = random.Random(master.getrandbits(64))
        queues = [
            SimQueue("Sim", t.name, i)
            for t in sorted(scenario.brokers, key=lambda t: t.name)
            for i in range(t.queues)
        ]
        self.snapshot = PublishSnapshot(queues, random.Random(master.getrandbits(64)), topic="Sim")
        self.windows = [dict.fromkeys(self.traces, 0) for _ in range(self._window_count())]
        self.latencies: list[float] = []
        self.failures = 0
        self.probes = 0
        self.bans = 0
        # (time, sequence, event): the sequence keeps same-millisecond events in order
        self._heap: list[tuple[float, int, _Event]] = []
        self._seq = 0

    def _window_count(self) -> int:
        s = self.scenario
        return (s.duration_ms + s.budget_ms) // s.window_ms + 1

    def push(
        self,
        at_ms: float,
        kind: str,
        *,
        send: _Send | None = None,
        broker: str = "",
        draw: Draw | None = None,
    ) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (at_ms, self._seq, _Event(at_ms, kind, send, broker, draw)))

    def run(self) -> None:
        self.push(0, "arrive")
        if self.scenario.probe_tick_ms is not None:
            self.push(0, "probe_tick")
        while self._heap:
            event = heapq.heappop(self._heap)[2]
            getattr(self, f"_on_{event.kind}")(event)

    def _on_arrive(self, event: _Event) -> None:
        now = event.at_ms
        self._attempt(_Send(start_ms=now), now)
        if now + self.scenario.interval_ms < self.scenario.duration_ms:
            self.push(now + self.scenario.interval_ms, "arrive")

    def _attempt(self, send: _Send, now: float) -> None:
        elapsed = now - send.start_ms
        if send.attempts >= self.scenario.attempts or elapsed >= self.scenario.budget_ms:
            self._finish(send, now, ok=False)
            return
        clock = int(now)  # the producer passes whole milliseconds
        queue = self.router.select_queue(self.snapshot, send.last_broker, clock)
        broker = queue.broker_name
        send.attempts += 1
        self.windows[clock // self.scenario.window_ms][broker] += 1
        self.router.on_dispatch(broker, clock)
        timeout = self.scenario.attempt_timeout(elapsed)
        draw = self.traces[broker].phase_at(now).draw(self.outcomes, timeout)
        self.push(now + draw.latency_ms, "done", send=send, broker=broker, draw=draw)

    def _on_done(self, event: _Event) -> None:
        assert event.send is not None and event.draw is not None
        draw, now = event.draw, event.at_ms
        self.router.on_complete(event.broker)
        self.bans += self.router.record(
            event.broker,
            draw.latency_ms,
            isolation=draw.failed,
            now_ms=int(now),
            reachable=draw.reachable,
        )
        if not draw.failed:
            self._finish(event.send, now, ok=True)
            return
        event.send.last_broker = event.broker
        self._attempt(event.send, now)

    def _finish(self, send: _Send, now: float, *, ok: bool) -> None:
        self.latencies.append(now - send.start_ms)
        if not ok:
            self.failures += 1

    def _on_probe_tick(self, event: _Event) -> None:
        now = event.at_ms
        for broker in self.router.due_probes(int(now)):
            if broker not in self.traces:
                continue
            self.probes += 1
            phase = self.traces[broker].phase_at(now)
            draw = phase.draw(self.outcomes, self.scenario.probe_timeout_ms)
            self.push(now + draw.latency_ms, "probe_done", broker=broker, draw=draw)
        tick = self.scenario.probe_tick_ms
        if tick is not None and now + tick < self.scenario.duration_ms:
            self.push(now + tick, "probe_tick")

    def _on_probe_done(self, event: _Event) -> None:
        assert event.draw is not None
        self.bans += self.router.record(
            event.broker,
            event.draw.latency_ms,
            isolation=event.draw.failed,
            now_ms=int(event.at_ms),
        )

    def report(self) -> SimReport:
        total_queues = sum(t.queues for t in self.scenario.brokers)
        ordered = sorted(self.latencies)
        return SimReport(
            router=self.router.name,
            scenario=self.scenario.name,
            window_ms=self.scenario.window_ms,
            fair_shares={t.name: t.queues / total_queues for t in self.scenario.brokers},
            attempts_by_window=tuple(tuple(w.items()) for w in self.windows),
            messages=len(self.latencies),
            failures=self.failures,
            probes=self.probes,
            bans=self.bans,
            p50_ms=percentile(ordered, 0.50),
            p99_ms=percentile(ordered, 0.99),
        )


def simulate(scenario: Scenario, router: str | Router, seed: int = 0) -> SimReport:
    """Run `scenario` through `router` (a router or a `make_router` name)."""
    master = random.Random(seed)
    if isinstance(router, str):
        router = make_router(router, random.Random(master.getrandbits(64)))
    run = _Run(scenario, router, master.getrandbits(64))
    run.run()
    return run.report()


def compare(
    scenarios: list[Scenario], routers: tuple[str, ...] = ROUTER_NAMES, seed: int = 0
) -> list[SimReport]:
    """Every scenario through every named router, each from the same seed."""
    return [simulate(s, r, seed) for s in scenarios for r in routers]


#: When broker "b" misbehaves in the standard scenarios. 25 s, not a multiple of Java 5's
#: 10 s ban, so no router is flattered by a ban that happens to end as the broker heals.
EPISODE_MS = (10_000, 35_000)


def _episode(
    name: str,
    *,
    latency_ms: float | None = None,
    error_rate: float | None = None,
    fault: Fault | None = None,
    attempt_cap_ms: int | None = 1000,
) -> Scenario:
    start, end = EPISODE_MS
    traced = BrokerTrace.steady("b").with_episode(
        start, end, latency_ms=latency_ms, error_rate=error_rate, fault=fault
    )
    brokers = (BrokerTrace.steady("a"), traced, BrokerTrace.steady("c"))
    return Scenario(
        name,
        brokers,
        focus="b",
        episode_ms=EPISODE_MS,
        attempt_cap_ms=attempt_cap_ms,
    )


def standard_scenarios() -> list[Scenario]:
    """Three brokers x 4 queues at 20 ms +-20%, 200 msg/s for 60 s; broker "b" misbehaves
    from 10 s to 35 s (`EPISODE_MS`), then heals. Attempts are capped at 1000 ms (S3),
    except in "hung_uncapped", where the first attempt may take the whole budget (Java)."""
    healthy = tuple(BrokerTrace.steady(n) for n in "abc")
    return [
        Scenario("healthy_jitter", healthy, attempt_cap_ms=1000),
        _episode("slow_5x", latency_ms=100.0),
        _episode("slow_10x", latency_ms=200.0),
        _episode("slow_400ms", latency_ms=400.0),
        _episode("errors_30pct", error_rate=0.3),
        _episode("refusing", fault=Fault.REFUSE),
        _episode("hung", fault=Fault.HANG),
        _episode("hung_uncapped", fault=Fault.HANG, attempt_cap_ms=None),
    ]


#: ``--quick``'s scenarios: the healthy baseline and the two the README's headline cites.
QUICK_SCENARIOS = ("healthy_jitter", "slow_400ms", "hung")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.routing_sim",
        description="Replay the standard broker traces through every router on a virtual "
        "clock; print one Markdown row per scenario and router.",
    )
    parser.add_argument(
        "seed", nargs="?", type=int, default=0, help="seed of every draw (default 0)"
    )
    parser.add_argument(
        "--quick", action="store_true", help=f"only {', '.join(QUICK_SCENARIOS)} (a few s)"
    )
    args = parser.parse_args(argv)
    seed: int = args.seed
    print(TABLE_HEADER)
    for scenario in standard_scenarios():
        if args.quick and scenario.name not in QUICK_SCENARIOS:
            continue
        for name in ROUTER_NAMES:
            report = simulate(scenario, name, seed)
            print(report.row(scenario.focus, scenario.episode_ms))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
