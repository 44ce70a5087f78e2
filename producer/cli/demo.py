"""``python -m producer demo``: fault-aware routing, live, against an in-process cluster.

Starts a three-broker :class:`DevCluster`, sends a steady stream with ``send_async`` at
``--rate`` messages per second, and plays a scripted fault timeline (healthy; broker-b
brown-out; broker-b healed and broker-c down; broker-c back). While it runs it shows
per-broker shares, latency and failures (a live table, or one line per second when
``--no-live`` or stdout is not a terminal). It ends with a table per phase and a verdict
comparing the acknowledged msg ids with what the brokers stored; exit status 0 only if
nothing was lost. Ctrl-C ends the timeline early, with the summary so far.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

import anyio
from rich.console import Console

from latency_fault import ROUTER_NAMES, AdaptiveConfig, AdaptiveRouter
from producer import Message, Producer, SendFuture, SendResult
from producer.cli.common import MAX_LINE, positive_float, wrapped
from producer.cli.demo_bound import brown_out_line, measure_brown_out, stall_threshold_ms
from producer.cli.demo_failover import run_failover_demo
from producer.cli.demo_ledger import MsgIdLedger, judge
from producer.cli.demo_view import (
    Display,
    LiveDisplay,
    PhaseSpan,
    PlainDisplay,
    ViewContext,
    phase_table,
    verdict_lines,
)
from producer.cli.stats import LiveStats, SendOutcome, Tally
from producer.errors import ProducerError
from producer.testing import DevCluster, FaultSpec

__all__ = ["Phase", "add_demo_arguments", "build_timeline", "run_demo"]

TOPIC = "DemoOrders"
BROWN_OUT_MS = 300.0
SLOW_BROKER = "broker-b"
PACE_TICK_S = 0.005  # the pacer tops up to the target count this often
REFRESH_S = 0.25  # display updates: ~4 per second
BODY = b"x" * 128
EXIT_INTERRUPTED = 130


def add_demo_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``demo`` command's options to ``parser``."""
    parser.add_argument(
        "--duration-s", type=positive_float, default=24.0, metavar="SECONDS", help="default 24"
    )
    parser.add_argument(
        "--rate", type=positive_float, default=400.0, metavar="MSGS_PER_S", help="default 400"
    )
    parser.add_argument("--routing", choices=sorted(ROUTER_NAMES), default="adaptive")
    parser.add_argument(
        "--no-live", dest="live", action="store_false", help="one plain line per second"
    )
    parser.add_argument("--seed", type=int, default=0, help="dev cluster seed (default 0)")
    parser.add_argument(
        "--failover",
        action="store_true",
        help="instead: kill a replicated master under steady produce + consume (slaves=1); "
        "report failed sends, p99 around the kill, when the slave is read, lost, duplicated",
    )
    return parser


@dataclass(frozen=True, slots=True)
class Phase:
    """A stretch of the timeline; ``faults`` are applied as it starts (``FaultSpec()``
    clears a broker's fault)."""

    name: str
    seconds: float
    faults: tuple[tuple[str, FaultSpec], ...] = ()


def build_timeline(duration_s: float) -> list[Phase]:
    """Four equal phases filling ``duration_s``."""
    quarter = duration_s / 4
    return [
        Phase("healthy", quarter),
        Phase(
            f"{SLOW_BROKER} brown-out +{BROWN_OUT_MS:g} ms",
            quarter,
            ((SLOW_BROKER, FaultSpec(latency_ms=BROWN_OUT_MS)),),
        ),
        Phase(
            "broker-b healed, broker-c down",
            quarter,
            (("broker-b", FaultSpec()), ("broker-c", FaultSpec(down=True))),
        ),
        Phase("broker-c back", quarter, (("broker-c", FaultSpec()),)),
    ]


class DemoRun:
    """What the pacer, the timeline and the display share while the demo runs.

    Besides the statistics it keeps, per phase, the pacer's intervals between rounds of
    sends and a tally of the sends issued right after a stall of the event loop of at
    least ``stall_ms`` (the ROUTING verdict sets those aside: see ``demo_bound``)."""

    def __init__(
        self, producer: Producer, ledger: MsgIdLedger, stats: LiveStats, stall_ms: float
    ) -> None:
        self.producer = producer
        self.ledger = ledger
        self.stats = stats
        self.stall_ms = stall_ms
        self.phase = "starting"
        self.spans: list[PhaseSpan] = []
        self.ticks: dict[str, list[float]] = {}
        self.after_stall: dict[str, Tally] = {}
        self._futures: list[SendFuture] = []
        self._start = anyio.current_time()

    def now_ms(self) -> float:
        return (anyio.current_time() - self._start) * 1000.0

    def note_tick(self, interval_ms: float) -> bool:
        """Note the pacer's interval since its last round; returns whether it was a stall."""
        self.ticks.setdefault(self.phase, []).append(interval_ms)
        return interval_ms >= self.stall_ms

    def send_one(self, *, after_stall: bool = False) -> None:
        """Start one ``send_async``; its callbacks file the outcome under today's phase."""
        message, phase, started = Message(TOPIC, BODY), self.phase, self.now_ms()

        def settle(outcome: SendOutcome) -> None:
            self.stats.record(outcome, now_ms=started + outcome.latency_ms, phase=phase)
            if after_stall:
                self.after_stall.setdefault(phase, Tally()).add(outcome)

        def succeeded(result: SendResult) -> None:
            settle(SendOutcome.of_result(result, self.now_ms() - started))
            self.ledger.on_success(message, result)

        def failed(error: ProducerError) -> None:
            settle(SendOutcome.of_error(error, self.now_ms() - started))
            self.ledger.on_failure(message, error)

        self._futures.append(self.producer.send_async(message, succeeded, failed))

    async def drain(self) -> None:
        """Wait for every send started so far (each ends within the send timeout)."""
        futures, self._futures = self._futures, []
        for future in futures:
            with contextlib.suppress(ProducerError):
                await future


async def _pace(run: DemoRun, rate: float, stop: anyio.Event) -> None:
    # Top up to rate x elapsed rather than sleeping 1/rate per send: sleeps overshoot,
    # so per-send sleeping would fall behind the rate asked for.
    start, issued = run.now_ms(), 0
    last = start
    while not stop.is_set():
        now = run.now_ms()
        stalled = run.note_tick(now - last)
        due = int((now - start) * rate / 1000.0) + 1
        for _ in range(due - issued):
            run.send_one(after_stall=stalled)
        issued, last = max(issued, due), now
        await anyio.sleep(PACE_TICK_S)


async def _play(
    run: DemoRun, cluster: DevCluster, timeline: Sequence[Phase], stop: anyio.Event
) -> None:
    for phase in timeline:
        start = run.now_ms()
        run.stats.phase(phase.name)
        run.phase = phase.name  # first: sends racing the fault change belong to this phase
        for broker, spec in phase.faults:
            await cluster.set_fault(broker, spec)
        with anyio.move_on_after(phase.seconds):
            await stop.wait()
        run.spans.append(PhaseSpan(phase.name, start, run.now_ms()))
        if stop.is_set():
            return


async def _refresh(run: DemoRun, display: Display) -> None:
    while True:
        display.update(run.phase, run.now_ms())
        await anyio.sleep(REFRESH_S)


async def _run_timeline(
    run: DemoRun, cluster: DevCluster, args: argparse.Namespace, display: Display, stop: anyio.Event
) -> None:
    sending = anyio.Event()  # set: the pacer stops
    display.start()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_refresh, run, display)
            tg.start_soon(_pace, run, args.rate, sending)
            await _play(run, cluster, build_timeline(args.duration_s), stop)
            sending.set()
            await run.drain()
            display.update(run.phase, run.now_ms())
            tg.cancel_scope.cancel()
    finally:
        display.stop()


def _console(out: TextIO) -> Console:
    if out.isatty():
        return Console(file=out)
    return Console(file=out, width=MAX_LINE, color_system=None)


def _display(
    args: argparse.Namespace, stats: LiveStats, ctx: ViewContext, console: Console
) -> Display:
    if args.live and console.is_terminal:
        return LiveDisplay(stats, ctx, console)
    return PlainDisplay(stats, ctx, console)


def _adaptive_config(producer: Producer) -> AdaptiveConfig:
    """The adaptive router's tuning (its defaults when another routing runs: the verdict
    states what adaptive routing would be allowed)."""
    router = producer.router
    return router.config if isinstance(router, AdaptiveRouter) else AdaptiveConfig()


def _routing_line(run: DemoRun, ctx: ViewContext, config: AdaptiveConfig, duration_s: float) -> str:
    healthy, brown_out = build_timeline(duration_s)[:2]
    span = next((s for s in run.spans if s.name == brown_out.name), None)
    tally = run.stats.phase(brown_out.name)
    measure = measure_brown_out(
        tally,
        run.after_stall.get(brown_out.name, Tally()),
        SLOW_BROKER,
        seconds=span.seconds if span is not None else 0.0,
        ticks=run.ticks.get(brown_out.name, []),
        brokers=ctx.brokers,
    )
    before = run.stats.phase(healthy.name)
    return brown_out_line(before, tally, measure, SLOW_BROKER, BROWN_OUT_MS, config)


async def run_demo(
    args: argparse.Namespace, *, out: TextIO | None = None, stop: anyio.Event | None = None
) -> int:
    """The ``demo`` command; returns 0 only if the verdict holds."""
    if args.failover:
        return await run_failover_demo(args, out or sys.stdout)
    console, stop = _console(out or sys.stdout), stop or anyio.Event()
    stats, ledger = LiveStats(), MsgIdLedger()
    async with DevCluster(brokers=3, topics={TOPIC: 4}, seed=args.seed) as cluster:
        ctx = ViewContext(args.routing, args.rate, args.duration_s, cluster.broker_names)
        producer = Producer(
            "demo-producer", cluster.namesrv_addr, routing=args.routing, hooks=[ledger]
        )
        config = _adaptive_config(producer)
        async with producer:
            run = DemoRun(producer, ledger, stats, stall_threshold_ms(BROWN_OUT_MS, config))
            await _run_timeline(run, cluster, args, _display(args, stats, ctx, console), stop)
        verdict = judge(
            ledger,
            cluster.unique_msg_ids(TOPIC),
            cluster.message_count(TOPIC),
            failed=stats.total.errors,
            unknown_fate_attempts=stats.total.unknown_fate_attempts,
        )
    console.print(phase_table(stats, ctx, run.spans))
    lines = verdict_lines(verdict)
    lines.insert(1, _routing_line(run, ctx, config, args.duration_s))
    if stop.is_set():
        lines.insert(0, f"interrupted after {run.now_ms() / 1000:.1f} s: the summary so far")
    for line in lines:
        text = wrapped(line, min(console.width - 1, MAX_LINE))
        console.print(text, markup=False, highlight=False, soft_wrap=True)
    if stop.is_set():
        return EXIT_INTERRUPTED
    return 0 if verdict.holds else 1
