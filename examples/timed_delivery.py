"""A timed message arriving when asked: ``python -m examples.timed_delivery``.

Starts a dev cluster playing a 5.x broker, sends ten messages at once with one of them
timed for 1.5 s later (``delay_ms``), and prints when each reaches the listener. The timed
one is sent alone (never batched) and arrives at its ``deliver_at_ms``; the same send to
a 4.9.4-mode cluster raises ``TimedDeliveryUnsupportedError`` before anything is written.
"""

from __future__ import annotations

import time

import anyio

from producer import Message, Producer
from producer.consumer import ConsumeStatus, PushConsumer, ReceivedMessage
from producer.errors import TimedDeliveryUnsupportedError
from producer.testing import DevCluster

DELAY_MS = 1500


def now_ms() -> int:
    return time.time_ns() // 1_000_000


async def main() -> None:
    arrived = anyio.Event()
    start = now_ms()

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        for m in messages:
            late = "" if m.deliver_at_ms is None else f" (asked for +{m.deliver_at_ms - start} ms)"
            print(f"+{now_ms() - start:5d} ms  {m.body.decode()}{late}")
            if m.deliver_at_ms is not None:
                arrived.set()
        return ConsumeStatus.SUCCESS

    async with DevCluster(brokers=2, topics={"Orders": 2}, broker_version="5.x") as cluster:
        consumer = PushConsumer("demo", cluster.namesrv_addr, listener=listener)
        consumer.subscribe("Orders", "*")
        async with consumer, Producer("demo", cluster.namesrv_addr) as producer:
            async with anyio.create_task_group() as tg:
                for i in range(10):
                    timed = {"delay_ms": DELAY_MS} if i == 5 else {}
                    tg.start_soon(producer.send, Message("Orders", b"order %d" % i, **timed))
            with anyio.fail_after(10):
                await arrived.wait()
    old = DevCluster(brokers=1, topics={"Orders": 1})  # broker_version="4.9.4"
    async with old, Producer("demo", old.namesrv_addr) as producer:
        try:
            await producer.send(Message("Orders", b"x", delay_ms=DELAY_MS))
        except TimedDeliveryUnsupportedError as exc:
            print(f"4.9.4 broker: {exc}")
        else:
            raise SystemExit("a 4.9.4 broker took a timed message: it would deliver it at once")
    print("OK: the timed message arrived when asked; the 4.9.4 broker was never sent one")


if __name__ == "__main__":
    anyio.run(main)
