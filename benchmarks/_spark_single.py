"""The single-process baseline of ``spark_publish``: one async producer in this process
sending the same rows (same bodies, same concurrency per producer) as fast as it can.

``python -m benchmarks._spark_single NAMESRV TOPIC ROWS CONCURRENCY LOOP`` prints one JSON
line: rows, seconds, rows_per_s, cpu_s (this process), failed.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from benchmarks import _common as common
from producer import Message, Producer
from producer.errors import ProducerError


def body(i: int) -> bytes:
    """The body the Spark job builds for row ``i`` (same size, same bytes)."""
    return b"body-%d" % i + b"x" * 100


async def send_rows(namesrv: str, topic: str, rows: int, concurrency: int) -> dict[str, float]:
    failed = 0
    counter = iter(range(rows))

    async def worker(producer: Producer) -> None:
        nonlocal failed
        for i in counter:
            try:
                await producer.send(Message(topic, body(i)))
            except ProducerError:
                failed += 1

    async with Producer("bench-spark-single", namesrv) as producer:
        await producer.send(Message(topic, b"warm"))
        cpu0, began = common.cpu_seconds(), time.perf_counter()
        await asyncio.gather(*(worker(producer) for _ in range(concurrency)))
        seconds = time.perf_counter() - began
        cpu = (common.cpu_seconds() or 0.0) - (cpu0 or 0.0)
    return {
        "rows": rows,
        "seconds": seconds,
        "rows_per_s": rows / seconds,
        "cpu_s": cpu,
        "failed": failed,
    }


def main(argv: list[str]) -> int:
    namesrv, topic, rows, concurrency, loop = argv
    result = common.run(lambda: send_rows(namesrv, topic, int(rows), int(concurrency)), loop)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
