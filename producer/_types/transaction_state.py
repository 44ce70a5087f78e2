"""A local transaction's outcome, as END_TRANSACTION carries it."""

from __future__ import annotations

import enum


class TransactionState(enum.IntEnum):
    """A local transaction's outcome; the value is END_TRANSACTION's ``commitOrRollback``
    (``MessageSysFlag.TRANSACTION_COMMIT_TYPE`` 8, ``ROLLBACK_TYPE`` 12, ``NOT_TYPE`` 0)."""

    COMMIT = 8
    ROLLBACK = 12
    UNKNOWN = 0

    def __str__(self) -> str:
        return self.name  # printed as COMMIT, not 8 (IntEnum prints its value)
