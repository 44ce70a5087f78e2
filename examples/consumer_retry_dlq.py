"""Consuming with retries and a dead-letter queue: ``python -m examples.consumer_retry_dlq``.

A push consumer whose listener fails some messages: a failed message is sent back to the
broker and re-delivered through ``%RETRY%<group>`` after a delay level; after
``max_reconsume_times`` failures it lands in ``%DLQ%<group>``, where ``DeadLetterQueue``
reads it (and can re-drive it once the bug is fixed). The dev cluster's delay levels are
shortened to 100 ms so this takes seconds, not the broker's default minutes.
"""

from __future__ import annotations

import anyio

from producer import Message, Producer
from producer.consumer import ConsumeStatus, DeadLetterQueue, PushConsumer, ReceivedMessage
from producer.testing import DevCluster

LEVELS = " ".join(["100ms"] * 18)  # the broker's messageDelayLevel, shortened


async def main() -> None:
    consumed: set[str] = set()
    deliveries: dict[str, int] = {}

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        for m in messages:
            deliveries[m.msg_id] = m.reconsume_times + 1
            if m.body.startswith(b"poison"):
                return ConsumeStatus.RECONSUME_LATER  # retried, then dead-lettered
            if m.body.startswith(b"flaky") and m.reconsume_times == 0:
                return ConsumeStatus.RECONSUME_LATER  # fails once, then succeeds
            consumed.add(m.msg_id)
        return ConsumeStatus.SUCCESS

    async with DevCluster(brokers=2, topics={"Orders": 4}, delay_levels=LEVELS) as cluster:
        async with Producer("orders", cluster.namesrv_addr) as producer:
            bodies = [b"ok 1", b"ok 2", b"flaky 3", b"poison 4"]
            ids = [(await producer.send(Message("Orders", body))).msg_id for body in bodies]
        consumer = PushConsumer(  # a new group: "first" reads what was sent before it
            "billing", cluster.namesrv_addr, listener=listener, max_reconsume_times=2,
            consume_from="first",
        )  # fmt: skip
        consumer.subscribe("Orders", "*")
        async with consumer:
            with anyio.fail_after(30):
                while len(consumed) < 3 or not cluster.messages("%DLQ%billing"):  # noqa: ASYNC110
                    await anyio.sleep(0.05)
        async with DeadLetterQueue("billing", cluster.namesrv_addr) as dlq:
            dead = await dlq.read()
    for msg_id, body in zip(ids, bodies, strict=True):
        print(f"{body.decode():9s} delivered {deliveries[msg_id]}x")
    print(f"dead letters: {[letter.message.body.decode() for letter in dead]}")
    print(f"OK: {len(consumed)} consumed, {len(dead)} dead-lettered")


if __name__ == "__main__":
    anyio.run(main)
