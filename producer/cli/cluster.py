"""``python -m producer cluster``: run a dev cluster until interrupted.

Prints one line per server (``namesrv 127.0.0.1:9876``, ``broker-a 127.0.0.1:40123``,
``http http://127.0.0.1:8080``) then ``ready``; with ``--json`` one JSON object instead,
for scripts and benchmarks that start it as a subprocess. SIGINT / SIGTERM shut it down
cleanly (exit status 0).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import json
import signal
import sys
from collections.abc import Coroutine, Sequence
from typing import Any, TextIO

from producer.cli.common import EXIT_USAGE
from producer.errors import InvalidOptionError
from producer.testing import BROKER_VERSIONS, DEFAULT_DELAY_LEVELS, DevCluster, parse_topics

__all__ = ["add_cluster_arguments", "run_cluster", "run_cluster_cli"]

DEFAULT_NAMESRV_PORT = 9876


def add_cluster_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``cluster`` command's options to ``parser`` (e.g. a subcommand parser)."""
    parser.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument(
        "--namesrv-port",
        type=int,
        default=DEFAULT_NAMESRV_PORT,
        help=f"name server port (default {DEFAULT_NAMESRV_PORT}; 0 = any free port)",
    )
    parser.add_argument(
        "--http-port", type=int, default=None, help="also serve the HTTP control API here"
    )
    parser.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="NAME:QUEUES",
        help="create a topic on every broker (repeatable)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for fault draws")
    parser.add_argument(
        "--broker-version",
        choices=sorted(BROKER_VERSIONS),
        default="4.9.4",
        help="the broker version to play (default 4.9.4); 5.x adds timed delivery "
        "(delay_ms / deliver_at_ms), pop consumption and 5.x response codes",
    )
    parser.add_argument(
        "--delay-levels",
        default=DEFAULT_DELAY_LEVELS,
        metavar="LEVELS",
        help="the brokers' messageDelayLevel, e.g. '1s 1s 1s' so a poison message reaches "
        "the DLQ in seconds (default: the broker's 18 levels, 1s to 2h)",
    )
    parser.add_argument(
        "--no-auto-create",
        dest="auto_create_topic",
        action="store_false",
        help="brokers refuse unknown topics instead of creating them",
    )
    parser.add_argument(
        "--sink", action="store_true", help="brokers count sends without storing (benchmarks)"
    )
    parser.add_argument(
        "--pull-sink",
        action="store_true",
        help="created topics hold an endless backlog pulled from a pre-built commit log",
    )
    parser.add_argument(
        "--slaves",
        type=int,
        choices=(0, 1),
        default=0,
        help="1: every broker gets a slave (brokerId 1, its own port) copying its log",
    )
    parser.add_argument(
        "--slave-read-enable",
        action="store_true",
        help="slaveReadEnable: a pull reading far behind the log's end is sent to the slave",
    )
    parser.add_argument(
        "--replication-lag-ms",
        type=int,
        default=0,
        metavar="MS",
        help="slaves copy a message this long after it was stored (default 0)",
    )
    parser.add_argument("--json", action="store_true", help="print the addresses as JSON")
    parser.add_argument(
        "--no-uvloop",
        dest="uvloop",
        action="store_false",
        help="run on the default asyncio loop even when uvloop is installed",
    )
    return parser


def _cluster_from(args: argparse.Namespace) -> DevCluster:
    return DevCluster(
        brokers=args.brokers,
        topics=parse_topics(args.topic),
        host=args.host,
        namesrv_port=args.namesrv_port,
        auto_create_topic=args.auto_create_topic,
        seed=args.seed,
        delay_levels=args.delay_levels,
        http_port=args.http_port,
        sink=args.sink,
        pull_sink=args.pull_sink,
        broker_version=args.broker_version,
        slaves=args.slaves,
        slave_read_enable=args.slave_read_enable,
        replication_lag_ms=args.replication_lag_ms,
    )


def _announce(cluster: DevCluster, *, as_json: bool, out: TextIO) -> None:
    brokers = {name: cluster.broker_addr(name) for name in cluster.broker_names}
    if as_json:
        info = {
            "namesrv": cluster.namesrv_addr,
            "brokers": brokers,
            "http": cluster.http_url,
            "delay_levels_ms": list(cluster.delay_levels.delays_ms),
            "broker_version": cluster.broker_version,
            "slaves": cluster.slave_addrs,
        }
        print(json.dumps(info), file=out, flush=True)
        return
    lines = [f"namesrv {cluster.namesrv_addr}"] + [f"{n} {a}" for n, a in brokers.items()]
    lines += [f"{n}-s {a} (slave)" for n, a in cluster.slave_addrs.items()]
    if cluster.http_url is not None:
        lines.append(f"http {cluster.http_url}")
    print("\n".join([*lines, "ready"]), file=out, flush=True)


async def run_cluster(
    args: argparse.Namespace, *, stop: asyncio.Event | None = None, out: TextIO | None = None
) -> int:
    """Run the cluster described by ``args`` until ``stop`` is set or SIGINT/SIGTERM."""
    stop = stop if stop is not None else asyncio.Event()
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
            installed.append(sig)
    try:
        async with _cluster_from(args) as cluster:
            _announce(cluster, as_json=args.json, out=out or sys.stdout)
            await stop.wait()
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
    return 0


def _run(main: Coroutine[Any, Any, int], *, use_uvloop: bool) -> int:
    if use_uvloop:
        try:
            import uvloop
        except ImportError:
            pass
        else:
            return uvloop.run(main)
    return asyncio.run(main)


def run_cluster_cli(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m producer cluster [options]``; returns the exit status."""
    parser = add_cluster_arguments(
        argparse.ArgumentParser(prog="python -m producer cluster", description=__doc__)
    )
    args = parser.parse_args(argv)
    try:
        return _run(run_cluster(args), use_uvloop=args.uvloop)
    except (ValueError, InvalidOptionError) as exc:  # bad --topic, --delay-levels and the like
        parser.error(str(exc))
    except OSError as exc:
        print(f"error: cannot start the dev cluster: {_why(exc, args)}", file=sys.stderr)
        return EXIT_USAGE


def _why(exc: OSError, args: argparse.Namespace) -> str:
    if exc.errno != errno.EADDRINUSE:
        return str(exc)
    return (
        f"a port is already in use on {args.host} ({exc.strerror}): choose another with "
        f"--namesrv-port / --http-port, or 0 for any free port "
        f"(--namesrv-port is {args.namesrv_port})"
    )
