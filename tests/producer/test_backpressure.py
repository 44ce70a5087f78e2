"""A7: the fair in-flight limiter, on asyncio and trio."""

from __future__ import annotations

import anyio
import pytest

from producer._send.backpressure import InFlightLimiter
from producer.errors import BackpressureError, SendTimeout

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_a7_waiters_are_served_in_arrival_order() -> None:
    limiter = InFlightLimiter(max_count=10, max_bytes=100)
    assert limiter.try_acquire(50)
    assert limiter.try_acquire(50)
    granted: list[str] = []

    async def take(name: str, size: int) -> None:
        await limiter.acquire(size, timeout_ms=10_000)
        granted.append(name)

    async with anyio.create_task_group() as tg:
        tg.start_soon(take, "big", 60)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(take, "small", 5)
        await anyio.wait_all_tasks_blocked()
        limiter.release(50)
        await anyio.wait_all_tasks_blocked()
        # "small" now fits (50 + 5 <= 100) but must not overtake "big" (50 + 60 > 100)
        assert granted == []
        assert limiter.waiting == 2
        limiter.release(50)
    assert sorted(granted) == ["big", "small"]
    assert limiter.in_flight == 2
    assert limiter.in_flight_bytes == 65


async def test_a7_waiting_past_the_deadline_is_a_send_timeout() -> None:
    limiter = InFlightLimiter(max_count=1, max_bytes=100)
    assert limiter.try_acquire(1)
    with pytest.raises(SendTimeout) as info:
        await limiter.acquire(1, timeout_ms=20)
    assert isinstance(info.value, TimeoutError)
    assert limiter.waiting == 0
    assert limiter.in_flight == 1


async def test_a7_fail_fast_refuses_at_once() -> None:
    limiter = InFlightLimiter(max_count=1, max_bytes=100, fail_fast=True)
    assert limiter.try_acquire(1)
    with pytest.raises(BackpressureError):
        await limiter.acquire(1, timeout_ms=1000)


async def test_a7_cancelled_waiter_leaves_no_slot_behind() -> None:
    limiter = InFlightLimiter(max_count=1, max_bytes=100)
    assert limiter.try_acquire(1)
    async with anyio.create_task_group() as tg:
        tg.start_soon(limiter.acquire, 1, 10_000)
        await anyio.wait_all_tasks_blocked()
        assert limiter.waiting == 1
        tg.cancel_scope.cancel()
    assert limiter.waiting == 0
    limiter.release(1)
    assert limiter.in_flight == 0
    assert limiter.try_acquire(1)


async def test_a7_grant_racing_cancellation_is_released_by_the_holder() -> None:
    limiter = InFlightLimiter(max_count=1, max_bytes=100)
    assert limiter.try_acquire(1)

    async def hold() -> None:
        await limiter.acquire(1, 10_000)
        try:
            await anyio.sleep_forever()
        finally:
            limiter.release(1)

    async with anyio.create_task_group() as tg:
        tg.start_soon(hold)
        await anyio.wait_all_tasks_blocked()
        limiter.release(1)  # grants the waiter...
        tg.cancel_scope.cancel()  # ...which is cancelled before it runs
    assert limiter.in_flight == 0
    assert limiter.waiting == 0


async def test_a7_oversized_message_goes_alone() -> None:
    limiter = InFlightLimiter(max_count=4, max_bytes=10)
    assert limiter.try_acquire(50)
    assert not limiter.try_acquire(1)
    limiter.release(50)
    assert limiter.in_flight_bytes == 0
