"""``SendFuture`` works where asyncio expects a future (``asyncio.wait``, ``as_completed``,
``wait_for``, ``shield``, ``gather``), and ``send_async`` refuses callbacks it could not run
(``async def``) when they are given, before anything is sent."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import anyio
import pytest

from producer import Message, SendResult
from producer.errors import ProducerError
from producer.testing import DevClusterThread, FaultSpec
from tests.producer.conftest import TOPIC, make_producer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_asyncio_wait_as_completed_shield_and_gather_take_it(
    anyio_backend: str, cluster: DevClusterThread
) -> None:
    async with make_producer(cluster) as p:
        futures = [p.send_async(Message(TOPIC, b"%d" % i)) for i in range(3)]
        assert all(asyncio.isfuture(f) for f in futures)
        done, pending = await asyncio.wait(futures)
        assert done == set(futures) and not pending
        more = [p.send_async(Message(TOPIC, b"more")) for _ in range(2)]
        completed = [await f for f in asyncio.as_completed(more)]
        assert {r.msg_id for r in completed} == {f.msg_id for f in more}
        shielded = await asyncio.shield(p.send_async(Message(TOPIC, b"shielded")))
        gathered = await asyncio.gather(p.send_async(Message(TOPIC, b"g")))
        within = await asyncio.wait_for(p.send_async(Message(TOPIC, b"w")), 5)
    for result in [*(f.result() for f in futures), shielded, *gathered, within]:
        assert isinstance(result, SendResult) and result.status.name == "SEND_OK"
    assert cluster.message_count(TOPIC) == 8


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_wait_for_times_out_at_once_and_the_send_still_ends_once(
    anyio_backend: str, cluster: DevClusterThread
) -> None:
    outcomes: list[object] = []
    async with make_producer(cluster, batching=False) as p:
        for name in cluster.broker_names:
            cluster.set_fault(name, FaultSpec(blackhole=True))
        future = p.send_async(
            Message(TOPIC, b"slow"), on_success=outcomes.append, on_exception=outcomes.append
        )
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(future, 0.05)
        assert future.cancelled() and outcomes == []  # the send goes on ...
        with pytest.raises(asyncio.CancelledError):
            future.result()
        await p.flush(timeout_ms=10_000)
    assert len(outcomes) == 1 and isinstance(outcomes[0], ProducerError)  # ... and ends once


async def test_done_callbacks_run_once_with_the_future(
    anyio_backend: str, cluster: DevClusterThread
) -> None:
    seen: list[Any] = []
    both, late = anyio.Event(), anyio.Event()

    def note(item: Any) -> None:
        seen.append(item)
        if len(seen) == 2:
            both.set()

    async with make_producer(cluster) as p:
        future = p.send_async(Message(TOPIC, b"cb"))
        future.add_done_callback(seen.append)  # removed below: never called
        future.add_done_callback(lambda f: note(("first", f)))
        assert future.remove_done_callback(seen.append) == 1
        future.add_done_callback(lambda f: note(("second", f)))
        await future
        with anyio.fail_after(5):  # asyncio runs them on a later loop turn
            await both.wait()
        future.add_done_callback(lambda f: note(("late", f)) or late.set())  # already done
        with anyio.fail_after(5):
            await late.wait()
    assert seen == [("first", future), ("second", future), ("late", future)]


async def async_callback(result: SendResult) -> None:  # pragma: no cover - never called
    pass


class AsyncCallable:
    async def __call__(self, result: SendResult) -> None:  # pragma: no cover
        pass


@pytest.mark.parametrize("callback", [async_callback, AsyncCallable()], ids=["def", "__call__"])
@pytest.mark.parametrize("where", ["on_success", "on_exception"])
async def test_an_async_callback_is_refused_before_anything_is_sent(
    anyio_backend: str, cluster: DevClusterThread, callback: Any, where: str
) -> None:
    async with make_producer(cluster) as p:
        with pytest.raises(TypeError, match=f"{where}=.* is an async function.*await the future"):
            p.send_async(Message(TOPIC, b"x"), **{where: callback})
        await p.flush(timeout_ms=5_000)  # nothing started, nothing holds a slot
    assert cluster.message_count(TOPIC) == 0


async def test_a_callback_returning_a_coroutine_is_reported_not_dropped(
    anyio_backend: str, cluster: DevClusterThread, caplog: pytest.LogCaptureFixture
) -> None:
    async with make_producer(cluster) as p:
        with caplog.at_level(logging.ERROR, logger="producer"):
            await p.send_async(Message(TOPIC, b"x"), on_success=lambda r: async_callback(r))
    assert "returned a coroutine, which was not run" in caplog.text


def test_callbacks_are_typed_as_plain_functions_so_mypy_refuses_async_ones() -> None:
    import typing
    from collections.abc import Callable

    from producer import Producer

    hints = typing.get_type_hints(Producer.send_async)
    assert hints["on_success"] == Callable[[SendResult], None] | None
    assert hints["on_exception"] == Callable[[ProducerError], None] | None
