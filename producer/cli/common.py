"""Pieces the ``send`` and ``demo`` commands share: argument types and Ctrl-C handling.

Each command's core is ``async def ...(args, *, out, stop) -> int`` so tests can await
it on their own event loop; :func:`run_command` is the thin synchronous entry point that
runs it and turns SIGINT / SIGTERM into ``stop`` being set, so an interrupted command
still finishes its work in flight and prints what it has.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import signal
import sys
import textwrap
from collections.abc import Awaitable, Callable

import anyio
from anyio.abc import TaskStatus

from producer.errors import ProducerError

__all__ = [
    "EXIT_USAGE",
    "MAX_LINE",
    "fmt_ms",
    "wrapped",
    "positive_float",
    "positive_int",
    "run_command",
]

Command = Callable[[anyio.Event], Awaitable[int]]


MAX_LINE = 99  # every command's output fits a 100-column screen


def wrapped(text: str, width: int = MAX_LINE) -> str:
    """Each line of ``text`` broken at word boundaries into lines of at most ``width`` (a
    word longer than that stays whole), continuations indented two more than their line.
    A value is never parted from its label, nor a unit from its value: ``failed 0``,
    ``retries/msg 0.000`` and ``5.1 ms`` stay on one line."""
    return "\n".join(_wrap_line(line, width) for line in text.split("\n"))


# A number (1, 0.000, 33.1%, 8.68x, "-" for none; a closing bracket or stop may follow) or a
# unit after one.
_VALUE = re.compile(r"^(?:-|-?[\d.,]+%?x?|ms|msg/s|s)[),;:]*$")
_GLUE = "\x00"  # no command prints it; textwrap does not break at it


def _wrap_line(line: str, width: int) -> str:
    indent = line[: len(line) - len(line.lstrip(" "))]
    words = line[len(indent) :].split(" ")
    glued: list[str] = []
    for word in words:
        if glued and glued[-1] and _VALUE.match(word):
            glued[-1] += _GLUE + word
        else:
            glued.append(word)
    filled = textwrap.fill(
        indent + " ".join(glued),
        width=width,
        subsequent_indent=indent + "  ",
        break_long_words=False,
        break_on_hyphens=False,
    )
    return filled.replace(_GLUE, " ")


def fmt_ms(value: float | None) -> str:
    """A latency for people: one decimal below 100 ms, none above; ``-`` for no data."""
    if value is None:
        return "-"
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


async def _stop_on_signals(
    stop: anyio.Event, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    # Signal handlers can only be installed from the main thread (and not on Windows);
    # elsewhere Ctrl-C keeps Python's default behaviour.
    with contextlib.ExitStack() as stack:
        try:
            signals = stack.enter_context(anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM))
        except (NotImplementedError, ValueError, RuntimeError):
            task_status.started()
            return
        task_status.started()
        async for _ in signals:
            stop.set()


EXIT_USAGE = 2  # nothing could be done: bad arguments, an unreachable cluster, no route


def run_command(command: Command) -> int:
    """Run ``command(stop)`` on asyncio; the first Ctrl-C (or SIGTERM) sets ``stop``.

    An SDK error the command did not handle is one line on stderr and exit status 2, for
    every command: its message already names the problem and the fix.
    """

    async def main() -> int:
        stop = anyio.Event()
        async with anyio.create_task_group() as tg:
            await tg.start(_stop_on_signals, stop)
            try:
                code = await command(stop)
            except ProducerError as exc:
                print(f"error: {exc}", file=sys.stderr)
                code = EXIT_USAGE
            tg.cancel_scope.cancel()
        return code

    return anyio.run(main, backend="asyncio")
