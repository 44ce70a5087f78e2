"""The demo's bookkeeping of message ids, and the verdict that nothing was lost.

The ledger learns each send's ``msg_id`` (UNIQ_KEY) from a send hook, because a failed
send's error does not carry it; knowing the ids of failed sends lets the verdict tell a
message stored after a timeout (fate unknown, expected) from one nobody accounts for.
:func:`judge` is pure: ids in, verdict out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from producer import AttemptContext, Message, SendResult
from producer.errors import Fate, ProducerError

__all__ = ["MsgIdLedger", "LedgerVerdict", "judge"]


class MsgIdLedger:
    """Acknowledged ids, and the ids and fates of failed sends.

    Register it as a producer hook (``hooks=[ledger]``); it keys pending sends by the
    identity of their :class:`Message`, which the caller keeps alive until the outcome.
    """

    def __init__(self) -> None:
        self.acknowledged: set[str] = set()
        self.failed: dict[str, Fate] = {}
        self.failed_before_any_attempt = 0
        self._pending: dict[int, str] = {}

    def before_attempt(self, ctx: AttemptContext) -> None:
        self._pending[id(ctx.message)] = ctx.msg_id

    def on_success(self, message: Message, result: SendResult) -> None:
        self._pending.pop(id(message), None)
        self.acknowledged.add(result.msg_id)

    def on_failure(self, message: Message, error: ProducerError) -> None:
        msg_id = self._pending.pop(id(message), None)
        if msg_id is None:  # failed before any attempt (no route, closed): never sent
            self.failed_before_any_attempt += 1
        else:
            self.failed[msg_id] = error.fate

    def __repr__(self) -> str:
        return (
            f"MsgIdLedger(acknowledged={len(self.acknowledged)}, failed={len(self.failed)}, "
            f"pending={len(self._pending)})"
        )


@dataclass(frozen=True)
class LedgerVerdict:
    """What the brokers hold compared with what the producer reported.

    ``missing``: acknowledged but not stored (loss). ``stored_after_failure``: reported
    failed with unknown fate, yet stored (allowed). ``unexplained``: stored ids that are
    neither. ``duplicates``: stored copies beyond one per id, which only an attempt with
    unknown fate followed by a retry can cause.
    """

    acknowledged: int
    stored_unique: int
    stored_total: int
    missing: frozenset[str]
    stored_after_failure: int
    unexplained: frozenset[str]
    unknown_fate_attempts: int
    failed: Mapping[str, int] = field(default_factory=dict)

    @property
    def duplicates(self) -> int:
        return self.stored_total - self.stored_unique

    @property
    def failed_sends(self) -> int:
        return sum(self.failed.values())

    @property
    def is_consistent(self) -> bool:
        """No silent loss and every stored copy accounted for."""
        return (
            not self.missing
            and not self.unexplained
            and self.duplicates <= self.unknown_fate_attempts
        )

    @property
    def holds(self) -> bool:
        """Nothing lost: consistent, and every send was acknowledged."""
        return self.is_consistent and self.failed_sends == 0


def judge(
    ledger: MsgIdLedger,
    stored_ids: set[str],
    stored_total: int,
    *,
    failed: Mapping[str, int],
    unknown_fate_attempts: int,
) -> LedgerVerdict:
    """Compare the ledger with the brokers' stored ``UNIQ_KEY`` set and message count."""
    extra = stored_ids - ledger.acknowledged
    after_failure = {i for i in extra if ledger.failed.get(i) is Fate.UNKNOWN}
    return LedgerVerdict(
        acknowledged=len(ledger.acknowledged),
        stored_unique=len(stored_ids),
        stored_total=stored_total,
        missing=frozenset(ledger.acknowledged - stored_ids),
        stored_after_failure=len(after_failure),
        unexplained=frozenset(extra - after_failure),
        unknown_fate_attempts=unknown_fate_attempts,
        failed=dict(failed),
    )
