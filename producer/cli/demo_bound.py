"""How many of the brown-out's sends adaptive routing may let reach the slowed broker.

The demo's ROUTING verdict (issue 34) compares what broker-b stored during its brown-out
with what adaptive routing (rule F4) is allowed to send it, derived from the router's
configuration and what the demo measured, not from a share picked by hand:

- **detection**: the router sees the slowness only once a send to the broker is older
  than the slow threshold (``slow_tolerance`` x the fastest healthy broker's latency,
  both with the slack). Until then the broker may take every send issued, one pacer tick
  after another. Each answer that comes back clears the broker's in-flight age, and
  until its clipped estimate (``spike_clip``) has caught up with the delay the broker
  looks healthy again: one such round per answer, counted with one answer per round
  (the slowest catch-up) on :class:`~latency_fault.BrokerHealth` itself.
- **trials**: a banned broker is readmitted through one trial send at a time, each
  answered after the injected delay at least.
- **probes**: each probe answer may cut a ban short, which opens one more trial.
- **slow share**: a slow broker keeps the weight its slowness earns, at least
  ``min_weight`` (:func:`slow_weight`, from the documented knobs).

Sends issued right after a stall of the demo's own event loop long enough to make every
broker look as slow as the slowed one are set aside (judged neither way): the router
cannot tell them apart then, by design. The verdict says how many it set aside.

Pure: numbers in, numbers out; no clock, no I/O.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from latency_fault import AdaptiveConfig, BrokerHealth
from producer.cli.stats import Tally

__all__ = [
    "Allowance",
    "BrownOutMeasure",
    "allowance",
    "brown_out_line",
    "detection_rounds",
    "is_too_loose",
    "measure_brown_out",
    "slow_weight",
    "slow_threshold_ms",
    "stall_threshold_ms",
]

# A bound must stay far below the share of a routing that ignores the brown-out (its
# round-robin share, 1 / brokers): past half of it, the verdict could not tell them apart.
MAX_FRACTION_OF_FAIR_SHARE = 0.5
_MAX_ROUNDS = 100  # a delay the estimate never shows as slow: the duration caps it anyway


@dataclass(frozen=True, slots=True)
class BrownOutMeasure:
    """What the demo measured during the brown-out (sends issued after a stall excluded).

    ``healthy_ms``: the fastest other broker's median latency (the router's reference);
    ``tick_ms``: the pacer's median interval between two rounds of sends.
    """

    sends: int
    slow_sends: int
    seconds: float
    healthy_ms: float
    tick_ms: float
    brokers: int


@dataclass(frozen=True, slots=True)
class Allowance:
    """Sends adaptive routing may let reach the slowed broker, by reason."""

    detection: int
    trials: int
    probes: int
    slow_share: int

    @property
    def total(self) -> int:
        return self.detection + self.trials + self.probes + self.slow_share


def slow_threshold_ms(healthy_ms: float, config: AdaptiveConfig) -> float:
    """The age past which a send in flight shows its broker slow beside ``healthy_ms``."""
    slack = config.latency_slack_ms
    return config.slow_tolerance * (healthy_ms + slack) - slack


def slow_weight(injected_ms: float, healthy_ms: float, config: AdaptiveConfig) -> float:
    """The weight :class:`~latency_fault.AdaptiveConfig` documents for a broker answering
    in ``injected_ms`` beside ``healthy_ms``: ``(slow_tolerance / ratio) ** slow_exponent``
    past the tolerance, never under ``min_weight`` (ratios with the slack added). Written
    from the documented knobs, not read from the router: a router that broke the rule
    must not raise its own allowance."""
    slack = config.latency_slack_ms
    ratio = (injected_ms + slack) / (healthy_ms + slack)
    if ratio <= config.slow_tolerance:
        return 1.0
    return float(max(config.min_weight, (config.slow_tolerance / ratio) ** config.slow_exponent))


def stall_threshold_ms(injected_ms: float, config: AdaptiveConfig) -> float:
    """A stall of our own event loop at least this long ages every healthy broker's
    sends in flight so far that a broker slowed by ``injected_ms`` no longer stands out."""
    slack = config.latency_slack_ms
    return (injected_ms + slack) / config.slow_tolerance - slack


def detection_rounds(healthy_ms: float, injected_ms: float, config: AdaptiveConfig) -> int:
    """Rounds in which the slowed broker may look healthy: the first (no answer yet),
    then one per answer until its estimate alone shows it slow."""
    health = BrokerHealth(latency_ms=healthy_ms)
    rounds = 1
    health.on_success(injected_ms, int(injected_ms), config)
    while _looks_healthy(health, healthy_ms, config) and rounds < _MAX_ROUNDS:
        rounds += 1
        health.on_success(injected_ms, int(rounds * injected_ms), config)
    return rounds


def _looks_healthy(health: BrokerHealth, healthy_ms: float, config: AdaptiveConfig) -> bool:
    estimate = health.latency_ms
    return estimate is None or slow_weight(estimate, healthy_ms, config) >= 1.0


def allowance(measure: BrownOutMeasure, injected_ms: float, config: AdaptiveConfig) -> Allowance:
    """What adaptive routing may send the broker slowed by ``injected_ms`` (module doc)."""
    duration_ms = measure.seconds * 1000.0
    rate_per_ms = measure.sends / duration_ms if duration_ms > 0 else 0.0
    window_ms = slow_threshold_ms(measure.healthy_ms, config) + measure.tick_ms
    rounds = min(
        detection_rounds(measure.healthy_ms, injected_ms, config),
        math.ceil(duration_ms / injected_ms),
    )
    weight = slow_weight(injected_ms, measure.healthy_ms, config)
    return Allowance(
        detection=rounds * math.ceil(rate_per_ms * window_ms),
        trials=math.ceil(duration_ms / injected_ms),
        probes=math.ceil(duration_ms / config.probe_interval_ms),
        slow_share=math.ceil(measure.sends * weight),
    )


def is_too_loose(bound: Allowance, measure: BrownOutMeasure) -> bool:
    """Whether the bound is too close to a routing that ignores the brown-out to judge."""
    fair_share = measure.sends / max(measure.brokers, 1)
    return bound.total >= MAX_FRACTION_OF_FAIR_SHARE * fair_share


def measure_brown_out(
    brown_out: Tally,
    after_stall: Tally,
    slow_broker: str,
    *,
    seconds: float,
    ticks: Sequence[float],
    brokers: Sequence[str],
) -> BrownOutMeasure | None:
    """The brown-out's sends less those issued after a stall (``after_stall``), with the
    healthy brokers' latency and the pacer's tick; ``None`` if nothing is left to judge."""
    sends = brown_out.succeeded - after_stall.succeeded
    medians = [brown_out.latency(50, b) for b in brokers if b != slow_broker]
    healthy = [m for m in medians if m is not None]
    if sends <= 0 or not healthy:
        return None
    return BrownOutMeasure(
        sends=sends,
        slow_sends=brown_out.broker(slow_broker).sends - after_stall.broker(slow_broker).sends,
        seconds=seconds,
        healthy_ms=min(healthy),
        tick_ms=statistics.median(ticks) if ticks else 0.0,
        brokers=len(brokers),
    )


def brown_out_line(
    healthy: Tally,
    brown_out: Tally,
    measure: BrownOutMeasure | None,
    slow_broker: str,
    injected_ms: float,
    config: AdaptiveConfig,
) -> str:
    """``ROUTING: ...``: whether ``slow_broker``, slowed by ``injected_ms``, stored no more
    of the brown-out's sends than adaptive routing may send it (:func:`allowance`). The
    p99s are shown for what they are: the machine's own load is in both."""
    before, during = healthy.latency(99), brown_out.latency(99)
    if measure is None or during is None:
        return f"ROUTING: not enough sends to judge the brown-out of {slow_broker}"
    bound = allowance(measure, injected_ms, config)
    if measure.slow_sends > bound.total:
        verdict = "did NOT hold"
    elif is_too_loose(bound, measure):
        verdict = "not judged (the allowance is near a routing that ignores the brown-out)"
    else:
        verdict = "held"
    aside = brown_out.succeeded - measure.sends
    measured = f"brown-out p99 {during:.1f} ms"
    if before is not None:
        measured += f", healthy p99 {before:.1f} ms"
    return (
        f"ROUTING: {slow_broker} was slowed by {injected_ms:g} ms; it stored "
        f"{measure.slow_sends} of the brown-out's {measure.sends} sends "
        f"({_pct(measure.slow_sends, measure.sends)}); adaptive routing may send it "
        f"{bound.total} ({_pct(bound.total, measure.sends)}: {bound.detection} before it "
        f"sees the delay, {bound.trials} trials, {bound.probes} after probes, "
        f"{bound.slow_share} at its slow weight)"
        + (f"; {aside} sends issued after our event loop stalled set aside" if aside else "")
        + f": {verdict} ({measured})"
    )


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"
