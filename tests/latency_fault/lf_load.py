"""A router under load on a virtual clock, fed as the producer feeds it (not a test module).

Sends come either at a fixed rate (an open loop: `send_async` fed by a request stream) or
from N loops that each send again once their last send answered (`await send` in a loop).
Each send: `select_queue` with the clock truncated to whole milliseconds, as the producer
passes it; `on_dispatch`; the broker answers after `latency(broker, t_ms, n)` ms (`n`
counts that broker's answers from 0); then `on_complete` and `record` with the float
latency. Every `probe_tick_ms` the brokers that `due_probes` names are probed with the
same latency model, as the producer's upkeep does. Times are float ms; nothing sleeps.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from lf_support import MQ, queues

from latency_fault import PublishSnapshot, Router

#: latency(broker, t_ms, n) -> ms: the n-th answer (from 0) of `broker`, sent at t_ms.
LatencyModel = Callable[[str, float, int], float]


@dataclass
class LoadRun:
    window_ms: float
    #: sends dispatched per broker, per window (index * window_ms)
    windows: list[Counter[str]] = field(default_factory=list)
    probes: int = 0

    def count(self, at_ms: float, broker: str) -> None:
        index = int(at_ms // self.window_ms)
        while len(self.windows) <= index:
            self.windows.append(Counter())
        self.windows[index][broker] += 1

    def counts(self, start_ms: float, end_ms: float) -> Counter[str]:
        first, last = int(start_ms // self.window_ms), int(end_ms // self.window_ms)
        total: Counter[str] = Counter()
        for window in self.windows[first:last]:
            total.update(window)
        return total

    def share(self, broker: str, start_ms: float, end_ms: float) -> float:
        counts = self.counts(start_ms, end_ms)
        total = sum(counts.values())
        return counts[broker] / total if total else 0.0

    def window_shares(self, broker: str, start_ms: float, end_ms: float) -> list[float]:
        """`broker`'s share in each whole window from start_ms to end_ms."""
        step = self.window_ms
        n = int((end_ms - start_ms) // step)
        return [
            self.share(broker, start_ms + i * step, start_ms + (i + 1) * step) for i in range(n)
        ]


def jittered(base_ms: float, rng: random.Random, jitter: float = 0.2) -> float:
    return base_ms * rng.uniform(1.0 - jitter, 1.0 + jitter)


@dataclass(order=True)
class _Event:
    at_ms: float
    seq: int
    kind: str = field(compare=False)
    broker: str = field(default="", compare=False)
    latency_ms: float = field(default=0.0, compare=False)


class _Run:
    def __init__(
        self,
        router: Router,
        layout: dict[str, int],
        latency: LatencyModel,
        window_ms: float,
        seed: int,
    ) -> None:
        self.router = router
        self.latency = latency
        self.snapshot: PublishSnapshot[MQ] = PublishSnapshot(
            queues(layout), random.Random(seed), topic="T"
        )
        self.answers: Counter[str] = Counter()
        self.heap: list[_Event] = []
        self.seq = 0
        self.result = LoadRun(window_ms)

    def push(self, at_ms: float, kind: str, broker: str = "", latency_ms: float = 0.0) -> None:
        self.seq += 1
        heapq.heappush(self.heap, _Event(at_ms, self.seq, kind, broker, latency_ms))

    def ask(self, broker: str, t: float, kind: str) -> None:
        latency = self.latency(broker, t, self.answers[broker])
        self.answers[broker] += 1
        self.push(t + latency, kind, broker, latency)

    def send(self, t: float) -> None:
        now = int(t)
        broker = self.router.select_queue(self.snapshot, None, now).broker_name
        self.router.on_dispatch(broker, now)
        self.result.count(t, broker)
        self.ask(broker, t, "answer")

    def answer(self, event: _Event) -> None:
        if event.kind == "answer":
            self.router.on_complete(event.broker)
        self.router.record(event.broker, event.latency_ms, isolation=False, now_ms=int(event.at_ms))

    def probe(self, t: float) -> None:
        for broker in self.router.due_probes(int(t)):
            self.result.probes += 1
            self.ask(broker, t, "probe_answer")


def drive(
    router: Router,
    layout: dict[str, int],
    latency: LatencyModel,
    *,
    duration_ms: float,
    rate_per_s: float | None = None,
    loops: int | None = None,
    window_ms: float = 1000.0,
    probe_tick_ms: float | None = 1000.0,
    seed: int = 1,
) -> LoadRun:
    """Either an open loop at `rate_per_s` or `loops` closed loops, for `duration_ms`."""
    if (rate_per_s is None) == (loops is None):
        raise ValueError("give exactly one of rate_per_s and loops")
    run = _Run(router, layout, latency, window_ms, seed)
    for _ in range(loops or 1):
        run.push(0.0, "send")
    if probe_tick_ms is not None:
        run.push(probe_tick_ms, "probe_tick")
    while run.heap:
        event = heapq.heappop(run.heap)
        t = event.at_ms
        if event.kind in ("answer", "probe_answer"):
            run.answer(event)
            if event.kind == "answer" and loops is not None:
                run.push(t, "send")
        elif t >= duration_ms:
            continue  # no new sends or probes; answers in flight still land
        elif event.kind == "send":
            run.send(t)
            if rate_per_s is not None:
                run.push(t + 1000.0 / rate_per_s, "send")
        else:
            run.probe(t)
            assert probe_tick_ms is not None
            run.push(t + probe_tick_ms, "probe_tick")
    return run.result
