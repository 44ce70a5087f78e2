"""How the demo looks: the live rich table, plain per-second lines, the phase summary
and the verdict. Rendering only: every function reads a :class:`LiveStats` and returns
something to print; none of them sends, sleeps or reads a clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from rich import box
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from producer.cli.common import MAX_LINE, fmt_ms, wrapped
from producer.cli.demo_ledger import LedgerVerdict
from producer.cli.stats import LiveStats, Tally

__all__ = [
    "Display",
    "LiveDisplay",
    "PhaseSpan",
    "PlainDisplay",
    "ViewContext",
    "live_view",
    "phase_table",
    "plain_line",
    "verdict_lines",
]


@dataclass(frozen=True, slots=True)
class ViewContext:
    """What stays fixed during a run."""

    routing: str
    rate: float
    duration_s: float
    brokers: Sequence[str]


@dataclass(frozen=True, slots=True)
class PhaseSpan:
    """When a phase ran, in ms since the start of the run."""

    name: str
    start_ms: float
    end_ms: float

    @property
    def seconds(self) -> float:
        return max(self.end_ms - self.start_ms, 0.0) / 1000.0


def _pct(share: float) -> str:
    return f"{share * 100:.1f}%"


def _short(broker: str) -> str:
    """``broker-b`` -> ``b``: plain lines name brokers by their letter."""
    return broker.removeprefix("broker-")


def live_view(stats: LiveStats, ctx: ViewContext, phase: str, now_ms: float) -> RenderableType:
    """The live screen: a header, one row per broker and a totals row, and two summary lines."""
    window = stats.last_window(now_ms)
    title = (
        f"RocketMQ producer demo - routing {ctx.routing} - target {ctx.rate:g} msg/s - "
        f"{now_ms / 1000:.1f} s / {ctx.duration_s:g} s"
    )
    table = Table(title=title, caption=f"phase: {phase}", title_justify="left")
    for column in ("broker", "share 1s", "share all", "p50 1s", "p99 1s", "failed att.", "retried"):
        table.add_column(column, justify="left" if column == "broker" else "right")
    for broker in ctx.brokers:
        total = stats.total.broker(broker)
        table.add_row(
            broker,
            _pct(window.share(broker)),
            _pct(stats.total.share(broker)),
            fmt_ms(window.latency(50, broker)),
            fmt_ms(window.latency(99, broker)),
            str(total.failed_attempts),
            str(total.retried_attempts),
        )
    last = _rates_line("last 1s", window, stats.throughput(window))
    return Group(table, Text(last), Text(_rates_line("overall", stats.total, None)))


def _rates_line(label: str, tally: Tally, per_second: float | None) -> str:
    rate = f"{per_second:.0f} msg/s, " if per_second is not None else ""
    return (
        f"{label}: {rate}{tally.messages} sends, {tally.failed} failed, "
        f"p50 {fmt_ms(tally.latency(50))} p99 {fmt_ms(tally.latency(99))} "
        f"p999 {fmt_ms(tally.latency(99.9))} ms, retries/msg {tally.retries_per_message:.3f}"
    )


def plain_line(stats: LiveStats, ctx: ViewContext, phase: str, now_ms: float) -> str:
    """Two lines about the last complete second (for ``--no-live`` and pipes): the whole
    producer, then each broker's share and p99; ``phase`` is the phase that second
    belongs to."""
    window = stats.last_window(now_ms)
    second = stats.window_index(now_ms)
    shares = " ".join(f"{_short(b)} {_pct(window.share(b))}" for b in ctx.brokers)
    p99s = " ".join(f"{_short(b)} {fmt_ms(window.latency(99, b))}" for b in ctx.brokers)
    return (
        f"t={second - 1:>3}-{second}s [{phase}] {stats.throughput(window):.0f} msg/s "
        f"p50 {fmt_ms(window.latency(50))} p99 {fmt_ms(window.latency(99))} "
        f"p999 {fmt_ms(window.latency(99.9))} ms | failed {window.failed} "
        f"retries/msg {window.retries_per_message:.3f}\n"
        f"         share {shares} | p99 ms {p99s}"
    )


def phase_table(stats: LiveStats, ctx: ViewContext, spans: Sequence[PhaseSpan]) -> Table:
    """The end-of-run table: per phase a totals row (``failed sends``), then a row per
    broker (``failed tries`` = attempts that failed there, ``retried`` = of those, retried
    on another broker). Names never shrink, so it stays readable at 80 columns."""
    table = Table(
        title="Per phase (each send filed under the phase it started in)",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 0, 0, 1),  # one space between columns: 80 columns suffice
    )
    longest = max([len(b) + 2 for b in ctx.brokers] + [12])
    table.add_column("phase / broker", min_width=longest, overflow="fold")
    for column in ("sends", "share", "p50", "p99", "p999"):
        table.add_column(column, justify="right")
    for column in ("failed\nsends", "failed\ntries", "retried", "retry\n/msg"):
        table.add_column(column, justify="right")
    for span in spans:
        tally = stats.phase(span.name)
        table.add_row(*_phase_row(span, tally), style="bold")
        for broker in ctx.brokers:
            table.add_row(*_broker_row(tally, broker))
        table.add_section()
    return table


def _latencies(tally: Tally, broker: str | None = None) -> list[str]:
    return [fmt_ms(tally.latency(q, broker)) for q in (50, 99, 99.9)]


def _phase_row(span: PhaseSpan, tally: Tally) -> list[str]:
    return [
        span.name,
        str(tally.messages),
        "",
        *_latencies(tally),
        str(tally.failed),
        "",
        "",
        f"{tally.retries_per_message:.3f}",
    ]


def _broker_row(tally: Tally, broker: str) -> list[str]:
    mine = tally.broker(broker)
    return [
        f"  {broker}",
        str(mine.sends),
        _pct(tally.share(broker)),
        *_latencies(tally, broker),
        "",
        str(mine.failed_attempts),
        str(mine.retried_attempts),
        "",
    ]


def verdict_lines(verdict: LedgerVerdict) -> list[str]:
    """The verdict, first line ``VERDICT: ...``, then the evidence."""
    lines = [_headline(verdict)]
    lines.append(
        f"  acknowledged sends: {verdict.acknowledged}; unique msg ids stored: "
        f"{verdict.stored_unique}; messages stored: {verdict.stored_total}"
    )
    if verdict.missing:
        sample = ", ".join(sorted(verdict.missing)[:5])
        lines.append(f"  LOST: {len(verdict.missing)} acknowledged ids not stored: {sample}")
    if verdict.unexplained:
        sample = ", ".join(sorted(verdict.unexplained)[:5])
        lines.append(f"  UNEXPLAINED: {len(verdict.unexplained)} stored ids: {sample}")
    if verdict.stored_after_failure:
        lines.append(
            f"  {verdict.stored_after_failure} sends reported failed with unknown fate "
            "were stored anyway (allowed: the broker took them, the answer never came)"
        )
    if verdict.duplicates:
        lines.append(
            f"  duplicates: {verdict.duplicates} extra stored copies, against "
            f"{verdict.unknown_fate_attempts} attempts with unknown fate (timeout / "
            "connection lost after the write)"
        )
    for error, count in sorted(verdict.failed.items()):
        lines.append(f"  failed sends: {count} x {error}")
    return lines


def _headline(verdict: LedgerVerdict) -> str:
    if verdict.holds:
        return (
            f"VERDICT: PASS - nothing lost: all {verdict.acknowledged} sends acknowledged, "
            f"and every acknowledged msg id is stored ({verdict.duplicates} duplicates)"
        )
    if verdict.is_consistent:
        return (
            f"VERDICT: FAIL - {verdict.failed_sends} sends failed (each reported to the "
            "caller; none silently lost)"
        )
    return "VERDICT: FAIL - the brokers do not hold what the producer acknowledged"


class Display(Protocol):
    """Shows the run while it goes; ``update`` is called about four times a second."""

    def start(self) -> None: ...

    def update(self, phase: str, now_ms: float) -> None: ...

    def stop(self) -> None: ...


class LiveDisplay:
    """The rich live table, redrawn on each ``update`` (never from rich's own thread,
    which would read the statistics while the event loop changes them)."""

    def __init__(self, stats: LiveStats, ctx: ViewContext, console: Console) -> None:
        self._stats = stats
        self._ctx = ctx
        self._live = Live(console=console, auto_refresh=False)

    def start(self) -> None:
        self._live.start()

    def update(self, phase: str, now_ms: float) -> None:
        self._live.update(live_view(self._stats, self._ctx, phase, now_ms), refresh=True)

    def stop(self) -> None:
        self._live.stop()


class PlainDisplay:
    """One :func:`plain_line` per completed second, labelled with the phases seen in it."""

    def __init__(self, stats: LiveStats, ctx: ViewContext, console: Console) -> None:
        self._stats = stats
        self._ctx = ctx
        self._console = console
        self._shown = 0  # windows before this index have been printed (or skipped)
        self._phases: list[str] = []  # phases seen since the last line, in order

    def start(self) -> None:
        pass

    def update(self, phase: str, now_ms: float) -> None:
        current = self._stats.window_index(now_ms)
        if current > self._shown:
            self._shown = current
            label = " > ".join(self._phases or [phase])
            line = plain_line(self._stats, self._ctx, label, now_ms)
            text = wrapped(line, min(self._console.width - 1, MAX_LINE))
            self._console.print(text, markup=False, highlight=False, soft_wrap=True)
            self._phases = []
        if not self._phases or self._phases[-1] != phase:
            self._phases.append(phase)

    def stop(self) -> None:
        pass
