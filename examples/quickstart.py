"""The first example to run: ``python -m examples.quickstart``.

An embedded dev cluster (3 brokers, on loopback), one producer, and each way to send: an
awaited send, a send with callbacks, a oneway send, a batch, and a keyed (ordered) send.
Point ``Producer`` at your own name server ("host:9876") to do the same against RocketMQ.
"""

from __future__ import annotations

import anyio

from producer import Message, Producer, SendResult
from producer.errors import ProducerError
from producer.testing import DevCluster


async def main() -> None:
    async with DevCluster(brokers=3, topics={"Orders": 4}) as cluster:
        async with Producer("orders-service", namesrv=cluster.namesrv_addr) as producer:
            result = await producer.send(Message("Orders", b'{"id": 1}', tags="paid", keys=["o-1"]))
            print(f"sent {result.msg_id} to {result.queue} ({result.status.name})")

            def sent(result: SendResult) -> None:
                print(f"callback: {result.msg_id} stored at offset {result.queue_offset}")

            def failed(error: ProducerError) -> None:
                print(f"callback: failed: {error}")

            future = producer.send_async(
                Message("Orders", b"..."), on_success=sent, on_exception=failed
            )
            await future  # optional: the callback has already run by the time this returns
            await producer.send_oneway(Message("Orders", b"fire and forget"))
            batch = await producer.send_batch([Message("Orders", b"1"), Message("Orders", b"2")])
            print(f"batch: {len(batch.msg_ids)} messages, one request")
            keyed = await producer.send(Message("Orders", b"step 2"), order_key="order-42")
            print(f"order-42 always goes to {keyed.queue}")
        print(f"OK: the cluster stored {cluster.message_count('Orders')} messages")


if __name__ == "__main__":
    anyio.run(main)
