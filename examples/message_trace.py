"""Message trace: a traced producer and consumer, and the message's journey read back.

``python -m examples.message_trace``

``trace=True`` on a producer and a push consumer writes the Java client's trace records
(``Pub`` per answered send, ``SubBefore``/``SubAfter`` per consumed message) to
``RMQ_SYS_TRACE_TOPIC``, in batches, off the send's path. The consumer fails the message
once (RECONSUME_LATER), so its journey shows a send, a failed consume and the retry.
``producer.consumer.read_trace`` (and ``python -m producer trace MSG_ID --namesrv ADDR``)
reads it back, as ``mqadmin queryMsgTraceById`` does. Ends with ``OK`` when the journey
holds the send and both consume attempts.
"""

from __future__ import annotations

import anyio

from producer import Message, Producer
from producer.cli.trace import journey_lines
from producer.consumer import ConsumeStatus, PushConsumer, ReceivedMessage, read_trace
from producer.testing import DevCluster


async def main() -> None:
    # Delay levels of 1 s (a real broker's first retry waits 10 s), so the retry is quick.
    async with DevCluster(brokers=2, topics={"Orders": 4}, delay_levels="1s " * 18) as cluster:
        namesrv = cluster.namesrv_addr
        attempts: list[int] = []
        done = anyio.Event()

        def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
            attempts.append(messages[0].reconsume_times)
            if len(attempts) == 1:
                return ConsumeStatus.RECONSUME_LATER  # fails once: a retry follows
            done.set()
            return ConsumeStatus.SUCCESS

        consumer = PushConsumer(
            "OrderConsumers", namesrv, listener=listener, consume_from="first", trace=True
        )
        consumer.subscribe("Orders")
        async with Producer("OrderService", namesrv, trace=True) as producer, consumer:
            sent = await producer.send(Message("Orders", b"order 42", keys="order-42"))
            with anyio.fail_after(60):
                await done.wait()
        # Both closed: their last trace records were sent on the way out.
        records = await read_trace(namesrv, sent.msg_id)
        lines = journey_lines(records)
        print(f"journey of {sent.msg_id}:")
        for line in lines:
            print("  " + line)
        kinds = [line.split()[1] for line in lines]
        assert kinds == ["sent", "consumed", "consumed"], kinds
        assert "FAILED" in lines[1] and "SUCCESS" in lines[2], lines
        print("OK: one send and two consume attempts (a failure, then the retry) traced")


if __name__ == "__main__":
    anyio.run(main)
