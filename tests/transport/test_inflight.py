"""The in-flight table alone: no sockets, no loop, time passed in."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from producer._remoting.command import OpaqueAllocator, RemotingCommand
from producer._remoting.frame_decoder import FrameDecoder
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.request_codes import FLAG_RESPONSE, RequestCode
from producer._remoting.request_table import EntryState, InFlight
from producer.errors import (
    ConnectionLostError,
    Fate,
    RemoteProtocolError,
    RequestTimeout,
)


class Slot:
    """A minimal waiter: records what it was given, refuses a second outcome."""

    def __init__(self) -> None:
        self.outcome: object = None
        self.resolved = False
        self.gave_up = False

    def done(self) -> bool:
        return self.resolved

    def cancelled(self) -> bool:
        return self.gave_up

    def cancel(self) -> None:
        self.resolved = self.gave_up = True

    def set_result(self, result: RemotingCommand | None, /) -> None:
        assert not self.resolved
        self.resolved, self.outcome = True, result

    def set_exception(self, exception: BaseException, /) -> None:
        assert not self.resolved
        self.resolved, self.outcome = True, exception


def table(start: int = 1) -> InFlight:
    return InFlight("broker:10911", OpaqueAllocator(start))


def add(
    inflight: InFlight, timeout_ms: float | None = 1000, now: float = 0.0, oneway: bool = False
) -> tuple[Slot, RemotingCommand]:
    slot = Slot()
    command = RemotingCommand(RequestCode.HEART_BEAT)
    inflight.prepare(command, timeout_ms, now, slot, oneway=oneway)
    return slot, command


def response_bytes(*opaques: int) -> bytes:
    return b"".join(encode_frame(RemotingCommand(0, opaque=o, flag=FLAG_RESPONSE)) for o in opaques)


def test_frames_are_taken_once_in_order_and_marked_written() -> None:
    inflight = table()
    _, first = add(inflight)
    _, second = add(inflight)
    frames, oneways = inflight.take_frames()
    decoded = FrameDecoder().feed(b"".join(frames))
    assert [c.opaque for c in decoded] == [first.opaque, second.opaque]
    assert oneways == []
    assert inflight.take_frames() == ([], [])
    assert inflight.stats.flushes == 1 and inflight.stats.frames_written == 2


def test_a_request_whose_waiter_was_cancelled_before_its_write_is_never_written() -> None:
    # A caller awaiting the connection's future directly (Producer.send, through
    # Sender.start_first) cancels it when it gives up; the table has no other word of it.
    inflight = table()
    gave_up, dropped = add(inflight)
    _, kept = add(inflight)
    gave_up.cancel()
    frames, _ = inflight.take_frames()
    assert [c.opaque for c in FrameDecoder().feed(b"".join(frames))] == [kept.opaque]
    assert dropped.opaque not in inflight and len(inflight) == 1
    assert inflight.stats.frames_written == 1


def test_response_resolves_only_a_written_request() -> None:
    inflight = table()
    slot, command = add(inflight)
    inflight.data_received(response_bytes(command.opaque))  # before it was even written
    assert not slot.resolved and inflight.stats.dropped_responses == 1
    inflight.take_frames()
    inflight.data_received(response_bytes(command.opaque))
    assert isinstance(slot.outcome, RemotingCommand) and len(inflight) == 0
    inflight.data_received(response_bytes(command.opaque, 999))  # duplicate and unknown
    assert inflight.stats.dropped_responses == 3 and inflight.stats.responses == 1


def test_a_peer_request_without_a_handler_is_answered_not_supported() -> None:
    inflight = table()
    assert inflight.data_received(encode_frame(RemotingCommand(39, opaque=5))) is True
    frames, _ = inflight.take_frames()
    (answer,) = FrameDecoder().feed(b"".join(frames))
    assert (answer.opaque, answer.code, answer.is_response) == (5, 3, True)
    assert inflight.stats.peer_requests == 1 and len(inflight) == 0


def test_a_oneway_peer_request_reaches_the_handler_and_gets_no_answer() -> None:
    seen: list[int] = []

    def handler(address: str, request: RemotingCommand) -> RemotingCommand:
        seen.append(request.code)
        return RemotingCommand(0)

    inflight = InFlight("broker:10911", OpaqueAllocator(1), handler)
    pushed = RemotingCommand(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, opaque=9, flag=0b10)
    assert inflight.data_received(encode_frame(pushed)) is False
    assert seen == [RequestCode.NOTIFY_CONSUMER_IDS_CHANGED]
    assert inflight.take_frames() == ([], [])


def test_a_failing_handler_answers_system_error_and_keeps_the_connection() -> None:
    def handler(address: str, request: RemotingCommand) -> RemotingCommand:
        raise ValueError("bug")

    inflight = InFlight("broker:10911", OpaqueAllocator(1), handler)
    assert inflight.data_received(encode_frame(RemotingCommand(39, opaque=4))) is True
    (answer,) = FrameDecoder().feed(b"".join(inflight.take_frames()[0]))
    assert (answer.opaque, answer.code, answer.remark) == (4, 1, "ValueError('bug')")
    assert inflight.closed is None


def test_bad_bytes_raise_remote_protocol_error() -> None:
    with pytest.raises(RemoteProtocolError):
        table().data_received(b"\x7f\xff\xff\xff")  # a 2 GiB frame


def test_discarded_entry_is_never_written() -> None:
    inflight = table()
    slot = Slot()
    entry = inflight.prepare(RemotingCommand(1), 1000, 0.0, slot)
    inflight.discard(entry)
    assert inflight.take_frames() == ([], []) and len(inflight) == 0
    assert entry.state is EntryState.DONE and not slot.resolved


def test_oneway_is_confirmed_after_its_write() -> None:
    inflight = table()
    slot, command = add(inflight, timeout_ms=None, oneway=True)
    assert command.is_oneway
    frames, oneways = inflight.take_frames()
    assert len(frames) == 1 and not slot.resolved and len(inflight) == 1
    inflight.confirm_oneways(oneways)
    assert slot.done()
    assert slot.outcome is None and len(inflight) == 0


def test_expiry_fate_depends_on_whether_written() -> None:
    inflight = table()
    written, _ = add(inflight, timeout_ms=100)
    inflight.take_frames()
    unwritten, _ = add(inflight, timeout_ms=100)
    later, later_command = add(inflight, timeout_ms=500)
    assert inflight.next_deadline() == pytest.approx(0.1)
    assert inflight.expire(0.0999) == 0
    assert inflight.expire(0.1) == 2
    assert isinstance(written.outcome, RequestTimeout) and written.outcome.fate is Fate.UNKNOWN
    assert isinstance(unwritten.outcome, RequestTimeout)
    assert unwritten.outcome.fate is Fate.NOT_STORED
    assert not later.resolved and inflight.next_deadline() == pytest.approx(0.5)
    frames, _ = inflight.take_frames()  # the expired unwritten one is never written
    assert [c.opaque for c in FrameDecoder().feed(b"".join(frames))] == [later_command.opaque]


def test_finished_entries_leave_the_heap_lazily_and_it_stays_bounded() -> None:
    inflight = table()
    for i in range(10_000):
        _, command = add(inflight, timeout_ms=1000, now=float(i))
        inflight.take_frames()
        inflight.data_received(response_bytes(command.opaque))
    assert len(inflight) == 0
    assert inflight.scheduled <= 1024 + 2  # rebuilt from live entries as they pile up
    assert inflight.next_deadline() is None


def test_opaques_in_use_are_skipped_after_wrapping() -> None:
    inflight = table(start=2**31 - 1)
    _, first = add(inflight)
    inflight.prepare(RemotingCommand(1), 1000, 0.0, Slot())  # takes 0
    _, third = add(inflight)
    assert (first.opaque, third.opaque) == (2**31 - 1, 1)


def test_close_fails_everything_once_and_refuses_more() -> None:
    inflight = table()
    written, _ = add(inflight)
    inflight.take_frames()
    unwritten, _ = add(inflight)
    cause = RemoteProtocolError("garbage")
    assert inflight.close("connection lost", cause) is True
    assert inflight.close("again") is False
    assert isinstance(written.outcome, ConnectionLostError) and written.outcome.written
    assert isinstance(unwritten.outcome, ConnectionLostError)
    assert unwritten.outcome.written is False
    assert written.outcome.__cause__ is cause
    with pytest.raises(ConnectionLostError) as info:
        add(inflight)
    assert info.value.written is False and info.value.__cause__ is inflight.closed
    assert inflight.next_deadline() is None and "closed" in repr(inflight)


def test_no_budget_is_a_not_stored_timeout() -> None:
    with pytest.raises(RequestTimeout) as info:
        add(table(), timeout_ms=0)
    assert info.value.fate is Fate.NOT_STORED


operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(1, 50)),
        st.tuples(st.just("write"), st.just(0)),
        st.tuples(st.just("answer"), st.integers(0, 40)),
        st.tuples(st.just("tick"), st.integers(0, 30)),
    ),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(operations)
def test_every_waiter_gets_exactly_one_outcome_with_the_right_fate(
    ops: list[tuple[str, int]],
) -> None:
    inflight = table()
    now = 0.0
    slots: dict[int, tuple[Slot, float]] = {}
    written: set[int] = set()
    for op, arg in ops:
        if op == "add":
            slot, command = add(inflight, timeout_ms=arg, now=now)
            slots[command.opaque] = (slot, now + arg / 1000)
        elif op == "write":
            frames, _ = inflight.take_frames()
            written |= {c.opaque for c in FrameDecoder().feed(b"".join(frames))}
        elif op == "answer":
            inflight.data_received(response_bytes(arg + 1))
        else:
            now += arg / 1000
            inflight.expire(now)
        for opaque, (slot, deadline) in slots.items():
            assert slot.resolved == (opaque not in inflight)
            if isinstance(slot.outcome, RequestTimeout):
                assert deadline <= now
                assert slot.outcome.fate is (Fate.UNKNOWN if opaque in written else Fate.NOT_STORED)
            elif slot.outcome is not None:
                assert opaque in written
    inflight.close("end")
    assert all(slot.resolved for slot, _ in slots.values())
    assert math.isfinite(now)
