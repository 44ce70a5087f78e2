"""The consuming side of retry: a push consumer with RECONSUME_LATER, delay levels,
dead-letter queues and offsets that never pass a message in flight (docs/consuming.md).

It exports the consumers (``PushConsumer``, ``PullConsumer``, ``SimpleConsumer`` for
pop, ``PopConsumer``), the dead-letter tool (``DeadLetterQueue``), the value types a
listener sees or sets (``ReceivedMessage``, ``PoppedMessage``, ``ConsumeStatus``,
``ConsumeContext``, ``ConsumeRetryPolicy``, ``DeadLetter``, ``MessageQueue``, ``Reply``
and the trace records ``PubRecord`` / ``SubBeforeRecord`` / ``SubAfterRecord``; all
defined in ``producer._types``), and the helpers ``create_reply``, ``decode_records``,
``read_trace``, ``retry_topic`` and ``dlq_topic``. Its ``_`` modules are the I/O shell
over the pure core ``producer._consume``.

::

    async def handle(messages):
        ...
        return ConsumeStatus.SUCCESS          # or RECONSUME_LATER (or raise)

    consumer = PushConsumer("my-group", namesrv="127.0.0.1:9876", listener=handle)
    consumer.subscribe("Orders", "paid || refunded")
    async with consumer:
        ...
"""

from producer._remoting.reply import create_reply
from producer._remoting.retry_topics import dlq_topic, retry_topic
from producer._types.consumer.context import ConsumeContext
from producer._types.consumer.dead_letter import DeadLetter
from producer._types.consumer.popped import PoppedMessage
from producer._types.consumer.received import ReceivedMessage
from producer._types.consumer.retry_policy import ConsumeRetryPolicy
from producer._types.consumer.status import ConsumeStatus
from producer._types.message import MessageQueue
from producer._types.reply import Reply
from producer._types.trace_records import PubRecord, SubAfterRecord, SubBeforeRecord
from producer.consumer._dead_letters import DeadLetterQueue
from producer.consumer._pop_consumer import PopConsumer
from producer.consumer._pull_consumer import PullConsumer
from producer.consumer._pull_step import decode_records
from producer.consumer._push_consumer import PushConsumer
from producer.consumer._simple_consumer import SimpleConsumer
from producer.consumer._trace_reader import read_trace

__all__ = [
    "ConsumeContext",
    "ConsumeRetryPolicy",
    "ConsumeStatus",
    "DeadLetter",
    "DeadLetterQueue",
    "MessageQueue",
    "PopConsumer",
    "PoppedMessage",
    "PubRecord",
    "PullConsumer",
    "PushConsumer",
    "ReceivedMessage",
    "Reply",
    "SimpleConsumer",
    "SubAfterRecord",
    "SubBeforeRecord",
    "create_reply",
    "decode_records",
    "dlq_topic",
    "read_trace",
    "retry_topic",
]
