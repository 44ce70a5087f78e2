"""``python -m producer send``: send N messages to a topic and report what happened.

Up to :data:`EACH_RESULT_UP_TO` messages, one line per result; beyond, one progress
line per :data:`PROGRESS_EVERY` sends. Always a final summary: successes and failures,
latency p50/p99, sends per broker, retries, failures by error type.

Exit status: 0 all sent; 1 some sends failed; 2 bad arguments or nothing can be sent at
all (name server unreachable, no route, invalid message); 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import TextIO

import anyio

from latency_fault import ROUTER_NAMES
from producer import Message, Producer, SendResult
from producer.cli.common import EXIT_USAGE, fmt_ms, positive_float, positive_int
from producer.cli.stats import SendOutcome, Tally
from producer.errors import (
    Fate,
    LocalProtocolError,
    NameServerError,
    NoRouteError,
    ProducerError,
)

__all__ = ["add_send_arguments", "run_send"]

EACH_RESULT_UP_TO = 100
PROGRESS_EVERY = 1000
EXIT_FAILED, EXIT_INTERRUPTED = 1, 130


def add_send_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``send`` command's options to ``parser``."""
    parser.add_argument("--namesrv", required=True, metavar="ADDR", help="host:port[;host:port]")
    parser.add_argument("--topic", required=True, metavar="T")
    parser.add_argument("--count", type=positive_int, default=1, metavar="N", help="default 1")
    parser.add_argument("--body", default="hello from python -m producer", metavar="TEXT")
    parser.add_argument("--tags", default=None, metavar="T", help="one tag")
    parser.add_argument(
        "--keys", action="append", default=None, metavar="K", help="a key (repeatable)"
    )
    parser.add_argument("--group", default="cli-producer", metavar="G", help="producer group")
    parser.add_argument(
        "--concurrency", type=positive_int, default=1, metavar="C", help="sends in flight"
    )
    parser.add_argument("--routing", choices=sorted(ROUTER_NAMES), default="adaptive")
    parser.add_argument(
        "--send-timeout-ms", type=positive_float, default=3000.0, metavar="MS", help="per send"
    )
    return parser


class ResultPrinter:
    """Prints each result (or progress lines) and keeps the tally for the summary."""

    def __init__(self, count: int, out: TextIO) -> None:
        self.count = count
        self.out = out
        self.each = count <= EACH_RESULT_UP_TO
        self.tally = Tally()
        self.unknown_fate = 0

    def succeeded(self, index: int, result: SendResult, latency_ms: float) -> None:
        self.tally.add(SendOutcome.of_result(result, latency_ms))
        if self.each:
            self._print(
                f"#{index} {result.status.value} {result.queue} offset={result.queue_offset} "
                f"msg_id={result.msg_id} attempts={len(result.attempts)} "
                f"{fmt_ms(latency_ms)} ms"
            )
        self._progress()

    def failed(self, index: int, error: ProducerError, latency_ms: float) -> None:
        self.tally.add(SendOutcome.of_error(error, latency_ms))
        if error.fate is Fate.UNKNOWN:
            self.unknown_fate += 1
        if self.each:
            self._print(
                f"#{index} FAILED {type(error).__name__} (fate {error.fate.value}): {error}"
            )
        self._progress()

    def _progress(self) -> None:
        tally = self.tally
        if not self.each and tally.messages % PROGRESS_EVERY == 0:
            self._print(
                f"{tally.messages}/{self.count} done: {tally.succeeded} ok, "
                f"{tally.failed} failed, p99 {fmt_ms(tally.latency(99))} ms"
            )

    def _print(self, line: str) -> None:
        print(line, file=self.out, flush=True)

    def summary(self, topic: str, elapsed_s: float) -> list[str]:
        tally = self.tally
        rate = tally.messages / elapsed_s if elapsed_s > 0 else 0.0
        brokers = ", ".join(
            f"{name} {t.sends} ({tally.share(name) * 100:.1f}%)"
            for name, t in sorted(tally.brokers.items())
            if t.sends
        )
        lines = [
            f"sent {tally.messages} to {topic!r} in {elapsed_s:.2f} s ({rate:.0f} msg/s): "
            f"{tally.succeeded} ok, {tally.failed} failed",
            f"latency ms: p50 {fmt_ms(tally.latency(50))} p99 {fmt_ms(tally.latency(99))} "
            f"max {fmt_ms(tally.latency(100))}",
            f"per broker: {brokers or '-'}",
            f"retries: {tally.retries} ({tally.retries_per_message:.3f} per message)",
        ]
        for error, count in sorted(tally.errors.items()):
            lines.append(f"failed: {count} x {error}")
        if self.unknown_fate:
            lines.append(f"failed with unknown fate (may be stored): {self.unknown_fate}")
        return lines


def _message(args: argparse.Namespace) -> Message:
    return Message(args.topic, args.body.encode(), tags=args.tags, keys=args.keys)


def _setup_error(error: ProducerError) -> str:
    if isinstance(error, NameServerError):
        return f"error: cannot reach the name server: {error}"
    return f"error: {error}"


async def _send_one(producer: Producer, message: Message, index: int, out: ResultPrinter) -> None:
    started = anyio.current_time()
    try:
        result = await producer.send(message)
    except ProducerError as exc:
        out.failed(index, exc, (anyio.current_time() - started) * 1000.0)
    else:
        out.succeeded(index, result, (anyio.current_time() - started) * 1000.0)


async def _first_send(
    producer: Producer, args: argparse.Namespace, out: ResultPrinter, err: TextIO
) -> bool:
    """Send message #1 alone: if nothing can be sent at all, say why and return False."""
    started = anyio.current_time()
    try:
        result = await producer.send(_message(args))
    except (NoRouteError, NameServerError, LocalProtocolError) as exc:
        print(_setup_error(exc), file=err, flush=True)
        return False
    except ProducerError as exc:
        out.failed(1, exc, (anyio.current_time() - started) * 1000.0)
    else:
        out.succeeded(1, result, (anyio.current_time() - started) * 1000.0)
    return True


async def _worker(
    producer: Producer,
    args: argparse.Namespace,
    indexes: Iterator[int],
    out: ResultPrinter,
    stop: anyio.Event,
) -> None:
    for index in indexes:  # shared by all workers: each index is taken once
        if stop.is_set():
            return
        await _send_one(producer, _message(args), index, out)


async def run_send(
    args: argparse.Namespace,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    stop: anyio.Event | None = None,
) -> int:
    """The ``send`` command; returns the exit status (see the module docstring)."""
    out, err, stop = out or sys.stdout, err or sys.stderr, stop or anyio.Event()
    try:
        producer = Producer(
            args.group, args.namesrv, routing=args.routing, send_timeout_ms=args.send_timeout_ms
        )
    except ProducerError as exc:
        print(f"error: {exc}", file=err, flush=True)
        return EXIT_USAGE
    printer = ResultPrinter(args.count, out)
    started = anyio.current_time()
    async with producer:
        if not await _first_send(producer, args, printer, err):
            return EXIT_USAGE
        indexes = iter(range(2, args.count + 1))
        async with anyio.create_task_group() as tg:
            for _ in range(min(args.concurrency, args.count - 1)):
                tg.start_soon(_worker, producer, args, indexes, printer, stop)
    for line in printer.summary(args.topic, anyio.current_time() - started):
        print(line, file=out, flush=True)
    if stop.is_set() and printer.tally.messages < args.count:
        print(f"interrupted after {printer.tally.messages} of {args.count}", file=err)
        return EXIT_INTERRUPTED
    return EXIT_FAILED if printer.tally.failed else 0
