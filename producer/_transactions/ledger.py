"""What this producer knows of each transaction it took part in, and how it answers a
check about one (pure: no I/O; ``now`` is passed in).

Theory of operation
===================

A broker keeps a half message until an op record names it. Each check round
(``TransactionalMessageServiceImpl.check``, 4.9.4 and 5.x) takes every half older than
``transactionTimeOut`` with no op record, stores it **again** at a new offset
(``putBackHalfMsgQueue``, ``TRANSACTION_CHECK_TIMES`` + 1), moves its own position past
the old one, and asks a producer of the group about the *copy*. An END_TRANSACTION names
one copy by its offsets; on COMMIT the broker stores the message in its real topic from
that copy and writes an op record for it, and nothing else: a copy made before the END
was applied survives, is checked in a later round, and a COMMIT answered for it stores
the message a second time (the broker never de-duplicates commits). A 5.x broker also
writes op records in batches (``transactionOpBatchInterval``, 3 s), so even a copy
checked *after* the END was applied can be a leftover. Rule T5 of docs/semantics.md.

So an answer must know whether the message is stored already. This ledger holds, per
UNIQ_KEY, what this producer did, and decides:

``RUNNING``  the half is stored and ``execute`` runs, or a two-step half is open. A check
             is answered UNKNOWN (the local transaction has not decided) and the copy it
             names is remembered: the END will name the newest copy known, the one the
             broker's next round would check.
``ENDED``    an END was sent (or could not be written) with a state. A check about a
             newer copy:

             * ended ROLLBACK: ROLLBACK the copy (nothing was or will be stored);
             * ended COMMIT: **probe** the broker (is a message with this UNIQ_KEY in the
               real topic?). Stored: ROLLBACK the copy, a leftover. Not stored: the END
               was lost - COMMIT the copy, but only once the END had time to be applied
               (it was never written; or ``settle_ms`` passed since it was; or a newer
               copy was already checked since it was, i.e. a whole check round went by).
               Until then, and when the probe fails, UNKNOWN: the broker asks again;
             * ended UNKNOWN: as if not known.

             A check about the copy ended, or an older one, is stale: UNKNOWN (it writes
             nothing; the broker's round has moved past that copy).

Not known here (another member's transaction, or one forgotten after ``capacity`` newer
ones ended): the check function decides, and a COMMIT from it is probed first: a message
already stored makes the answer ROLLBACK. Every END sent from a check is recorded too, so
the leftovers of a transaction this producer committed from a check are rolled back.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from dataclasses import dataclass

from producer._types.transaction_state import TransactionState

__all__ = ["CheckStep", "HalfCopy", "TransactionLedger"]

#: How long an END written to a live connection is given to be applied before a check
#: about a newer copy, with the message not found, is taken as proof it was lost.
DEFAULT_SETTLE_MS = 3000.0
#: Ended transactions remembered (the oldest are forgotten first).
DEFAULT_CAPACITY = 100_000


@dataclass(frozen=True, slots=True, order=True)
class HalfCopy:
    """One stored copy of a half message: what an END_TRANSACTION names. Copies of one
    transaction are stored one after the other, so a newer copy has a larger
    ``commit_log_offset``."""

    commit_log_offset: int
    queue_offset: int


class CheckStep(enum.Enum):
    """What to do about a check, before any I/O."""

    ANSWER_UNKNOWN = "answer UNKNOWN"
    ANSWER_ROLLBACK = "answer ROLLBACK"
    ASK_CHECK_FUNCTION = "ask the check function"
    PROBE_COMMITTED = "probe: was the committed message stored?"


class _Phase(enum.Enum):
    RUNNING = "running"
    ENDED = "ended"


@dataclass(slots=True)
class _Entry:
    phase: _Phase
    newest: HalfCopy | None  # the newest copy known (the original half at first)
    state: TransactionState = TransactionState.UNKNOWN
    ended_at_ms: float | None = None  # when the END was written; None: not written
    newer_checks: int = 0  # checks about copies newer than the ended one, since the END


class TransactionLedger:
    """Per UNIQ_KEY: running or ended, the newest copy, the state sent (see the module's
    theory of operation). ``settle_ms`` and ``capacity`` as above."""

    def __init__(
        self, *, settle_ms: float = DEFAULT_SETTLE_MS, capacity: int = DEFAULT_CAPACITY
    ) -> None:
        self.settle_ms = settle_ms
        self.capacity = capacity
        self._running: dict[str, _Entry] = {}
        self._ended: OrderedDict[str, _Entry] = OrderedDict()

    def __repr__(self) -> str:
        return f"TransactionLedger(running={len(self._running)}, ended={len(self._ended)})"

    # -- the transaction's own steps -----------------------------------------------------

    def begin(self, key: str, half: HalfCopy) -> None:
        """The half ``half`` was stored; the local transaction starts. (A check read
        before the send's answer may have revealed a newer copy already: it is kept.)"""
        known = self._ended.pop(key, None)
        newest = half if known is None or known.newest is None else max(half, known.newest)
        self._running[key] = _Entry(_Phase.RUNNING, newest)

    def is_running(self, key: str) -> bool:
        return key in self._running

    def newest_copy(self, key: str) -> HalfCopy | None:
        """The copy an END for ``key`` must name: the newest the checks revealed."""
        entry = self._running.get(key) or self._ended.get(key)
        return None if entry is None else entry.newest

    def ended(
        self, key: str, copy: HalfCopy, state: TransactionState, written_at_ms: float | None
    ) -> None:
        """An END with ``state`` naming ``copy`` was written at ``written_at_ms`` (``None``:
        it could not be written)."""
        self._running.pop(key, None)
        self._ended.pop(key, None)
        self._ended[key] = _Entry(_Phase.ENDED, copy, state, written_at_ms)
        while len(self._ended) > self.capacity:
            self._ended.popitem(last=False)

    # -- checks --------------------------------------------------------------------------

    def on_check(self, key: str, copy: HalfCopy) -> CheckStep:
        """The first step for a check about ``copy`` of transaction ``key``."""
        running = self._running.get(key)
        if running is not None:
            if running.newest is None or copy > running.newest:
                running.newest = copy
            return CheckStep.ANSWER_UNKNOWN
        ended = self._ended.get(key)
        if ended is None or ended.state is TransactionState.UNKNOWN:
            return CheckStep.ASK_CHECK_FUNCTION
        if ended.newest is not None and copy <= ended.newest:
            return CheckStep.ANSWER_UNKNOWN  # stale: the round is past that copy
        if ended.state is TransactionState.ROLLBACK:
            return CheckStep.ANSWER_ROLLBACK
        return CheckStep.PROBE_COMMITTED

    def after_probe(self, key: str, stored: bool | None, now_ms: float) -> TransactionState:
        """The answer to a check that took :attr:`CheckStep.PROBE_COMMITTED`: ``stored``
        is the probe's finding (``None``: the probe failed)."""
        entry = self._ended[key]
        settled = self._had_time_to_apply(entry, now_ms)
        entry.newer_checks += 1
        if stored is None:
            return TransactionState.UNKNOWN
        if stored:
            return TransactionState.ROLLBACK
        return TransactionState.COMMIT if settled else TransactionState.UNKNOWN

    def _had_time_to_apply(self, entry: _Entry, now_ms: float) -> bool:
        if entry.ended_at_ms is None or entry.newer_checks > 0:
            return True
        return now_ms - entry.ended_at_ms >= self.settle_ms

    def answered(
        self,
        key: str,
        copy: HalfCopy,
        step: CheckStep,
        state: TransactionState,
        written_at_ms: float | None,
    ) -> None:
        """A check about ``copy`` was answered ``state`` after ``step``: a state the check
        function gave, and a COMMIT of a copy whose END was lost, are ENDs of this
        producer from now on (a leftover's ROLLBACK changes nothing: the transaction
        stays committed)."""
        decided = state is not TransactionState.UNKNOWN
        if (step is CheckStep.ASK_CHECK_FUNCTION and decided) or (
            step is CheckStep.PROBE_COMMITTED and state is TransactionState.COMMIT
        ):
            self.ended(key, copy, state, written_at_ms)

    @staticmethod
    def check_function_answer(state: TransactionState, stored: bool | None) -> TransactionState:
        """The check function said ``state``; a COMMIT of a message already stored
        (``stored``) would store it twice, so that copy is rolled back instead. A failed
        probe (``None``) leaves the check function's word."""
        if state is TransactionState.COMMIT and stored:
            return TransactionState.ROLLBACK
        return state
