"""Request-reply (RPC over the broker): ``python -m examples.request_reply``.

A producer sends a request and waits for its reply; a push consumer's listener answers
it with ``create_reply`` and ``Producer.send_reply``; the broker pushes the reply to the
requester. Java's ``DefaultMQProducer.request`` and ``MessageUtil.createReplyMessage``
speak the same frames, so either side may be Java.
"""

from __future__ import annotations

import anyio

from producer import Message, Producer
from producer.consumer import ConsumeStatus, PushConsumer, ReceivedMessage, create_reply
from producer.errors import ReplyTimeout
from producer.testing import DevCluster


async def main() -> None:
    async with (
        DevCluster(brokers=2, topics={"Prices": 1, "Nobody": 1}) as cluster,
        Producer("price-service", cluster.namesrv_addr) as replier,
    ):

        async def answer(messages: list[ReceivedMessage]) -> ConsumeStatus:
            for request in messages:
                price = b"42.00 EUR" if request.body == b"price of apples?" else b"unknown"
                await replier.send_reply(create_reply(request, price))
            return ConsumeStatus.SUCCESS

        consumer = PushConsumer(
            "price-service", cluster.namesrv_addr, listener=answer, consume_from="first"
        )
        consumer.subscribe("Prices")
        async with consumer, Producer("shop", cluster.namesrv_addr) as shop:
            reply = await shop.request(Message("Prices", b"price of apples?"), timeout_ms=10_000)
            print(f"reply on {reply.topic}: {reply.body.decode()}")
            try:
                await shop.request(Message("Nobody", b"hello?"), timeout_ms=500)
            except ReplyTimeout as exc:
                print(f"no reply: {type(exc).__name__}")
    assert reply.body == b"42.00 EUR", reply.body
    print("OK: the request got its reply; the unanswered one timed out")


if __name__ == "__main__":
    anyio.run(main)
