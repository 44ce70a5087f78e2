"""The consumer's pure decisions (docs/consuming.md 2.2-2.6, 3.2): allocation, the committed
offset, listener results, where a queue starts, delay levels."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from producer._consume.decisions import (
    FlowLimits,
    StartFrom,
    expired,
    flow_blocked,
    lock_valid,
    orderly_retry,
    settle,
    settle_batch,
    start_from,
    suspend_ms,
)
from producer._consume.offsets import OffsetTable
from producer._consume.policy import SeenRecently
from producer._consume.process_queue import ProcessQueue
from producer._remoting.allocate import allocate_averagely
from producer._remoting.consumer_requests import ConsumeFromWhere
from producer._remoting.delay_levels import parse_delay_levels
from producer._types.consumer.received import ReceivedMessage
from producer._types.consumer.retry_policy import ConsumeRetryPolicy
from producer._types.consumer.status import ConsumeStatus
from producer._types.message import MessageQueue
from producer.errors import InvalidOptionError

Q = MessageQueue("T", "broker-a", 0)


def queues(n: int) -> list[MessageQueue]:
    return [MessageQueue("T", "broker-a", i) for i in range(n)]


def ids(assigned: list[MessageQueue]) -> list[int]:
    return [q.queue_id for q in assigned]


@pytest.mark.parametrize(
    ("n_queues", "consumers", "expected"),
    [
        (5, ["c1", "c2"], {"c1": [0, 1, 2], "c2": [3, 4]}),
        (2, ["c1", "c2", "c3"], {"c1": [0], "c2": [1], "c3": []}),
        (8, ["c1", "c2", "c3"], {"c1": [0, 1, 2], "c2": [3, 4, 5], "c3": [6, 7]}),
        (4, ["b", "a"], {"a": [0, 1], "b": [2, 3]}),  # consumer ids are sorted first
    ],
)
def test_allocate_averagely(
    n_queues: int, consumers: list[str], expected: dict[str, list[int]]
) -> None:
    for me, want in expected.items():
        assert ids(allocate_averagely(queues(n_queues), consumers, me)) == want


def test_a_consumer_missing_from_the_list_takes_nothing() -> None:
    assert allocate_averagely(queues(4), ["a", "b"], "c") == []


def test_queues_sort_by_broker_then_id() -> None:
    mixed = [MessageQueue("T", "b", 0), MessageQueue("T", "a", 1), MessageQueue("T", "a", 0)]
    got = allocate_averagely(mixed, ["x", "y"], "x")
    assert got == [MessageQueue("T", "a", 0), MessageQueue("T", "a", 1)]


@given(n_queues=st.integers(0, 40), n_consumers=st.integers(1, 12))
def test_allocation_is_a_partition(n_queues: int, n_consumers: int) -> None:
    consumers = [f"10.0.0.{i}@{i}" for i in range(n_consumers)]
    parts = [allocate_averagely(queues(n_queues), consumers, c) for c in consumers]
    flat = [q for part in parts for q in part]
    assert sorted(ids(flat)) == list(range(n_queues))
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1


def message(offset: int, body: bytes = b"x") -> ReceivedMessage:
    return ReceivedMessage(
        topic="T", body=body, properties={}, msg_id=f"id{offset}", offset_msg_id="",
        queue=Q, queue_offset=offset, commit_log_offset=offset * 100, reconsume_times=0,
        born_timestamp=0, store_timestamp=0, born_host="", store_host="",
    )  # fmt: skip


def test_committed_offset_is_the_smallest_in_flight() -> None:
    pq = ProcessQueue(Q)
    batch = [message(o) for o in range(2100, 2201)]
    pq.put(batch)
    # Everything but the slow message at 2101 finishes (seed 001).
    assert pq.remove([m for m in batch if m.queue_offset != 2101]) == 2101
    assert pq.remove([batch[1]]) == 2201  # empty: last put + 1
    assert pq.remove([batch[1]]) == -1  # nothing held: nothing to commit


def test_the_committable_offset_is_the_smallest_held_not_the_largest() -> None:
    pq = ProcessQueue(Q)
    batch = [message(o) for o in range(5)]
    pq.put(batch)
    assert pq.remove([batch[1], batch[3]]) == 0  # 0, 2, 4 held: the smallest
    assert pq.remove([batch[0]]) == 2  # 2 and 4 held
    assert pq.remove([batch[4]]) == 2  # the largest settled first moves nothing
    assert pq.remove([batch[2]]) == 5


@given(
    offsets=st.sets(st.integers(0, 200), min_size=1, max_size=30),
    data=st.data(),
)
def test_remove_answers_the_smallest_held_or_past_the_last(
    offsets: set[int], data: st.DataObject
) -> None:
    pq = ProcessQueue(Q)
    batch = [message(o) for o in sorted(offsets)]
    pq.put(batch)
    settled = data.draw(st.lists(st.sampled_from(batch), unique_by=lambda m: m.queue_offset))
    left = offsets - {m.queue_offset for m in settled}
    assert pq.remove(settled) == (min(left) if left else max(offsets) + 1)
    assert len(pq) == len(left)


def test_the_settle_step_commits_the_smallest_held_unless_dropped() -> None:
    """``settle_batch``, the one step concurrent and orderly consumption settle by."""
    pq = ProcessQueue(Q)
    batch = [message(o) for o in range(10, 15)]
    pq.put(batch)
    assert settle_batch(pq, [batch[0], batch[2]]) == 11
    assert settle_batch(pq, []) == 11  # nothing settled: still the smallest held
    assert settle_batch(pq, batch[1:4]) == 14
    pq.dropped = True  # given up meanwhile: another member owns its offset now
    assert settle_batch(pq, [batch[4]]) is None and len(pq) == 0
    assert settle_batch(ProcessQueue(Q), [batch[0]]) is None  # nothing held


def test_re_pulled_offsets_are_not_held_twice() -> None:
    pq = ProcessQueue(Q)
    assert len(pq.put([message(1), message(2)])) == 2
    assert [m.queue_offset for m in pq.put([message(2), message(3)])] == [3]
    assert len(pq) == 3 and pq.span == 2 and pq.body_bytes == 3


def test_offsets_only_increase_through_consumption() -> None:
    table = OffsetTable()
    assert table.update(Q, 5, increase_only=True)
    assert not table.update(Q, 3, increase_only=True)
    assert table.read(Q) == 5
    assert table.update(Q, 3, increase_only=False)  # an offset reset may go back
    other = MessageQueue("T", "broker-a", 1)
    table.update(other, 9, increase_only=True)
    assert table.to_persist({Q}) == {Q: 3}
    assert table.read(other) is None  # unassigned queues are forgotten


@pytest.mark.parametrize(
    ("status", "ack_index", "done", "failed"),
    [
        (ConsumeStatus.SUCCESS, None, 3, 0),
        (ConsumeStatus.SUCCESS, 0, 1, 2),
        (ConsumeStatus.SUCCESS, 99, 3, 0),
        (ConsumeStatus.SUCCESS, -1, 0, 3),
        (ConsumeStatus.RECONSUME_LATER, 2, 0, 3),
    ],
)
def test_settle(status: ConsumeStatus, ack_index: int | None, done: int, failed: int) -> None:
    batch = [message(o) for o in range(3)]
    result = settle(status, batch, ack_index)
    assert (len(result.done), len(result.failed)) == (done, failed)
    assert result.done + result.failed == batch


@pytest.mark.parametrize(
    ("stored", "consume_from", "topic", "expected"),
    [
        (7, ConsumeFromWhere.LAST_OFFSET, "T", StartFrom.STORED),
        (0, ConsumeFromWhere.TIMESTAMP, "T", StartFrom.STORED),
        (None, ConsumeFromWhere.LAST_OFFSET, "T", StartFrom.MAX_OFFSET),
        (None, ConsumeFromWhere.LAST_OFFSET, "%RETRY%g", StartFrom.ZERO),
        (None, ConsumeFromWhere.FIRST_OFFSET, "T", StartFrom.ZERO),
        (None, ConsumeFromWhere.TIMESTAMP, "T", StartFrom.TIMESTAMP),
        (None, ConsumeFromWhere.TIMESTAMP, "%RETRY%g", StartFrom.MAX_OFFSET),
    ],
)
def test_start_from(
    stored: int | None, consume_from: ConsumeFromWhere, topic: str, expected: StartFrom
) -> None:
    assert start_from(stored, consume_from, topic) is expected


def test_flow_control_limits() -> None:
    pq = ProcessQueue(Q)
    pq.put([message(0, b"abc"), message(5, b"de")])
    assert flow_blocked(pq, FlowLimits(), orderly=False) is None
    assert "messages" in (flow_blocked(pq, FlowLimits(max_messages=1), orderly=False) or "")
    assert "bytes" in (flow_blocked(pq, FlowLimits(max_bytes=4), orderly=False) or "")
    assert "span" in (flow_blocked(pq, FlowLimits(max_span=4), orderly=False) or "")
    assert flow_blocked(pq, FlowLimits(max_span=4), orderly=True) is None


def test_a_pull_ahead_counts_the_batch_arriving_as_held() -> None:
    """docs/consuming.md 2.13: the arriving answer's messages, bytes and last offset count."""
    pq = ProcessQueue(Q)
    pq.put([message(0, b"abc"), message(5, b"de")])  # 2 held, 5 bytes, span 5
    limits = FlowLimits(max_messages=4, max_bytes=10, max_span=8)
    assert flow_blocked(pq, limits, orderly=False, coming=2, coming_bytes=5, coming_last=8) is None
    assert "3 messages" not in (flow_blocked(pq, limits, orderly=False, coming=3) or "")
    assert "5 messages" in (flow_blocked(pq, limits, orderly=False, coming=3) or "")
    assert "11 body bytes" in (flow_blocked(pq, limits, orderly=False, coming_bytes=6) or "")
    assert "span 9" in (flow_blocked(pq, limits, orderly=False, coming_last=9) or "")
    assert flow_blocked(pq, limits, orderly=True, coming_last=9) is None
    assert ProcessQueue(Q).span_to(9) == 0  # nothing held: no span yet


def test_default_delay_levels_and_the_retry_schedule() -> None:
    levels = parse_delay_levels()
    assert levels.max_level == 18
    assert levels.delay_ms(1) == 1000 and levels.delay_ms(18) == 7_200_000
    # docs/consuming.md 3.2: reconsumeTimes 0 -> level 3 (10 s), 1 -> 30 s, 15 -> 2 h, 16 -> clamped
    schedule = [levels.delay_ms(levels.retry_level(r)) / 1000 for r in range(17)]
    assert schedule[:4] == [10, 30, 60, 120]
    assert schedule[14:] == [3600, 7200, 7200]
    assert sum(schedule[:16]) == 4 * 3600 + 45 * 60 + 40  # "about 4 h 46 m" over 16 retries


def test_bad_delay_levels_name_the_item() -> None:
    with pytest.raises(InvalidOptionError, match="'5x'"):
        parse_delay_levels("1s 5x")
    assert parse_delay_levels("200ms 1s").delays_ms == (200.0, 1000.0)


# -- orderly (docs/consuming.md 2.9) -------------------------------------------------------------


def test_orderly_takes_the_head_in_offset_order() -> None:
    pq = ProcessQueue(Q)
    pq.put([message(7), message(3), message(5)])
    assert [m.queue_offset for m in pq.head(2)] == [3, 5]
    assert [m.queue_offset for m in pq.head(10)] == [3, 5, 7]
    assert pq.remove(pq.head(2)) == 7  # committing the head moves the offset to the next


def test_orderly_retry_dead_letters_only_what_used_its_attempts() -> None:
    fresh, tried = message(1), message(2)
    tried.reconsume_times = 3
    verdict = orderly_retry([fresh, tried], max_reconsume_times=3)
    assert verdict.dead == [tried] and verdict.again == [fresh]
    assert orderly_retry([fresh], max_reconsume_times=0).dead == [fresh]


@pytest.mark.parametrize(
    ("requested", "expected"),
    [(None, 1000), (-1, 1000), (0, 10), (5, 10), (250, 250), (10**6, 30_000)],
)
def test_suspend_time_is_the_listeners_or_the_options_within_java_bounds(
    requested: int | None, expected: int
) -> None:
    assert suspend_ms(requested, 1000) == expected


def test_a_queue_lock_holds_for_30_s_after_the_last_grant() -> None:
    pq = ProcessQueue(Q)
    assert not lock_valid(pq, 0.0)
    pq.locked, pq.last_lock_ms = True, 1_000.0
    assert lock_valid(pq, 31_000.0) and not lock_valid(pq, 31_001.0)
    pq.locked = False
    assert not lock_valid(pq, 1_000.0)


# -- beyond Java: the retry policy and the idempotency guard ------------------------------


def test_the_retry_policy_dead_letters_what_it_does_not_retry() -> None:
    policy = ConsumeRetryPolicy(retry_on=(OSError,), dead_letter_on=(FileNotFoundError,))
    assert policy.retries(None)  # RECONSUME_LATER is always a retry
    assert policy.retries(ConnectionError()) and not policy.retries(FileNotFoundError())
    assert not policy.retries(ValueError())  # not in retry_on
    assert policy.delay_level(ValueError(), 0) == -1
    assert policy.delay_level(ConnectionError(), 5) == 0  # no levels: the broker decides


def test_the_retry_policy_picks_a_level_per_attempt_and_repeats_the_last() -> None:
    policy = ConsumeRetryPolicy(delay_levels=(1, 4, 9))
    assert [policy.delay_level(None, n) for n in range(5)] == [1, 4, 9, 9, 9]


@pytest.mark.parametrize(
    "bad",
    [{"delay_levels": (0,)}, {"delay_levels": (19,)}, {"delay_levels": [1]}, {"retry_on": (int,)}],
)
def test_a_bad_retry_policy_says_what_is_wrong(bad: dict[str, object]) -> None:
    with pytest.raises(InvalidOptionError, match=next(iter(bad))):
        ConsumeRetryPolicy(**bad)  # type: ignore[arg-type]


def test_seen_recently_remembers_successes_for_its_window_and_size() -> None:
    guard = SeenRecently(window_ms=1000, max_ids=2)
    a, b, c = message(1), message(2), message(3)
    guard.remember([a], now_ms=0)
    assert guard.split([a, b], now_ms=1000) == ([b], [a])
    assert guard.split([a, b], now_ms=1001) == ([a, b], [])  # forgotten after the window
    guard.remember([a, b, c], now_ms=2000)
    assert len(guard) == 2 and guard.split([a], now_ms=2000) == ([a], [])  # oldest dropped
    with pytest.raises(InvalidOptionError, match="idempotency_window_ms"):
        SeenRecently(0)


def test_expired_are_the_head_messages_whose_call_started_too_long_ago() -> None:
    pq = ProcessQueue(Q)
    batch = [message(o) for o in range(20)]
    pq.put(batch)
    for m in batch:
        m.consume_start_ms = 1_000.0
    batch[1].consume_start_ms = 0.0  # still waiting for a listener slot: not started
    found = [m.queue_offset for m in expired(pq, now_ms=1_000.0 + 900_001, timeout_ms=900_000)]
    assert found == [o for o in range(16) if o != 1]  # the first 16 held, as Java looks
    assert expired(pq, now_ms=1_000.0 + 900_000, timeout_ms=900_000) == []
