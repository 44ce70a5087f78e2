"""What a simulation run measured: shares per window, latency percentiles, failures."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["TABLE_HEADER", "SimReport", "percentile"]


def percentile(ordered: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an ascending sequence (0.0 when it is empty)."""
    if not ordered:
        return 0.0
    rank = max(1, min(len(ordered), round(q * len(ordered) + 0.5)))
    return float(ordered[rank - 1])


@dataclass(frozen=True)
class SimReport:
    """One router through one scenario."""

    router: str
    scenario: str
    window_ms: int
    #: Each broker's round-robin share: its queues over all queues.
    fair_shares: dict[str, float]
    #: Per window (index * window_ms), attempts started on each broker.
    attempts_by_window: tuple[tuple[tuple[str, int], ...], ...]
    messages: int
    failures: int
    probes: int
    bans: int
    p50_ms: float
    p99_ms: float

    @property
    def attempts(self) -> int:
        return sum(n for window in self.attempts_by_window for _, n in window)

    def _counts(self, start_ms: int, end_ms: int | None) -> dict[str, int]:
        first = start_ms // self.window_ms
        last = len(self.attempts_by_window) if end_ms is None else end_ms // self.window_ms
        totals = dict.fromkeys(self.fair_shares, 0)
        for window in self.attempts_by_window[first:last]:
            for broker, n in window:
                totals[broker] += n
        return totals

    def shares(self, start_ms: int = 0, end_ms: int | None = None) -> dict[str, float]:
        """Each broker's share of the attempts started in [start_ms, end_ms)."""
        counts = self._counts(start_ms, end_ms)
        total = sum(counts.values())
        return {b: (n / total if total else 0.0) for b, n in counts.items()}

    def share(self, broker: str, start_ms: int = 0, end_ms: int | None = None) -> float:
        return self.shares(start_ms, end_ms)[broker]

    def window_shares(self, broker: str, start_ms: int, end_ms: int) -> list[float]:
        """`broker`'s share in each window between start_ms and end_ms."""
        return [
            self.share(broker, t, t + self.window_ms)
            for t in range(start_ms, end_ms, self.window_ms)
        ]

    def recovery_ms(
        self, broker: str, after_ms: int, until_ms: int, *, fraction: float = 0.9
    ) -> int | None:
        """How long after `after_ms` `broker` got back `fraction` of its fair share in
        every window up to `until_ms` (the end of the first such window); None if never."""
        floor = fraction * self.fair_shares[broker]
        shares = self.window_shares(broker, after_ms, until_ms)
        for i in range(len(shares)):
            if all(s >= floor for s in shares[i:]):
                return (i + 1) * self.window_ms
        return None

    def row(self, focus: str | None = None, episode_ms: tuple[int, int] | None = None) -> str:
        """One Markdown table row (see `TABLE_HEADER`): the focus broker's share from 2 s
        into the episode to its end, and how soon after it it kept its fair share."""
        share = back = "-"
        if focus is not None and episode_ms is not None:
            start, end = episode_ms
            share = f"{self.share(focus, start + 2000, end):.3f}"
            recovered = self.recovery_ms(focus, end, end + 20_000)
            back = "never" if recovered is None else f"{recovered / 1000:.0f} s"
        cells = [
            self.scenario,
            self.router,
            share,
            back,
            f"{self.p50_ms:.0f}",
            f"{self.p99_ms:.0f}",
            f"{self.failures}/{self.messages}",
            str(self.attempts - self.messages),
            str(self.probes),
        ]
        return "| " + " | ".join(cells) + " |"


TABLE_HEADER = (
    "| scenario | router | focus share | back in | p50 ms | p99 ms | failed | extra attempts "
    "| probes |\n|---|---|---|---|---|---|---|---|---|"
)
