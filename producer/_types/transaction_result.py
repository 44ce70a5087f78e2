"""How a transaction ended (what ``TransactionProducer.send_in_transaction`` returns)."""

from __future__ import annotations

import dataclasses

from producer._types.send_result import SendResult
from producer._types.transaction_state import TransactionState
from producer.errors import ProducerError

__all__ = ["TransactionResult"]


@dataclasses.dataclass(frozen=True, slots=True)
class TransactionResult:
    """How a transaction ended, as far as this producer knows.

    ``send_result`` is the half message's. ``state`` is what END_TRANSACTION reported
    (ROLLBACK when the half was not stored SEND_OK; UNKNOWN when ``execute`` raised,
    ``execute_error`` then holds it). ``end_written`` says whether END_TRANSACTION was
    handed to the socket; when it was not (``end_error`` says why), or the state is
    UNKNOWN, the broker checks the transaction back and the check function decides.
    """

    send_result: SendResult
    state: TransactionState
    end_written: bool
    execute_error: BaseException | None = None
    end_error: ProducerError | None = None

    @property
    def msg_id(self) -> str:
        """The half message's id (``UNIQ_KEY``)."""
        return self.send_result.msg_id

    @property
    def settled(self) -> bool:
        """The broker was told COMMIT or ROLLBACK (no check will follow, unless lost)."""
        return self.end_written and self.state is not TransactionState.UNKNOWN
