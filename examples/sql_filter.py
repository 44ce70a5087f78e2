"""Consuming by message properties with a SQL92 filter: ``python -m examples.sql_filter``.

The broker evaluates ``a > 5 AND b = 'x'`` on each message's properties and delivers only
the matches (it needs ``enablePropertyFilter=true``: the dev cluster's
``property_filter=True``). An expression the broker would refuse fails at ``subscribe()``
with the broker's own reason, before anything is sent.
"""

from __future__ import annotations

import anyio

from producer import Message, Producer
from producer.consumer import ConsumeStatus, PushConsumer, ReceivedMessage
from producer.errors import SqlFilterError
from producer.testing import DevCluster

ORDERS = [("10", "x"), ("3", "x"), ("10", "y"), (None, "x"), ("6", "x"), ("abc", "x")]


async def main() -> None:
    got: list[str] = []

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        got.extend(m.body.decode() for m in messages)
        return ConsumeStatus.SUCCESS

    async with DevCluster(brokers=1, topics={"Orders": 1}, property_filter=True) as cluster:
        async with Producer("shop", cluster.namesrv_addr) as producer:
            for a, b in ORDERS:
                props = {"b": b} if a is None else {"a": a, "b": b}
                await producer.send(Message("Orders", f"a={a} b={b}".encode(), properties=props))
        consumer = PushConsumer(
            "big-x", cluster.namesrv_addr, listener=listener, consume_from="first"
        )
        try:
            consumer.subscribe("Orders", sql="a > AND b = 'x'")
        except SqlFilterError as exc:
            print("refused at subscribe():", exc.reason.splitlines()[0])
        consumer.subscribe("Orders", sql="a > 5 AND b = 'x'")
        async with consumer:
            with anyio.fail_after(30):
                while len(got) < 2:  # noqa: ASYNC110 - filled by the listener
                    await anyio.sleep(0.05)
    print("delivered:", sorted(got))
    assert sorted(got) == ["a=10 b=x", "a=6 b=x"], got
    print(f"OK: {len(got)} of {len(ORDERS)} messages matched the filter")


if __name__ == "__main__":
    anyio.run(main)
