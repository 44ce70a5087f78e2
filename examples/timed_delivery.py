"""A timed message arriving when asked: ``python -m examples.timed_delivery [DELAY_MS]``.

Starts a dev cluster playing a 5.x broker, sends ten messages at once with one of them
timed for ``DELAY_MS`` (default 1500) later (``delay_ms``), and prints when each reaches
the listener. The timed one is sent alone (never batched) and arrives at its
``deliver_at_ms``; the same send to a 4.9.4-mode cluster raises
``TimedDeliveryUnsupportedError`` before anything is written. The last line is the
verdict (``OK: ...`` or ``FAILED: ...``, exit status 1); ``tests/test_examples.py`` runs it.
"""

from __future__ import annotations

import argparse
import sys
import time

import anyio

from producer import Message, Producer
from producer.consumer import ConsumeStatus, PushConsumer, ReceivedMessage
from producer.errors import TimedDeliveryUnsupportedError
from producer.testing import DevCluster


def now_ms() -> int:
    return time.time_ns() // 1_000_000


async def on_5x(delay_ms: int) -> list[str]:
    """Ten sends, one timed; what went wrong (nothing: an empty list)."""
    arrivals: dict[bytes, int] = {}  # body -> wall-clock ms it reached the listener
    timed: list[ReceivedMessage] = []
    everything = anyio.Event()
    start = now_ms()

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        for m in messages:
            arrivals[m.body] = now_ms()
            asked = "" if m.deliver_at_ms is None else f" (due +{m.deliver_at_ms - start} ms)"
            print(f"+{arrivals[m.body] - start:5d} ms  {m.body.decode()}{asked}")
            if m.deliver_at_ms is not None:
                timed.append(m)
        if len(arrivals) == 10:
            everything.set()
        return ConsumeStatus.SUCCESS

    async with DevCluster(brokers=2, topics={"Orders": 2}, broker_version="5.x") as cluster:
        consumer = PushConsumer("demo", cluster.namesrv_addr, listener=listener)
        consumer.subscribe("Orders", "*")
        async with consumer, Producer("demo", cluster.namesrv_addr) as producer:
            async with anyio.create_task_group() as tg:
                for i in range(10):
                    delay = delay_ms if i == 5 else None
                    tg.start_soon(producer.send, Message("Orders", b"order %d" % i, delay_ms=delay))
            with anyio.move_on_after(10 + delay_ms / 1000):
                await everything.wait()
    if len(arrivals) != 10 or [m.body for m in timed] != [b"order 5"]:
        return [f"{len(arrivals)} of 10 arrived, timed: {[m.body for m in timed]}"]
    (message,) = timed
    due = message.deliver_at_ms or 0
    problems = []
    if due - start < delay_ms:
        problems.append(f"due +{due - start} ms, asked +{delay_ms} ms")
    if arrivals[b"order 5"] < due:
        problems.append(f"arrived {due - arrivals[b'order 5']} ms before its time")
    return problems


async def on_4x(delay_ms: int) -> list[str]:
    old = DevCluster(brokers=1, topics={"Orders": 1})  # broker_version="4.9.4"
    async with old, Producer("demo", old.namesrv_addr) as producer:
        try:
            await producer.send(Message("Orders", b"x", delay_ms=delay_ms))
        except TimedDeliveryUnsupportedError as exc:
            print(f"4.9.4 broker: {exc}")
            return [] if old.message_count() == 0 else ["the 4.9.4 broker stored something"]
    return ["the 4.9.4 broker took a timed message"]


async def main(delay_ms: int) -> int:
    problems = await on_5x(delay_ms) + await on_4x(delay_ms)
    if problems:
        print("FAILED: " + "; ".join(problems))
        return 1
    print(f"OK: the timed message arrived at its time (+{delay_ms} ms); 4.9.4 refused it")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="a timed message arriving when asked")
    parser.add_argument("delay_ms", nargs="?", type=int, default=1500)
    sys.exit(anyio.run(main, parser.parse_args().delay_ms))
