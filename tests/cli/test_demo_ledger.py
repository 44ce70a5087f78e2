"""The demo's msg id ledger and its verdict (pure: ids in, verdict out)."""

from __future__ import annotations

from producer import Message, MessageQueue, SendResult, SendStatus
from producer._types.attempt_context import AttemptContext
from producer.cli.demo_ledger import LedgerVerdict, MsgIdLedger, judge
from producer.errors import BrokerError, Fate, NoRouteError, RequestTimeout


def result(msg_id: str) -> SendResult:
    queue = MessageQueue("T", "broker-a", 0)
    return SendResult(SendStatus.SEND_OK, msg_id, "off", queue, 0, None, False, None, ())


def attempted(ledger: MsgIdLedger, message: Message, msg_id: str) -> None:
    queue = MessageQueue("T", "broker-a", 0)
    ledger.before_attempt(AttemptContext("g", message, queue, "127.0.0.1:1", 1, msg_id))


def ledger_with(acked: list[str], failed: dict[str, Fate]) -> MsgIdLedger:
    ledger = MsgIdLedger()
    for msg_id in acked:
        message = Message("T", b"x")
        attempted(ledger, message, msg_id)
        ledger.on_success(message, result(msg_id))
    for msg_id, fate in failed.items():
        message = Message("T", b"x")
        attempted(ledger, message, msg_id)
        error = RequestTimeout("t") if fate is Fate.UNKNOWN else BrokerError(13)
        ledger.on_failure(message, error)
    return ledger


def test_ledger_learns_the_ids_of_failed_sends_from_the_hook() -> None:
    ledger = ledger_with(["A", "B"], {"C": Fate.UNKNOWN, "D": Fate.NOT_STORED})
    assert ledger.acknowledged == {"A", "B"}
    assert ledger.failed == {"C": Fate.UNKNOWN, "D": Fate.NOT_STORED}
    ledger.on_failure(Message("T", b"x"), NoRouteError("T", ["ns"]))
    assert ledger.failed_before_any_attempt == 1
    assert "pending=0" in repr(ledger)


def test_every_acknowledged_id_stored_holds() -> None:
    verdict = judge(ledger_with(["A", "B"], {}), {"A", "B"}, 2, failed={}, unknown_fate_attempts=0)
    assert verdict.holds
    assert (verdict.acknowledged, verdict.stored_unique, verdict.duplicates) == (2, 2, 0)


def test_an_acknowledged_id_missing_is_loss() -> None:
    verdict = judge(ledger_with(["A", "B"], {}), {"A"}, 1, failed={}, unknown_fate_attempts=0)
    assert verdict.missing == {"B"}
    assert not verdict.is_consistent and not verdict.holds


def test_a_failed_send_of_unknown_fate_may_be_stored() -> None:
    ledger = ledger_with(["A"], {"C": Fate.UNKNOWN})
    verdict = judge(ledger, {"A", "C"}, 2, failed={"RequestTimeout": 1}, unknown_fate_attempts=1)
    assert verdict.stored_after_failure == 1
    assert not verdict.unexplained
    assert verdict.is_consistent
    assert not verdict.holds  # a send failed: not everything got through


def test_a_stored_id_reported_not_stored_is_unexplained() -> None:
    ledger = ledger_with(["A"], {"D": Fate.NOT_STORED})
    verdict = judge(ledger, {"A", "D", "Z"}, 3, failed={"BrokerError": 1}, unknown_fate_attempts=0)
    assert verdict.unexplained == {"D", "Z"}
    assert not verdict.is_consistent


def test_duplicates_need_as_many_attempts_of_unknown_fate() -> None:
    ledger = ledger_with(["A", "B"], {})
    explained = judge(ledger, {"A", "B"}, 4, failed={}, unknown_fate_attempts=2)
    assert explained.duplicates == 2 and explained.holds
    unexplained = judge(ledger, {"A", "B"}, 4, failed={}, unknown_fate_attempts=1)
    assert not unexplained.is_consistent


def test_verdict_counts_failed_sends() -> None:
    verdict = LedgerVerdict(
        acknowledged=0,
        stored_unique=0,
        stored_total=0,
        missing=frozenset(),
        stored_after_failure=0,
        unexplained=frozenset(),
        unknown_fate_attempts=0,
        failed={"SendTimeout": 2, "ConnectError": 1},
    )
    assert verdict.failed_sends == 3
