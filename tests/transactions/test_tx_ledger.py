"""The transaction ledger's decisions (pure: no broker, ``now`` given): T5 of
docs/semantics.md, one rule per test."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from producer._transactions.ledger import CheckStep, HalfCopy, TransactionLedger
from tests.transactions.conftest import COMMIT, ROLLBACK, UNKNOWN

KEY = "K1"
ORIGINAL, COPY1, COPY2, COPY3 = (HalfCopy(100 * n, n) for n in (1, 2, 3, 4))


def test_a_running_transaction_is_unknown_and_learns_the_newest_copy() -> None:
    ledger = TransactionLedger()
    ledger.begin(KEY, ORIGINAL)
    assert ledger.on_check(KEY, COPY2) is CheckStep.ANSWER_UNKNOWN
    assert ledger.on_check(KEY, COPY1) is CheckStep.ANSWER_UNKNOWN  # late, older
    assert ledger.newest_copy(KEY) == COPY2


def test_after_a_rollback_every_newer_copy_is_rolled_back_and_older_ones_left() -> None:
    ledger = TransactionLedger()
    ledger.ended(KEY, COPY1, ROLLBACK, 0.0)
    assert ledger.on_check(KEY, COPY2) is CheckStep.ANSWER_ROLLBACK
    assert ledger.on_check(KEY, COPY1) is CheckStep.ANSWER_UNKNOWN  # stale: writes nothing


def test_after_a_commit_a_newer_copy_is_probed() -> None:
    ledger = TransactionLedger()
    ledger.ended(KEY, COPY1, COMMIT, 0.0)
    assert ledger.on_check(KEY, COPY2) is CheckStep.PROBE_COMMITTED


def test_a_stored_message_rolls_the_leftover_copy_back() -> None:
    ledger = TransactionLedger(settle_ms=1000)
    ledger.ended(KEY, COPY1, COMMIT, 0.0)
    assert ledger.after_probe(KEY, stored=True, now_ms=5000) is ROLLBACK


def test_a_message_not_stored_is_committed_only_once_the_end_had_time() -> None:
    ledger = TransactionLedger(settle_ms=1000)
    ledger.ended(KEY, COPY1, COMMIT, 0.0)
    assert ledger.after_probe(KEY, stored=False, now_ms=999) is UNKNOWN  # maybe in flight
    assert ledger.after_probe(KEY, stored=False, now_ms=999) is COMMIT  # a round later


def test_a_message_not_stored_after_settle_ms_is_committed_at_once() -> None:
    ledger = TransactionLedger(settle_ms=1000)
    ledger.ended(KEY, COPY1, COMMIT, 0.0)
    assert ledger.after_probe(KEY, stored=False, now_ms=1000) is COMMIT


def test_an_end_never_written_is_committed_on_the_first_newer_copy() -> None:
    ledger = TransactionLedger(settle_ms=1000)
    ledger.ended(KEY, COPY1, COMMIT, None)
    assert ledger.after_probe(KEY, stored=False, now_ms=0) is COMMIT


def test_a_failed_probe_answers_unknown() -> None:
    ledger = TransactionLedger(settle_ms=0)
    ledger.ended(KEY, COPY1, COMMIT, 0.0)
    assert ledger.after_probe(KEY, stored=None, now_ms=10_000) is UNKNOWN


def test_the_check_function_decides_what_is_not_known_and_its_answers_are_kept() -> None:
    ledger = TransactionLedger()
    assert ledger.on_check(KEY, COPY1) is CheckStep.ASK_CHECK_FUNCTION
    ledger.answered(KEY, COPY1, CheckStep.ASK_CHECK_FUNCTION, COMMIT, 0.0)
    assert ledger.on_check(KEY, COPY2) is CheckStep.PROBE_COMMITTED
    ledger.answered(KEY, COPY2, CheckStep.PROBE_COMMITTED, ROLLBACK, 1.0)  # a leftover
    assert ledger.on_check(KEY, COPY3) is CheckStep.PROBE_COMMITTED  # still committed


def test_an_unknown_end_leaves_the_check_function_to_decide() -> None:
    ledger = TransactionLedger()
    ledger.ended(KEY, COPY1, UNKNOWN, 0.0)
    assert ledger.on_check(KEY, COPY2) is CheckStep.ASK_CHECK_FUNCTION
    ledger.answered(KEY, COPY2, CheckStep.ASK_CHECK_FUNCTION, UNKNOWN, 1.0)
    assert ledger.on_check(KEY, COPY3) is CheckStep.ASK_CHECK_FUNCTION


def test_a_check_function_commit_of_a_stored_message_becomes_a_rollback() -> None:
    assert TransactionLedger.check_function_answer(COMMIT, stored=True) is ROLLBACK
    assert TransactionLedger.check_function_answer(COMMIT, stored=False) is COMMIT
    assert TransactionLedger.check_function_answer(COMMIT, stored=None) is COMMIT
    assert TransactionLedger.check_function_answer(ROLLBACK, stored=True) is ROLLBACK


def test_a_check_read_before_the_send_answer_keeps_its_copy() -> None:
    ledger = TransactionLedger()
    ledger.answered(KEY, COPY1, CheckStep.ASK_CHECK_FUNCTION, ROLLBACK, 0.0)
    ledger.begin(KEY, ORIGINAL)
    assert ledger.newest_copy(KEY) == COPY1


def test_the_oldest_ended_transactions_are_forgotten_first() -> None:
    ledger = TransactionLedger(capacity=2)
    for key in ("a", "b", "c"):
        ledger.ended(key, COPY1, COMMIT, 0.0)
    assert ledger.on_check("a", COPY2) is CheckStep.ASK_CHECK_FUNCTION
    assert ledger.on_check("c", COPY2) is CheckStep.PROBE_COMMITTED


@given(
    st.lists(
        st.tuples(st.integers(0, 50), st.booleans(), st.floats(0, 10_000)), min_size=1, max_size=30
    )
)
def test_no_probe_sequence_commits_a_stored_message(
    checks: list[tuple[int, bool, float]],
) -> None:
    """Whatever copies arrive and whatever the probe says, COMMIT is answered only when
    the probe found the message not stored."""
    ledger = TransactionLedger(settle_ms=1000)
    ledger.ended(KEY, HalfCopy(10, 1), COMMIT, 0.0)
    for offset, stored, now in checks:
        copy = HalfCopy(10 + offset, 1 + offset)
        if ledger.on_check(KEY, copy) is CheckStep.PROBE_COMMITTED:
            state = ledger.after_probe(KEY, stored, now)
            assert not (stored and state is COMMIT)
            ledger.answered(KEY, copy, CheckStep.PROBE_COMMITTED, state, now)
