"""The pure send step (producer._send.plan): each retry rule on a fake clock, no I/O."""

from __future__ import annotations

import random

import pytest

from producer import MessageQueue, SendStatus
from producer._remoting.send_header import SendResponseHeader
from producer._send.plan import (
    Backoff,
    Dispatch,
    Finish,
    Retry,
    SendMode,
    SendPlan,
    max_attempts,
)
from producer._types.retry_policy import RetryPolicy
from producer.errors import (
    AttemptOutcome,
    BrokerError,
    ConnectError,
    ConnectionLostError,
    Fate,
    RequestTimeout,
    SendTimeout,
)

Q_A = MessageQueue("T", "broker-a", 0)
Q_B = MessageQueue("T", "broker-b", 1)


def plan(
    policy: RetryPolicy | None = None,
    *,
    mode: SendMode = SendMode.SYNC,
    attempts: int = 3,
    deadline: float = 3000.0,
    not_store_ok: bool = False,
) -> SendPlan:
    return SendPlan(
        mode=mode,
        policy=policy or RetryPolicy.default(),
        max_attempts=attempts,
        deadline_ms=deadline,
        budget_ms=deadline,
        retry_not_store_ok=not_store_ok,
        rng=random.Random(7),
    )


HEADER = SendResponseHeader(msg_id="OFF", queue_id=0, queue_offset=7)


def answer(
    p: SendPlan, queue: MessageQueue, latency: float, status: SendStatus = SendStatus.SEND_OK
) -> Retry | Finish:
    return p.on_answer(queue, status, HEADER, "ID", latency)


def run_failing(p: SendPlan, errors: list[Exception], now: float = 0.0) -> Finish:
    """Drive the plan with one error per attempt until it finishes."""
    queues = [Q_A, Q_B]
    for i, error in enumerate(errors):
        step = p.next_attempt(now)
        if isinstance(step, Finish):
            return step
        decision = p.on_error(queues[i % 2], error, 1.0)  # type: ignore[arg-type]
        if isinstance(decision, Finish):
            return decision
    raise AssertionError("plan did not finish")


@pytest.mark.parametrize("code", [1, 14, 16, 17, 204, 205])
def test_s1_s4_retriable_codes_use_every_attempt(code: int) -> None:
    p = plan(RetryPolicy.java_4_9())
    done = run_failing(p, [BrokerError.for_code(code)] * 5)
    assert isinstance(done.error, BrokerError)
    assert done.error.code == code
    assert [a.broker_name for a in done.error.attempts] == ["broker-a", "broker-b", "broker-a"]
    assert done.error.definitely_not_stored


@pytest.mark.parametrize("code", [3, 13, 29, 215])
def test_s5_non_retriable_code_fails_on_first_attempt_under_java_4_9(code: int) -> None:
    done = run_failing(plan(RetryPolicy.java_4_9()), [BrokerError.for_code(code)] * 3)
    assert done.error is not None
    assert len(done.error.attempts) == 1


def test_s4_system_busy_is_retried_by_5_3_and_default_not_by_4_9() -> None:
    busy = BrokerError.for_code(2)
    assert len(run_failing(plan(RetryPolicy.java_4_9()), [busy] * 3).error.attempts) == 1  # type: ignore[union-attr]
    assert len(run_failing(plan(RetryPolicy.java_5_3()), [busy] * 3).error.attempts) == 3  # type: ignore[union-attr]


def test_s4_throttling_code_backs_off_with_jitter_under_default_policy() -> None:
    p = plan()
    assert isinstance(p.next_attempt(0.0), Dispatch)
    decision = p.on_error(Q_A, BrokerError.for_code(215), 5.0)
    assert isinstance(decision, Retry)
    assert 10.0 <= decision.backoff_ms <= 20.0


def test_s4_a_retry_s_backoff_is_owed_by_the_plan_then_the_attempt_goes() -> None:
    p = plan()
    assert isinstance(p.next_attempt(0.0), Dispatch)
    decision = p.on_error(Q_A, BrokerError.for_code(215), 5.0, 5.0)
    assert isinstance(decision, Retry) and decision.backoff_ms > 0
    wait = p.next_attempt(5.0)
    assert wait == Backoff(decision.backoff_ms / 1000.0)
    step = p.next_attempt(5.0 + decision.backoff_ms)  # waited: once only
    assert isinstance(step, Dispatch) and step.number == 2


def test_s2_a_backoff_is_cut_at_the_deadline_and_none_is_owed_past_it() -> None:
    p = plan(deadline=1000.0)
    p.next_attempt(0.0)
    decision = p.on_error(Q_A, BrokerError.for_code(215), 5.0, 995.0)
    assert isinstance(decision, Retry) and decision.backoff_ms > 5.0
    assert p.next_attempt(995.0) == Backoff(0.005)
    late = plan(deadline=1000.0)
    late.next_attempt(0.0)
    late.on_error(Q_A, BrokerError.for_code(215), 5.0, 995.0)
    done = late.next_attempt(1000.0)  # nothing left to wait for: S2's timeout
    assert isinstance(done, Finish) and isinstance(done.error, SendTimeout)


def test_a_finished_plan_answers_its_finish_again_never_a_second_attempt() -> None:
    p = plan()
    p.next_attempt(0.0)
    done = answer(p, Q_A, 3.0)
    assert isinstance(done, Finish) and done.result is not None
    assert p.next_attempt(10.0) is done
    failed = plan()
    failed.next_attempt(0.0)
    given_up = failed.on_error(Q_A, BrokerError.for_code(13), 1.0)
    assert isinstance(given_up, Finish)
    assert failed.next_attempt(10.0) is given_up


def test_s4_transport_errors_retry() -> None:
    errors = [
        ConnectError("refused"),
        RequestTimeout("slow"),
        ConnectionLostError("x", written=False),
    ]
    done = run_failing(plan(), errors)
    outcomes = [a.outcome for a in done.error.attempts]  # type: ignore[union-attr]
    assert outcomes == [
        AttemptOutcome.CONNECT_ERROR,
        AttemptOutcome.TIMEOUT,
        AttemptOutcome.CONNECTION_LOST,
    ]
    # one attempt timed out after its write: the message may be stored
    assert done.error is not None and done.error.fate is Fate.UNKNOWN


def test_s2_deadline_passed_before_attempt_raises_send_timeout_with_last_error() -> None:
    p = plan(deadline=1000.0)
    assert isinstance(p.next_attempt(0.0), Dispatch)
    p.on_error(Q_A, ConnectError("refused"), 1000.0)
    done = p.next_attempt(1000.0)
    assert isinstance(done, Finish)
    assert isinstance(done.error, SendTimeout)
    assert isinstance(done.error, TimeoutError)
    assert isinstance(done.error.last_error, ConnectError)
    assert len(done.error.attempts) == 1


def test_s3_attempt_timeout_is_capped_so_retries_keep_budget() -> None:
    step = plan(deadline=3000.0).next_attempt(0.0)
    assert isinstance(step, Dispatch)
    assert step.timeout_ms == pytest.approx(1000.0)
    java = plan(RetryPolicy.java_4_9(), deadline=3000.0).next_attempt(0.0)
    assert isinstance(java, Dispatch)
    assert java.timeout_ms == pytest.approx(3000.0)  # rocketmq#4720: Java lets it eat all


def test_s2_attempt_timing_out_at_the_deadline_is_a_send_timeout() -> None:
    p = plan(deadline=300.0)
    assert isinstance(p.next_attempt(0.0), Dispatch)
    done = p.on_error(Q_A, RequestTimeout("slow"), 300.0, now_ms=300.0)
    assert isinstance(done, Finish)
    assert isinstance(done.error, SendTimeout)
    assert isinstance(done.error.last_error, RequestTimeout)
    assert done.error.fate is Fate.UNKNOWN


def test_s3_last_attempt_gets_the_whole_remainder() -> None:
    p = plan(deadline=3000.0)
    p.next_attempt(0.0)
    p.on_error(Q_A, RequestTimeout("t"), 1000.0)
    p.next_attempt(1000.0)
    p.on_error(Q_B, RequestTimeout("t"), 1000.0)
    last = p.next_attempt(2000.0)
    assert isinstance(last, Dispatch)
    assert last.number == 3
    assert last.timeout_ms == pytest.approx(1000.0)


def test_s6_not_store_ok_is_returned_unless_retry_another_broker() -> None:
    p = plan()
    p.next_attempt(0.0)
    done = answer(p, Q_A, 2.0, SendStatus.FLUSH_DISK_TIMEOUT)
    assert isinstance(done, Finish)
    assert done.result is not None and done.result.status is SendStatus.FLUSH_DISK_TIMEOUT


def test_s6_retry_another_broker_returns_last_not_ok_result_when_attempts_run_out() -> None:
    p = plan(not_store_ok=True)
    for q in (Q_A, Q_B):
        p.next_attempt(0.0)
        assert isinstance(answer(p, q, 1.0, SendStatus.SLAVE_NOT_AVAILABLE), Retry)
    p.next_attempt(0.0)
    done = p.on_error(Q_A, BrokerError.for_code(14), 1.0)
    assert isinstance(done, Finish)
    assert done.result is not None and done.result.status is SendStatus.SLAVE_NOT_AVAILABLE
    assert [a.code for a in done.result.attempts] == [11, 11]


def test_s11_unknown_fate_is_not_retried_when_disabled() -> None:
    policy = RetryPolicy(retry_unknown_fate=False)
    done = run_failing(plan(policy), [RequestTimeout("t")] * 3)
    assert done.error is not None and len(done.error.attempts) == 1
    assert done.error.fate is Fate.UNKNOWN
    # a failure that certainly did not store is still retried
    done = run_failing(plan(policy), [ConnectionLostError("x", written=False)] * 3)
    assert done.error is not None and len(done.error.attempts) == 3


def test_a2_async_plan_counts_attempts_across_redispatches() -> None:
    p = plan(mode=SendMode.ASYNC, attempts=3)
    done = run_failing(p, [RequestTimeout("t")] * 10)
    assert done.error is not None and len(done.error.attempts) == 3


def test_a3_java_async_retries_transport_failures_only() -> None:
    p = plan(RetryPolicy.java_4_9(), mode=SendMode.ASYNC)
    done = run_failing(p, [BrokerError.for_code(14)] * 3)
    assert done.error is not None and len(done.error.attempts) == 1
    done = run_failing(plan(mode=SendMode.ASYNC), [BrokerError.for_code(14)] * 3)
    assert done.error is not None and len(done.error.attempts) == 3


def test_success_carries_attempt_history() -> None:
    p = plan()
    p.next_attempt(0.0)
    p.on_error(Q_A, ConnectError("refused"), 3.0)
    p.next_attempt(3.0)
    done = answer(p, Q_B, 4.0)
    assert isinstance(done, Finish) and done.result is not None
    assert [(a.broker_name, a.outcome) for a in done.result.attempts] == [
        ("broker-a", AttemptOutcome.CONNECT_ERROR),
        ("broker-b", AttemptOutcome.OK),
    ]


def test_success_is_built_once_with_the_ids_of_both_sides() -> None:
    p = plan()
    p.next_attempt(0.0)
    done = answer(p, Q_A, 1.5)
    assert isinstance(done, Finish) and done.result is p.last_result
    assert done.result is not None
    assert (done.result.msg_id, done.result.offset_msg_id, done.result.queue_offset) == (
        "ID",
        "OFF",
        7,
    )


def test_oneway_write_finishes_without_a_result_and_records_the_attempt() -> None:
    p = plan(mode=SendMode.ONEWAY, attempts=1)
    p.next_attempt(0.0)
    done = p.on_written(Q_A, 0.5)
    assert done == Finish()
    assert [(a.broker_name, a.outcome) for a in p.attempts] == [("broker-a", AttemptOutcome.OK)]


@pytest.mark.parametrize(
    ("mode", "keyed", "expected"),
    [
        (SendMode.SYNC, False, 1 + 2),
        (SendMode.ASYNC, False, 1 + 5),
        (SendMode.SYNC, True, 1),
        (SendMode.ASYNC, True, 1),
        (SendMode.ONEWAY, False, 1),
    ],
)
def test_s1_a2_attempt_count_by_mode(mode: SendMode, keyed: bool, expected: int) -> None:
    assert max_attempts(mode, keyed=keyed, sync_retries=2, async_retries=5) == expected


def test_s2_the_timeout_says_its_budget() -> None:
    p = plan(deadline=1234.0)
    p.next_attempt(0.0)
    p.on_error(Q_A, RequestTimeout("t"), 1234.0, 1234.0)
    done = p.next_attempt(1234.0)
    assert isinstance(done, Finish) and isinstance(done.error, SendTimeout)
    assert "1234 ms budget" in str(done.error)
