"""The transactions demo (``python -m examples.transactions``): an order row in SQLite and
its event, with the process killed at random points; its verdict must hold with the
check function that reads the database, and must catch one that lies."""

from __future__ import annotations

from collections import Counter

import anyio
import pytest

from examples.transactions import (
    COMMIT,
    ROLLBACK,
    Check,
    Fault,
    Orders,
    Report,
    main,
    plan_orders,
    run_demo,
)
from producer import TransactionState
from producer.consumer import ReceivedMessage

ORDERS, SEED = 12, 10  # every fault of Fault occurs in this plan


def test_the_plan_has_every_fault() -> None:
    assert {fault for _, fault in plan_orders(ORDERS, SEED)} == set(Fault)


def test_the_demo_ends_with_a_true_verdict_and_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["--orders", str(ORDERS), "--seed", str(SEED)])
    lines = capsys.readouterr().out.splitlines()
    assert status == 0, lines
    assert lines[-2].startswith("VERDICT: OK") and lines[-1] == "OK", lines
    assert all(len(line) < 100 for line in lines)


def always_commit(orders: Orders, message: ReceivedMessage) -> TransactionState:
    return COMMIT


def inverted(orders: Orders, message: ReceivedMessage) -> TransactionState:
    return ROLLBACK if orders.exists(message.keys[0]) else COMMIT


@pytest.mark.parametrize("check", [always_commit, inverted])
def test_a_lying_check_function_fails_the_verdict(check: Check) -> None:
    ok, report = anyio.run(lambda: run_demo(ORDERS, SEED, check=check), backend="asyncio")
    assert not ok
    assert report.lines[-1].startswith("VERDICT: FAILED")
    assert report.checks > 0  # the lie was asked, and consumers saw what it said


@pytest.mark.parametrize(
    ("events", "ok"),
    [
        ({"o-1": 1}, True),
        ({"o-1": 2}, False),  # a committed row's event twice
        ({}, False),  # a committed row's event never
        ({"o-1": 1, "o-2": 1}, False),  # an order without a row consumed
        ({"o-1": 1, "o-9": 1}, False),  # an event of no order at all
    ],
)
def test_the_verdict_counts_exactly_one_event_per_committed_row(
    events: dict[str, int], ok: bool
) -> None:
    report = Report(rows={"o-1"}, events=Counter(events))
    assert report.verdict(["o-1", "o-2"])[0] is ok
