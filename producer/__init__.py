"""An asyncio (and trio) producer for Apache RocketMQ.

The public surface is re-exported here; modules whose names start with ``_`` are private.
"""

from producer._producer import Producer
from producer._send.future import SendFuture
from producer._transactions.producer import TransactionProducer
from producer._types.attempt_context import AttemptContext
from producer._types.credentials import Credentials
from producer._types.lifecycle_state import LifecycleState
from producer._types.message import Message, MessageQueue
from producer._types.retry_policy import RetryPolicy
from producer._types.send_result import SendResult
from producer._types.send_status import SendStatus
from producer._types.transaction_result import TransactionResult
from producer._types.transaction_state import TransactionState
from producer.errors import AttemptOutcome, AttemptRecord, Fate, ProducerError

__version__ = "0.1.0"
"""The package's version (``python -m producer --version`` says it too)."""

__all__ = [
    # the producer and its settings
    "Producer",
    "LifecycleState",
    "RetryPolicy",
    "AttemptContext",
    # transactions
    "TransactionProducer",
    "TransactionResult",
    "TransactionState",
    # messages and results
    "AttemptOutcome",
    "AttemptRecord",
    "Credentials",
    "Message",
    "MessageQueue",
    "SendFuture",
    "SendResult",
    "SendStatus",
    # errors (the whole tree lives in producer.errors)
    "Fate",
    "ProducerError",
    "__version__",
]
