"""Command line: ``python -m producer <command>``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from producer import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m producer",
        description="Asyncio producer for Apache RocketMQ: send, demo and dev cluster tools.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return 2  # pragma: no cover - every registered subcommand returns earlier


if __name__ == "__main__":
    sys.exit(main())
