"""An asyncio (and trio) producer for Apache RocketMQ.

The public surface is re-exported here; modules whose names start with ``_`` are private.
"""

from producer._attempts import AttemptOutcome, AttemptRecord
from producer._message import Message, MessageQueue
from producer._result import SendResult, SendStatus
from producer.errors import ProducerError

__version__ = "0.1.0"

__all__ = [
    # messages and results
    "AttemptOutcome",
    "AttemptRecord",
    "Message",
    "MessageQueue",
    "SendResult",
    "SendStatus",
    # errors (the whole tree lives in producer.errors)
    "ProducerError",
    "__version__",
]
