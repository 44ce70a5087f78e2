"""``python -m producer trace MSG_ID --namesrv ADDR``: a message's journey, read from the
message trace topic (what ``mqadmin queryMsgTraceById`` prints): each send attempt the
broker answered, where it was stored, and each listener call with its group, retry
count, outcome and time.

Exit status: 0 records found; 1 none; 2 bad arguments or the trace topic unknown.
"""

from __future__ import annotations

import argparse
import datetime as dt
from typing import TextIO

from producer.cli.common import EXIT_USAGE
from producer.consumer import PubRecord, SubAfterRecord, SubBeforeRecord, read_trace
from producer.errors import NoRouteError

__all__ = ["add_trace_arguments", "journey_lines", "run_trace"]

EXIT_NOT_FOUND = 1
OUTCOMES = {0: "SUCCESS", 1: "TIME_OUT", 2: "EXCEPTION", 3: "RETURNNULL", 4: "FAILED"}


def add_trace_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("msg_id", metavar="MSG_ID", help="the message's id (UNIQ_KEY)")
    parser.add_argument("--namesrv", required=True, metavar="ADDR", help="host:port[;host:port]")
    parser.add_argument(
        "--topic", default="RMQ_SYS_TRACE_TOPIC", help="the trace topic (default: %(default)s)"
    )
    return parser


def _time(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def journey_lines(records: list[PubRecord | SubBeforeRecord | SubAfterRecord]) -> list[str]:
    """One line per send and per listener call, oldest first."""
    afters = {r.request_id: r for r in records if isinstance(r, SubAfterRecord)}
    lines: list[str] = []
    for record in records:
        if isinstance(record, PubRecord):
            outcome = "stored" if record.success else "not stored OK"
            lines.append(
                f"{_time(record.timestamp)}  sent      group={record.group} topic={record.topic} "
                f"broker={record.store_host} {outcome} offset_id={record.offset_msg_id} "
                f"in {record.cost_ms} ms"
            )
        elif isinstance(record, SubBeforeRecord):
            after = afters.get(record.request_id)
            outcome = "unfinished" if after is None else OUTCOMES.get(after.context_code, "?")
            cost = "" if after is None else f" in {after.cost_ms} ms"
            lines.append(
                f"{_time(record.timestamp)}  consumed  group={record.group} "
                f"retry={record.retry_times} {outcome}{cost}"
            )
    return lines


async def run_trace(args: argparse.Namespace, out: TextIO) -> int:
    try:
        records = await read_trace(args.namesrv, args.msg_id, topic=args.topic)
    except NoRouteError as exc:
        print(f"error: {exc}", file=out)
        return EXIT_USAGE
    if not records:
        print(f"no trace records for {args.msg_id} in {args.topic}", file=out)
        return EXIT_NOT_FOUND
    print(f"{args.msg_id}: {len(records)} trace records", file=out)
    for line in journey_lines(records):
        print(line, file=out)
    return 0
