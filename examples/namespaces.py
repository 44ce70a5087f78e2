"""Namespaces: ``python -m examples.namespaces``.

Two teams share one cluster. Each client given ``namespace="teamA"`` puts every topic and
group on the wire as ``teamA%name`` (and its retry topic as ``%RETRY%teamA%group``), as a
Java client with ``setNamespace("teamA")`` does, so a Python and a Java member of one
namespaced group work together. The code, results and received messages use plain names.
"""

from __future__ import annotations

import anyio

from producer import Message, Producer
from producer.consumer import ConsumeStatus, PushConsumer, ReceivedMessage
from producer.testing import DevCluster


async def main() -> None:
    got: list[str] = []

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        got.extend(f"{m.topic}: {m.body.decode()}" for m in messages)
        return ConsumeStatus.SUCCESS

    async with DevCluster(brokers=1, topics={"teamA%Orders": 2}) as cluster:
        async with Producer("shop", cluster.namesrv_addr, namespace="teamA") as producer:
            result = await producer.send(Message("Orders", b"order 1"))
        print(f"sent to {result.queue.topic} (on the wire: teamA%Orders), group {producer.group}")
        consumer = PushConsumer(
            "billing",
            cluster.namesrv_addr,
            namespace="teamA",
            listener=listener,
            consume_from="first",
        )
        consumer.subscribe("Orders")
        async with consumer:
            with anyio.fail_after(30):
                while not got:  # noqa: ASYNC110 - filled by the listener
                    await anyio.sleep(0.05)
        stored = cluster.messages("teamA%Orders")
    print("received:", got)
    assert result.queue.topic == "Orders" and got == ["Orders: order 1"], (result, got)
    assert stored[0].properties["INSTANCE_ID"] == "teamA"
    print(f"OK: {consumer.group} consumed {len(got)} message from teamA%Orders")


if __name__ == "__main__":
    anyio.run(main)
