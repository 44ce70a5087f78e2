"""Command line: ``python -m producer <command>``.

* ``send``    - send messages to a topic and report results, latency and brokers.
* ``demo``    - fault-aware routing live against an in-process dev cluster.
* ``cluster`` - run the dev cluster (``producer.testing``) until interrupted.
* ``bench``   - run any benchmark of the source tree's ``benchmarks/`` package.
* ``dlq``     - list, show and re-drive a consumer group's dead letters.
* ``consume-demo`` - retries, delay levels, the DLQ and a re-drive, live, in-process.
* ``trace``   - a message's journey, from the message trace topic.

Each command's core is an ``async def`` taking the parsed arguments (tests await it);
:func:`main` parses ``argv`` and runs it on asyncio. Bad arguments exit with status 2.
"""

from __future__ import annotations

import argparse
import importlib.util
import pkgutil
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from producer import __version__
from producer.cli.cluster import add_cluster_arguments, run_cluster_cli
from producer.cli.common import run_command
from producer.cli.consume_demo import add_consume_demo_arguments, run_consume_demo
from producer.cli.dlq import add_dlq_arguments, run_dlq
from producer.cli.send import add_send_arguments, run_send
from producer.cli.trace import add_trace_arguments, run_trace
from producer.errors import InvalidOptionError
from producer.errors._base import did_you_mean


class CliParser(argparse.ArgumentParser):
    """An argument parser that names the nearest option for a mistyped one (``--cout``:
    ``did you mean '--count'?``), in the words of the SDK's own unknown-option errors.
    Its sub-command parsers are of this class too (``add_subparsers`` makes them so)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.option_names: list[str] = []  # filled by add_argument, -h first
        super().__init__(*args, **kwargs)

    def add_argument(self, *names: Any, **kwargs: Any) -> argparse.Action:
        self.option_names += [n for n in names if isinstance(n, str) and n.startswith("-")]
        return super().add_argument(*names, **kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        for extra in extras:
            name = extra.split("=", 1)[0]
            if name.startswith("-") and name != "--":
                command = self.prog.rsplit(" ", 1)[-1]
                self.error(str(InvalidOptionError.unknown(command, name, self.option_names)))
        return parsed, extras


def build_parser() -> argparse.ArgumentParser:
    parser = CliParser(
        prog="python -m producer",
        description="Asyncio producer for Apache RocketMQ: send, demo and dev cluster tools.",
    )
    parser.add_argument(
        "--version", action="version", version=f"rocketmq-aio-producer {__version__}"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_send_arguments(
        commands.add_parser(
            "send",
            help="send messages and report results",
            description="Send --count messages to --topic; exit 1 if any failed, "
            "2 if nothing can be sent (bad arguments, name server unreachable, no route).",
        )
    )
    demo = commands.add_parser(
        "demo",
        help="watch fault-aware routing ride out a brown-out and an outage",
        description="Run a 3-broker dev cluster in-process, send at --rate msg/s through "
        "a scripted fault timeline, show it live, and check nothing was lost.",
    )
    if _has_rich():
        from producer.cli.demo import add_demo_arguments

        add_demo_arguments(demo)
    add_cluster_arguments(
        commands.add_parser(
            "cluster",
            help="run a dev cluster (name server + brokers) until interrupted",
            description="Run the embedded dev cluster until Ctrl-C / SIGTERM.",
        )
    )
    add_dlq_arguments(
        commands.add_parser(
            "dlq",
            help="list, show or re-drive a consumer group's dead letters",
            description="Read %DLQ%<group> without changing it; re-drive chosen messages "
            "to their original topic with a fresh retry budget.",
        )
    )
    add_consume_demo_arguments(
        commands.add_parser(
            "consume-demo",
            help="watch a consumer retry, dead-letter and re-drive messages",
            description="Publish orders to an in-process dev cluster and consume them with "
            "failures: retries through %RETRY%, the DLQ, a re-drive, and a verdict.",
        )
    )
    add_trace_arguments(
        commands.add_parser(
            "trace",
            help="a message's journey from the message trace topic",
            description="Read the trace records of MSG_ID (written by clients with "
            "trace=True): its sends, where it was stored, each consume attempt.",
        )
    )
    bench = commands.add_parser(
        "bench",
        help="run a benchmark (any module of benchmarks/) from the source tree",
        description="Run benchmarks.<NAME> with the remaining arguments "
        "(e.g. 'bench throughput --quick'); needs the repository's benchmarks/ package. "
        f"NAME: {' | '.join(benchmark_names()) or 'see benchmarks/ in a checkout'}.",
    )
    bench.add_argument("name", metavar="NAME", help="a module of benchmarks/, e.g. throughput")
    bench.add_argument("rest", nargs=argparse.REMAINDER, help="arguments for the benchmark")
    return parser


def benchmark_names() -> list[str]:
    """The runnable benchmarks: ``benchmarks/``'s public modules (none outside a checkout)."""
    found = importlib.util.find_spec("benchmarks")
    if found is None or not found.submodule_search_locations:
        return []
    modules = pkgutil.iter_modules(list(found.submodule_search_locations))
    return sorted(m.name for m in modules if not m.name.startswith("_") and not m.ispkg)


def run_bench(name: str, rest: list[str]) -> int:
    """Benchmarks ship with the source, not the wheel: run one in its own process from a
    checkout (the current directory), or say why not instead of a traceback."""
    names = benchmark_names()
    if not names:
        print(
            f"error: benchmark {name!r} needs a source checkout: run it from the repository "
            "root, where the benchmarks/ package lives (it is not installed with the package)",
            file=sys.stderr,
        )
        return 2
    if name not in names:
        hint = did_you_mean(name, names)
        print(
            f"error: no benchmark {name!r}{hint} (benchmarks: {', '.join(names)})", file=sys.stderr
        )
        return 2
    return subprocess.call([sys.executable, "-m", f"benchmarks.{name}", *rest])


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "cluster":
        # The dev cluster's CLI parses its own options (validated above by the same
        # definitions); no global option takes a value, so "cluster" is the command word.
        return run_cluster_cli(argv[argv.index("cluster") + 1 :])
    if args.command == "bench":
        return run_bench(args.name, list(args.rest))
    if args.command == "send":
        return run_command(lambda stop: run_send(args, stop=stop))
    if args.command == "dlq":
        return run_command(lambda stop: run_dlq(args, sys.stdout))
    if args.command == "trace":
        return run_command(lambda stop: run_trace(args, sys.stdout))
    if args.command == "consume-demo":
        return run_command(lambda stop: run_consume_demo(args, sys.stdout))
    if not _has_rich():
        print(f"error: the demo needs rich: {CLI_EXTRA}", file=sys.stderr)
        return 2
    from producer.cli.demo import run_demo  # rich is an extra

    return run_command(lambda stop: run_demo(args, stop=stop))


CLI_EXTRA = 'pip install "rocketmq-aio-producer[cli]"'


def _has_rich() -> bool:
    try:
        import rich  # noqa: F401 - only whether it imports
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
