"""A master killed under steady produce and consume: what a replicated cluster's users see.

One run: a producer sends ``rate`` msg/s (``send_async``, a 5 ms pacer) and a push consumer
(a fresh group, from the first offset) reads the topic at ``consume_share`` of that rate
and caches at most ``CACHED`` messages (so a backlog is waiting on each broker when the
master dies: a consumer that keeps up, or holds the backlog in its cache, has nothing
left to read from the slave); after ``warmup_s`` the master of ``broker`` is
killed; ``window_s`` later it is restarted, sending stops, and the consumer, no longer
held back, drains until every acknowledged message was read (or ``drain_s`` passes). Shared by
``python -m producer demo --failover`` (in-process cluster) and ``python -m
benchmarks.faults --failover`` (cluster in its own process, over its HTTP API).

Measured, times from the kill: sends acknowledged and failed; send latency p99 before the
kill, in the 5 s after it, and after that, and the maximum; when the slave first answered
a pull with messages (``slave_read_s``, polled every 20 ms from the cluster) and when the
consumer first read a message of ``broker`` after the kill (perhaps from its cache);
messages of ``broker`` read while its master was dead; then, when the drain ends,
acknowledged messages not read (``unread``: what was lost, if the drain had the time it
needed; it ends early only once everything was read) and deliveries beyond the first
(``duplicated``).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from producer import Message, Producer, SendResult
from producer.cli.stats import percentile
from producer.consumer import ConsumeStatus, PushConsumer, ReceivedMessage
from producer.errors import ProducerError

__all__ = ["FailoverControl", "FailoverReport", "FailoverSettings", "run_failover"]

AROUND_KILL_S = 5.0  # "p99 around the kill": sends started in the 5 s after it
POLL_S = 0.02
PACE_S = 0.005
CACHED = 8  # the consumer's cache per queue (max_cached_messages): the backlog stays on the brokers


class FailoverControl(Protocol):
    """How the run kills and restarts the master, and reads the slave's pull count."""

    async def kill(self) -> None: ...

    async def restart(self) -> None: ...

    async def slave_served(self) -> int: ...


@dataclass(frozen=True)
class FailoverSettings:
    """One run's shape (see the module docstring)."""

    namesrv: str
    topic: str
    broker: str = "broker-a"
    rate: float = 200.0
    warmup_s: float = 3.0
    window_s: float = 10.0
    drain_s: float = 30.0
    consume_share: float = 0.5


@dataclass
class FailoverReport:
    """What one run measured (times in seconds from the kill, latencies in ms)."""

    acked: int = 0
    failed: int = 0
    p99_before_ms: float | None = None
    p99_around_ms: float | None = None
    p99_after_ms: float | None = None
    max_ms: float | None = None
    slave_read_s: float | None = None
    first_read_after_kill_s: float | None = None
    read_while_dead: int = 0
    unread: int = 0
    duplicated: int = 0
    drain_s: float = 0.0

    def lines(self) -> list[str]:
        """The report as text, one figure per line."""

        def ms(value: float | None) -> str:
            return "-" if value is None else f"{value:.1f} ms"

        def after(value: float | None) -> str:
            if value is None:
                return "never while the master was dead"
            return f"{value:.2f} s after the kill"

        return [
            f"sends: {self.acked} acknowledged, {self.failed} failed",
            f"send p99: before the kill {ms(self.p99_before_ms)}, in the {AROUND_KILL_S:g} s "
            f"after it {ms(self.p99_around_ms)}, later {ms(self.p99_after_ms)}; "
            f"max {ms(self.max_ms)}",
            f"slave first served a pull with messages: {after(self.slave_read_s)}",
            f"consumer first read the dead master's broker: {after(self.first_read_after_kill_s)}"
            f" ({self.read_while_dead} of its messages read while the master was dead)",
            f"after the master came back and {self.drain_s:.1f} s of draining: "
            f"{self.unread} acknowledged messages not read, {self.duplicated} duplicate "
            "deliveries",
        ]


@dataclass
class _Sends:
    started: list[tuple[float, float, bool]] = field(default_factory=list)  # t, ms, ok
    acked: set[int] = field(default_factory=set)
    in_flight: int = 0


@dataclass
class _Reads:
    counts: Counter[int] = field(default_factory=Counter)
    broker_times: list[float] = field(default_factory=list)  # reads of the killed broker
    rate: float | None = None  # messages per second the listener lets through (None: all)
    next_free: float = 0.0

    def hold_back(self, count: int, now: float) -> float:
        """Seconds the listener waits before taking ``count`` messages (a shared budget of
        ``rate`` per second across concurrent calls)."""
        if self.rate is None:
            return 0.0
        start = max(now, self.next_free)
        self.next_free = start + count / self.rate
        return self.next_free - now


async def run_failover(
    settings: FailoverSettings,
    control: FailoverControl,
    *,
    clock: Callable[[], float] = time.perf_counter,
    on_phase: Callable[[str], None] | None = None,
) -> FailoverReport:
    """One run (module docstring); ``on_phase`` hears each step as it starts."""
    say = on_phase or (lambda _: None)
    sends, reads = _Sends(), _Reads(rate=settings.rate * settings.consume_share)

    async def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        await asyncio.sleep(reads.hold_back(len(messages), clock()))
        for message in messages:
            reads.counts[int(message.body)] += 1
            if message.queue.broker_name == settings.broker:
                reads.broker_times.append(clock())
        return ConsumeStatus.SUCCESS

    consumer = PushConsumer(
        f"failover-{int(clock() * 1000)}",
        settings.namesrv,
        listener=listener,
        consume_from="first",
        max_cached_messages=CACHED,
    )
    consumer.subscribe(settings.topic)
    stop = asyncio.Event()
    async with Producer("failover-producer", settings.namesrv) as producer, consumer:
        pacer = asyncio.create_task(_pace(producer, settings, sends, stop, clock))
        say(
            f"sending {settings.rate:g} msg/s, consuming {reads.rate:g} msg/s; "
            f"killing {settings.broker}'s master in {settings.warmup_s:g} s"
        )
        await asyncio.sleep(settings.warmup_s)
        killed_at = clock()
        await control.kill()
        say(f"{settings.broker}'s master killed")
        slave_read = await _watch_slave(control, settings.window_s, clock)
        restarted_at = clock()
        await control.restart()
        say(f"{settings.broker}'s master restarted; draining")
        reads.rate = None
        stop.set()
        await pacer
        drained = await _drain(sends, reads, settings.drain_s, clock)
    return _report(sends, reads, (killed_at, restarted_at), slave_read, drained)


async def _pace(
    producer: Producer,
    settings: FailoverSettings,
    sends: _Sends,
    stop: asyncio.Event,
    clock: Callable[[], float],
) -> None:
    begin, sent = clock(), 0
    while not stop.is_set():
        while sent < int((clock() - begin) * settings.rate) + 1:
            _send_one(producer, settings.topic, sent, sends, clock)
            sent += 1
        await asyncio.sleep(PACE_S)


def _send_one(
    producer: Producer, topic: str, n: int, sends: _Sends, clock: Callable[[], float]
) -> None:
    started = clock()
    sends.in_flight += 1

    def done(ok: bool) -> None:
        sends.in_flight -= 1
        sends.started.append((started, (clock() - started) * 1000.0, ok))
        if ok:
            sends.acked.add(n)

    def succeeded(_: SendResult) -> None:
        done(True)

    def failed(_: ProducerError) -> None:
        done(False)

    producer.send_async(Message(topic, b"%d" % n), on_success=succeeded, on_exception=failed)


async def _watch_slave(
    control: FailoverControl, window_s: float, clock: Callable[[], float]
) -> float | None:
    """When (from now) the slave first served messages, polled for ``window_s``."""
    begin, before, first = clock(), await control.slave_served(), None
    while clock() - begin < window_s:
        if first is None and await control.slave_served() > before:
            first = clock() - begin
        await asyncio.sleep(POLL_S)
    return first


async def _drain(sends: _Sends, reads: _Reads, drain_s: float, clock: Callable[[], float]) -> float:
    begin = clock()
    # polled: the condition spans sends and reads, each in callbacks of its own
    while clock() - begin < drain_s and (sends.in_flight or sends.acked - set(reads.counts)):  # noqa: ASYNC110
        await asyncio.sleep(POLL_S)
    return clock() - begin


def _report(
    sends: _Sends,
    reads: _Reads,
    dead: tuple[float, float],
    slave_read: float | None,
    drained: float,
) -> FailoverReport:
    def p99(low: float, high: float) -> float | None:
        window = sorted(ms for t, ms, _ in sends.started if low <= t - killed_at < high)
        return percentile(window, 99.0)

    killed_at, restarted_at = dead
    while_dead = [t - killed_at for t in reads.broker_times if killed_at <= t < restarted_at]
    latencies = [ms for _, ms, _ in sends.started]
    return FailoverReport(
        acked=len(sends.acked),
        failed=sum(1 for *_, ok in sends.started if not ok),
        p99_before_ms=p99(float("-inf"), 0.0),
        p99_around_ms=p99(0.0, AROUND_KILL_S),
        p99_after_ms=p99(AROUND_KILL_S, float("inf")),
        max_ms=max(latencies) if latencies else None,
        slave_read_s=slave_read,
        first_read_after_kill_s=min(while_dead) if while_dead else None,
        read_while_dead=len(while_dead),
        unread=len(sends.acked - set(reads.counts)),
        duplicated=sum(n - 1 for n in reads.counts.values() if n > 1),
        drain_s=drained,
    )
