"""Every client passes through the same life-cycle states, kept in one type
(``producer._lifecycle.LifecycleState``, issue 33 item 3), with the same wrong-state
errors: new -> running -> closed, a second start refused, a second close a no-op.

Each client is started against the dev cluster (5.x, so the pop clients start too).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator

import anyio
import anyio.lowlevel
import pytest

import producer
import producer.consumer
from producer import Producer, TransactionProducer, TransactionState
from producer._lifecycle import AsyncLifecycle, Outstanding
from producer._types.lifecycle_state import LifecycleState
from producer.blocking import Producer as BlockingProducer
from producer.blocking import PullConsumer as BlockingPullConsumer
from producer.consumer import (
    ConsumeStatus,
    DeadLetterQueue,
    PopConsumer,
    PullConsumer,
    PushConsumer,
    SimpleConsumer,
)
from producer.errors import LocalProtocolError, ProducerClosedError
from producer.testing import DevClusterThread

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]
TOPIC, GROUP = "Orders", "Life_Group"


async def _listener(messages: object) -> ConsumeStatus:
    return ConsumeStatus.SUCCESS  # pragma: no cover - nothing is sent here


def _push(namesrv: str) -> AsyncLifecycle:
    consumer = PushConsumer(GROUP, namesrv, listener=_listener)
    consumer.subscribe(TOPIC)
    return consumer


def _pop(namesrv: str) -> AsyncLifecycle:
    consumer = PopConsumer(GROUP, namesrv, listener=_listener)
    consumer.subscribe(TOPIC)
    return consumer


async def _check(message: object) -> TransactionState:
    return TransactionState.UNKNOWN  # pragma: no cover - no half is left to check


def _tx(namesrv: str) -> AsyncLifecycle:
    return TransactionProducer(Producer("Life_Tx", namesrv), check=_check)


CLIENTS: dict[type[AsyncLifecycle], Callable[[str], AsyncLifecycle]] = {
    Producer: lambda namesrv: Producer("Life_Producer", namesrv),
    TransactionProducer: _tx,
    PushConsumer: _push,
    PullConsumer: lambda namesrv: PullConsumer(GROUP, namesrv),
    SimpleConsumer: lambda namesrv: SimpleConsumer(GROUP, namesrv),
    PopConsumer: _pop,
    DeadLetterQueue: lambda namesrv: DeadLetterQueue(GROUP, namesrv),
}


@pytest.fixture(scope="module")
def namesrv() -> Iterator[str]:
    with DevClusterThread(brokers=1, topics={TOPIC: 2}, broker_version="5.x") as cluster:
        yield cluster.namesrv_addr


def test_every_public_client_is_checked_here() -> None:
    """A new client (any public class started and closed) must join :data:`CLIENTS`."""
    public = {
        value
        for module in (producer, producer.consumer)
        for value in map(lambda name: getattr(module, name), module.__all__)
        if inspect.isclass(value) and issubclass(value, AsyncLifecycle)
    }
    assert public == set(CLIENTS)


@pytest.mark.parametrize("cls", list(CLIENTS), ids=lambda cls: cls.__name__)
async def test_new_running_closed_in_the_one_state_type(
    cls: type[AsyncLifecycle], namesrv: str
) -> None:
    client = CLIENTS[cls](namesrv)
    assert client.state is LifecycleState.NEW
    assert "new" in repr(client)
    async with client:
        assert client.state is LifecycleState.RUNNING
        assert "running" in repr(client)
        with pytest.raises(LocalProtocolError, match=r"start\(\) on a running"):
            await client.start()
    assert client.state is LifecycleState.CLOSED
    await client.aclose()  # again: a no-op
    assert client.state is LifecycleState.CLOSED
    name = cls.__name__
    with pytest.raises(LocalProtocolError, match=rf"start\(\) on a closed .*new {name} "):
        await client.start()


@pytest.mark.parametrize("cls", list(CLIENTS), ids=lambda cls: cls.__name__)
async def test_closing_a_new_client_closes_it_for_good(cls: type[AsyncLifecycle]) -> None:
    client = CLIENTS[cls]("127.0.0.1:1")  # never connected: nothing is opened
    await client.aclose()
    assert client.state is LifecycleState.CLOSED
    with pytest.raises(LocalProtocolError, match=r"start\(\) on a closed"):
        await client.start()


async def test_a_call_before_start_says_to_start_first() -> None:
    for client, call in [
        (PullConsumer(GROUP, "127.0.0.1:1"), lambda c: c.queues(TOPIC)),
        (SimpleConsumer(GROUP, "127.0.0.1:1"), lambda c: c.receive()),
        (DeadLetterQueue(GROUP, "127.0.0.1:1"), lambda c: c.read()),
        (Producer(GROUP, "127.0.0.1:1"), lambda c: c.send(producer.Message(TOPIC, b"x"))),
    ]:
        with pytest.raises(ProducerClosedError, match=r"is not started: use `async with"):
            await call(client)


def test_the_blocking_facades_show_their_client_s_state(namesrv: str) -> None:
    with BlockingProducer("Life_Blocking", namesrv) as blocking:
        assert blocking.state is LifecycleState.RUNNING
    assert blocking.state is LifecycleState.CLOSED
    with BlockingPullConsumer(GROUP, namesrv) as pull:
        assert pull.state is LifecycleState.RUNNING
    assert pull.state is LifecycleState.CLOSED


async def test_closing_waits_for_the_outstanding_work_once_counted() -> None:
    """``Outstanding``: the one counter consumption, the pop consumer and transactions
    close by; idle at once when nothing runs, and again only when the last one leaves."""
    work = Outstanding()
    await work.wait_idle()  # nothing counted: no wait
    work.enter(2)
    work.enter(0)  # no work: still two
    idle = False

    async def closing() -> None:
        nonlocal idle
        await work.wait_idle()
        idle = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(closing)
        await anyio.lowlevel.checkpoint()  # closing waits now
        work.leave()
        await anyio.lowlevel.checkpoint()
        assert not idle and work.count == 1  # one still running
        work.leave()
    assert idle and work.count == 0


class _Toy(AsyncLifecycle):
    """A client whose start waits once, moved by the lifecycle as every client is."""

    _kind = "toy"

    async def start(self) -> None:
        self._refuse_start()
        await anyio.lowlevel.checkpoint()
        self._now_running()

    async def aclose(self) -> None:
        if self._close_begins():
            self._now_closed()


async def test_the_state_moves_only_along_the_diagrams_arrows() -> None:
    toy = _Toy()
    assert toy.state is LifecycleState.NEW
    async with toy:
        assert toy.state is LifecycleState.RUNNING
        with pytest.raises(LocalProtocolError, match="cannot go from running to running"):
            toy._now_running()
    assert toy.state is LifecycleState.CLOSED
    late = _Toy()

    async def starting() -> None:
        with pytest.raises(LocalProtocolError, match="cannot go from closed to running"):
            await late.start()

    async with anyio.create_task_group() as tg:
        tg.start_soon(starting)
        await anyio.lowlevel.checkpoint()  # the start runs up to its wait
        await late.aclose()  # not started yet: closed at once
    assert late.state is LifecycleState.CLOSED  # not running after its close
