"""``python -m producer dlq list|show|redrive --group G --namesrv ADDR``: a group's
dead-letter queue (``%DLQ%<G>``), read without changing it, and chosen messages
published again to their original topic with a fresh retry budget.

Exit status: 0 done; 1 a re-drive send failed; 2 bad arguments or an id not in the queue.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import TextIO

from producer import Producer
from producer.cli.common import EXIT_USAGE, MAX_LINE, positive_int, wrapped
from producer.consumer import DeadLetter, DeadLetterQueue, ReceivedMessage
from producer.errors import LocalProtocolError, ProducerError

__all__ = ["add_dlq_arguments", "run_dlq"]

EXIT_FAILED = 1


def add_dlq_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, text in (
        ("list", "one line per dead letter"),
        ("show", "every detail of the given messages"),
        ("redrive", "publish the given messages again to their original topic"),
    ):
        sub = actions.add_parser(name, help=text, description=text)
        sub.add_argument("--group", required=True, metavar="G", help="the consumer group")
        sub.add_argument("--namesrv", required=True, metavar="ADDR", help="host:port[;host:port]")
        if name == "list":
            sub.add_argument("--limit", type=positive_int, default=None, metavar="N")
        elif name == "show":
            sub.add_argument("msg_ids", nargs="+", metavar="MSG_ID", help="msg ids (UNIQ_KEY)")
        else:
            sub.add_argument("msg_ids", nargs="*", metavar="MSG_ID", help="msg ids (UNIQ_KEY)")
        if name == "redrive":
            sub.add_argument(
                "--all", action="store_true", help="every dead letter not re-driven yet"
            )
            sub.add_argument(
                "--again", action="store_true", help="also those re-driven before (once more)"
            )
            sub.add_argument("--producer-group", default="dlq-redrive", metavar="PG")
    return parser


async def run_dlq(args: argparse.Namespace, out: TextIO) -> int:
    try:
        async with DeadLetterQueue(args.group, args.namesrv) as dlq:
            if args.action == "list":
                return _list(await dlq.read(args.limit), dlq.topic, out)
            letters = await _chosen(dlq, args)
            if args.action == "show":
                for letter in letters:
                    _show(letter, out)
                return 0
            return await _redrive(dlq, letters, args, out)
    except LocalProtocolError as exc:
        print(wrapped(f"error: {exc}"), file=out)
        return EXIT_USAGE


async def _chosen(dlq: DeadLetterQueue, args: argparse.Namespace) -> list[DeadLetter]:
    if getattr(args, "all", False):
        if args.msg_ids:
            raise LocalProtocolError("give message ids or --all, not both")
        return await dlq.read()
    if not args.msg_ids:
        raise LocalProtocolError(
            f"name the messages (MSG_ID ...){' or --all' * (args.action == 'redrive')}"
        )
    return await dlq.find(args.msg_ids)


def _list(letters: list[DeadLetter], topic: str, out: TextIO) -> int:
    redriven = sum(letter.redriven for letter in letters)
    legend = f" ({redriven} re-driven, marked *)" if redriven else ""
    print(f"{len(letters)} message(s) in {topic}{legend}", file=out)
    for letter in letters:
        m = letter.message
        head = (
            f"{'* ' if letter.redriven else ''}{m.msg_id}  topic={letter.original_topic or '?'}"
            f"  tries={m.reconsume_times}  stored={_when(m.store_timestamp, 'seconds')}  "
        )
        print(head + _body(m, max(MAX_LINE - len(head), 10)), file=out)
    return 0


def _show(letter: DeadLetter, out: TextIO) -> None:
    m = letter.message
    print(f"msg_id: {m.msg_id}", file=out)
    print(f"original topic: {letter.original_topic or '?'}", file=out)
    print(f"dead-letter queue: {m.queue} offset {m.queue_offset}", file=out)
    print(f"failed deliveries: {m.reconsume_times}", file=out)
    if letter.redriven_at_ms is not None:
        print(f"re-driven: {_when(letter.redriven_at_ms)}", file=out)
    print(f"born: {_when(m.born_timestamp)} at {m.born_host}", file=out)
    print(f"stored: {_when(m.store_timestamp)} at {m.store_host}", file=out)
    for name, value in sorted(m.properties.items()):
        print(wrapped(f"  {name} = {value}"), file=out)
    print(wrapped(f"body ({len(m.body)} bytes): {_body(m, sys.maxsize)}"), file=out)
    print(file=out)


async def _redrive(
    dlq: DeadLetterQueue, letters: list[DeadLetter], args: argparse.Namespace, out: TextIO
) -> int:
    again = args.again
    if args.all and not again:  # --all means those not re-driven yet
        skipped = sum(letter.redriven for letter in letters)
        letters = [letter for letter in letters if not letter.redriven]
        if skipped:
            print(f"skipped {skipped} re-driven before (--again to include them)", file=out)
    dlq.redrive_copies(letters, again=again)  # every one checked before the first is sent
    failed = 0
    async with Producer(args.producer_group, args.namesrv) as producer:
        for letter in letters:
            try:
                (result,) = await dlq.redrive([letter], producer, again=again)
            except ProducerError as exc:
                failed += 1
                print(f"{letter.msg_id}  FAILED {type(exc).__name__}: {exc}", file=out)
                continue
            print(f"{letter.msg_id}  -> {result.queue} offset={result.queue_offset}", file=out)
    print(f"re-driven {len(letters) - failed} of {len(letters)}", file=out)
    return EXIT_FAILED if failed else 0


def _when(ms: int, timespec: str = "milliseconds") -> str:
    moment = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
    return moment.isoformat(timespec=timespec).replace("+00:00", "Z")


def _body(m: ReceivedMessage, width: int) -> str:
    if m.undecodable is not None:
        return f"<undecodable: {m.undecodable.cause}>"
    return _preview(m.body, width)


def _preview(body: bytes, width: int) -> str:
    """The body as a quoted string of at most ``width`` characters (``...`` when cut)."""
    text = repr(body.decode("utf-8", errors="replace"))
    return text if len(text) <= width else text[: max(width - 3, 0)] + "..."
