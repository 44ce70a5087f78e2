"""A send is one object that owns what it holds (issue 45 item 1).

:class:`Send` alone frees its in-flight slot and ends its flush ticket, in ``finish``,
once: these tests count the limiter's releases on every way a send ends (success, error,
cancel, timeout), alone and through a real producer against the dev cluster, and check
that a move its table does not allow raises.
"""

from __future__ import annotations

import random

import anyio
import pytest

from producer import Message, SendResult, SendStatus
from producer._remoting.producer_requests import SendRequestFactory
from producer._send.backpressure import InFlightLimiter
from producer._send.future import SendFuture
from producer._send.job import SendJob
from producer._send.plan import SendMode, SendPlan
from producer._send.send import Send, SendState, answer
from producer._send.tracker import SendTracker
from producer._types.message import MessageQueue
from producer._types.retry_policy import RetryPolicy
from producer.errors import (
    BrokerError,
    LocalProtocolError,
    ProducerClosedError,
    ProducerError,
    SendTimeout,
)
from producer.testing import DevClusterThread, FaultSpec
from tests.producer.conftest import TOPIC, make_producer


class CountingLimiter(InFlightLimiter):
    """The real limiter, counting its acquisitions and releases."""

    def __init__(self, max_count: int = 10) -> None:
        super().__init__(max_count, 1 << 20)
        self.taken = 0
        self.released = 0

    def try_acquire(self, size: int) -> bool:
        took = super().try_acquire(size)
        self.taken += took
        return took

    def release(self, size: int) -> None:
        self.released += 1
        super().release(size)


def _send(limiter: InFlightLimiter, tracker: SendTracker, future: SendFuture | None = None) -> Send:
    message = Message(TOPIC, b"body")
    prepared = SendRequestFactory("g").prepare(message, "C0FFEE")
    plan = SendPlan(
        mode=SendMode.SYNC,
        policy=RetryPolicy.default(),
        max_attempts=3,
        deadline_ms=3000.0,
        budget_ms=3000.0,
        retry_not_store_ok=False,
        rng=random.Random(7),
    )
    return Send(SendJob(prepared, message), plan, limiter, tracker, future)


def _result() -> SendResult:
    queue = MessageQueue(TOPIC, "broker-a", 0)
    return SendResult(SendStatus.SEND_OK, "C0FFEE", "", queue, 0, None, False, None, ())


@pytest.mark.parametrize("path", ["success", "error", "cancel"])
def test_finish_frees_the_slot_and_ticket_once(path: str) -> None:
    limiter, tracker = CountingLimiter(), SendTracker()
    send = _send(limiter, tracker)
    assert tracker.open_count == 1 and send.state is SendState.WAITING
    assert send.try_admit() and limiter.in_flight == 1
    send.attempt_out()
    if path == "success":
        assert answer(send.finish(_result())) is not None
    elif path == "error":
        with pytest.raises(BrokerError) as raised:
            answer(send.finish(BrokerError.for_code(14, "busy")))
        assert raised.value.msg_id == "C0FFEE"  # the error names the send
    else:  # cancelled with its attempt out: abandoned, then finished as closed
        send.attempt_back()
        send.finish(ProducerClosedError("closed"))
    assert (limiter.taken, limiter.released, limiter.in_flight) == (1, 1, 0)
    assert tracker.open_count == 0 and send.finished
    with pytest.raises(LocalProtocolError, match="cannot go from finished on finish"):
        send.finish(_result())  # a second finish would free the slot twice
    assert limiter.released == 1 and limiter.in_flight == 0


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_send_that_timed_out_waiting_for_a_slot_frees_none() -> None:
    limiter, tracker = CountingLimiter(max_count=1), SendTracker()
    holder = _send(limiter, tracker)
    assert holder.try_admit()
    waiter = _send(limiter, tracker)
    with pytest.raises(SendTimeout):
        await waiter.admit(1.0)  # no room: the limiter gives up at the deadline
    assert waiter.state is SendState.WAITING
    waiter.finish(SendTimeout("no room"))
    assert limiter.released == 0 and limiter.in_flight == 1  # the holder's slot is intact
    holder.finish(_result())
    assert limiter.released == 1 and limiter.in_flight == 0 and tracker.open_count == 0


def test_a_future_is_resolved_by_finish() -> None:
    limiter, tracker = CountingLimiter(), SendTracker()
    future = SendFuture(msg_id="C0FFEE")
    send = _send(limiter, tracker, future)
    send.try_admit()
    send.finish(_result())
    assert future.done() and future.result().msg_id == "C0FFEE"


@pytest.mark.parametrize(
    ("moves", "illegal"),
    [
        ((), "attempt_out"),  # WAITING: no slot yet, so no attempt can go out
        ((), "attempt_back"),  # nothing is out
        (("try_admit",), "attempt_back"),  # ADMITTED: nothing is out
        (("try_admit", "attempt_out"), "attempt_out"),  # one attempt out at a time
        (("try_admit", "attempt_out"), "try_admit"),  # a slot is taken once
    ],
)
def test_a_move_the_table_does_not_allow_raises(moves: tuple[str, ...], illegal: str) -> None:
    send = _send(CountingLimiter(), SendTracker())
    for move in moves:
        getattr(send, move)()
    state = send.state
    with pytest.raises(LocalProtocolError, match=f"cannot go from {state.value}"):
        getattr(send, illegal)()
    assert send.state is state


# -- through a producer, against the dev cluster -----------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("path", ["success", "error", "timeout", "cancel"])
async def test_every_way_a_send_ends_leaves_nothing_held(
    cluster: DevClusterThread, path: str
) -> None:
    producer = make_producer(cluster, send_timeout_ms=300, retry_times_when_send_failed=0)
    async with producer as p:
        await p.send(Message(TOPIC, b"route and connections"))  # the lone path's start
        fault = {"error": FaultSpec(error_code=14), "success": FaultSpec()}.get(path)
        for broker in cluster.broker_names:
            cluster.set_fault(broker, fault or FaultSpec(latency_ms=2_000))
        for _ in range(3):  # lone awaited sends, then async ones
            if path == "cancel":
                with anyio.move_on_after(0.05):
                    await p.send(Message(TOPIC, b"x"))
            elif path == "success":
                await p.send(Message(TOPIC, b"x"))
                await p.send_async(Message(TOPIC, b"y"))
            else:
                with pytest.raises(ProducerError):
                    await p.send(Message(TOPIC, b"x"))
                with pytest.raises(ProducerError):
                    await p.send_async(Message(TOPIC, b"y"))
            assert p.in_flight == 0
        await p.flush(timeout_ms=5_000)  # every ticket ended: flush returns
