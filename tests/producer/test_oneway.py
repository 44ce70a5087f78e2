"""A oneway send runs the same pipeline as every other send: backpressure, hooks, budget."""

from __future__ import annotations

import anyio
import pytest

from producer import AttemptContext, Message
from producer.errors import AttemptOutcome, BackpressureError, LocalProtocolError, SendTimeout
from producer.testing import DevClusterThread, FaultSpec
from tests.producer.conftest import TOPIC, make_producer

pytestmark = pytest.mark.anyio


class RecordingHook:
    def __init__(self) -> None:
        self.seen: list[tuple[str, int, bool, bool]] = []

    def after_attempt(self, ctx: AttemptContext) -> None:
        answered = ctx.result is not None
        self.seen.append((ctx.queue.topic, ctx.attempt, ctx.error is None, answered))


async def test_oneway_runs_the_hooks_of_its_one_attempt(cluster: DevClusterThread) -> None:
    hook = RecordingHook()
    async with make_producer(cluster, hooks=[hook]) as p:
        await p.send_oneway(Message(TOPIC, b"one"))
    assert hook.seen == [(TOPIC, 1, True, False)]  # written, no answer to show


async def test_oneway_waits_its_turn_for_in_flight_room(cluster: DevClusterThread) -> None:
    async with make_producer(cluster, max_in_flight=1, backpressure="fail") as p:
        await p.send(Message(TOPIC, b"warm"))
        for name in cluster.broker_names:
            cluster.set_fault(name, FaultSpec(blackhole=True))
        stuck = p.send_async(Message(TOPIC, b"x"), timeout_ms=500)
        await anyio.wait_all_tasks_blocked()  # the stuck send holds the only slot
        with pytest.raises(BackpressureError):
            await p.send_oneway(Message(TOPIC, b"refused"))
        with pytest.raises(SendTimeout) as info:
            await stuck
    assert info.value.attempts[0].outcome is AttemptOutcome.TIMEOUT


@pytest.mark.parametrize("timeout_ms", [0, -1])
async def test_oneway_budget_is_checked_like_any_send(
    cluster: DevClusterThread, timeout_ms: float
) -> None:
    async with make_producer(cluster) as p:
        for send in (p.send, p.send_oneway):
            with pytest.raises(LocalProtocolError, match="timeout_ms must be positive"):
                await send(Message(TOPIC, b"x"), timeout_ms=timeout_ms)
