"""Life cycle: start, close with drain, cancellation, restarts of brokers and name servers."""

from __future__ import annotations

import asyncio
import warnings

import anyio
import pytest
import sniffio

from producer import LifecycleState, Message, Producer
from producer.errors import (
    ConnectError,
    LocalProtocolError,
    MessageValidationError,
    NameServerError,
    ProducerClosedError,
    ProducerError,
)
from producer.testing import DevClusterThread, FaultSpec
from tests.producer.conftest import TOPIC, make_producer
from tests.testing.interrupt import assert_one_cancellation, interrupted

pytestmark = pytest.mark.anyio


def other_tasks() -> set[object]:
    """Tasks other than the test's own (asyncio only; trio checks via nurseries)."""
    if sniffio.current_async_library() != "asyncio":
        return set()
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}


async def test_closed_producer_refuses_sends(cluster: DevClusterThread) -> None:
    p = make_producer(cluster)
    with pytest.raises(ProducerClosedError, match=r"not started: use `async with"):
        await p.send(Message(TOPIC, b"x"))
    async with p:
        assert p.state is LifecycleState.RUNNING
    assert p.state is LifecycleState.CLOSED
    with pytest.raises(ProducerClosedError, match=r"closed: .*create a new Producer"):
        await p.send(Message(TOPIC, b"x"))
    with pytest.raises(ProducerClosedError):
        p.send_async(Message(TOPIC, b"x"))
    await p.aclose()  # idempotent
    with pytest.raises(LocalProtocolError, match=r"closed producer: .*create a new Producer"):
        async with p:  # re-entering says how to fix it
            pass


def test_the_default_groups_java_refuses_are_refused() -> None:
    from producer.consumer import PushConsumer
    from producer.errors import MessageValidationError

    with pytest.raises(MessageValidationError, match="DEFAULT_PRODUCER is the placeholder"):
        Producer("DEFAULT_PRODUCER", "127.0.0.1:9876")
    with pytest.raises(MessageValidationError, match="DEFAULT_CONSUMER is the placeholder"):
        PushConsumer("DEFAULT_CONSUMER", "127.0.0.1:9876", listener=print)


async def test_start_twice_is_a_local_error(cluster: DevClusterThread) -> None:
    async with make_producer(cluster) as p:
        with pytest.raises(LocalProtocolError):
            await p.start()


async def test_bad_options_are_typed_errors(cluster: DevClusterThread) -> None:
    with pytest.raises(LocalProtocolError, match="send_timeout_ms"):
        Producer("g", cluster.namesrv_addr, send_timeout_ms=0)
    with pytest.raises(LocalProtocolError, match="routing"):
        Producer("g", cluster.namesrv_addr, routing="fastest")  # type: ignore[arg-type]
    with pytest.raises(LocalProtocolError, match="name server"):
        Producer("g", " ; ")
    with pytest.raises(ProducerError, match="group"):
        Producer("bad group!", cluster.namesrv_addr)


async def test_aclose_drains_in_flight_sends(cluster: DevClusterThread) -> None:
    cluster.set_fault("broker-a", FaultSpec(latency_ms=50))
    async with make_producer(cluster) as p:
        futures = [p.send_async(Message(TOPIC, b"%d" % i)) for i in range(60)]
    assert all(f.done() and f.exception() is None for f in futures)
    assert cluster.unique_msg_ids(TOPIC) == {f.result().msg_id for f in futures}


@pytest.mark.parametrize("batching", [True, False])
async def test_aclose_fails_what_cannot_finish_exactly_once(
    cluster: DevClusterThread, batching: bool
) -> None:
    errors: list[ProducerError] = []
    async with make_producer(cluster, close_timeout_ms=100, batching=batching) as p:
        for _ in range(12):  # a connection to every broker: first attempts need no task
            await p.send(Message(TOPIC, b"warm"))
        for name in ("broker-a", "broker-b", "broker-c"):
            cluster.set_fault(name, FaultSpec(blackhole=True))
        futures = [
            p.send_async(Message(TOPIC, b"x"), on_exception=errors.append, timeout_ms=60_000)
            for _ in range(5)
        ]
    assert len(errors) == 5
    assert all(isinstance(e, ProducerClosedError) for e in errors)
    assert all(not e.definitely_not_stored for e in errors)  # they were written
    for future in futures:
        with pytest.raises(ProducerClosedError):
            future.result()


async def test_cancelled_send_leaves_nothing_running(cluster: DevClusterThread) -> None:
    baseline = other_tasks()
    async with make_producer(cluster) as p:
        await p.send(Message(TOPIC, b"warm"))
        before = other_tasks()
        for name in ("broker-a", "broker-b", "broker-c"):
            cluster.set_fault(name, FaultSpec(blackhole=True))
        with anyio.move_on_after(0.1) as scope:
            await p.send(Message(TOPIC, b"x"), timeout_ms=5000)
        assert scope.cancelled_caught
        assert p.in_flight == 0
        assert other_tasks() == before
        for name in ("broker-a", "broker-b", "broker-c"):
            cluster.set_fault(name, FaultSpec())
        result = await p.send(Message(TOPIC, b"after"))
        assert result.msg_id
    assert other_tasks() == baseline  # the producer's own tasks are gone too


async def test_broker_restart_is_recovered(cluster: DevClusterThread) -> None:
    async with make_producer(cluster) as p:
        await p.send(Message(TOPIC, b"before"))
        for name in ("broker-a", "broker-b", "broker-c"):
            cluster.set_fault(name, FaultSpec(down=True))  # closes every connection
        for name in ("broker-a", "broker-b", "broker-c"):
            cluster.clear_fault(name)  # listens again on the same port
        results = [await p.send(Message(TOPIC, b"after")) for _ in range(12)]
    assert {r.queue.broker_name for r in results} == {"broker-a", "broker-b", "broker-c"}


async def test_name_server_restart_is_recovered(cluster: DevClusterThread) -> None:
    cluster.add_topic("Late", 2)
    async with make_producer(cluster) as p:
        await p.send(Message(TOPIC, b"x"))
        cluster.set_namesrv_down(True)
        with pytest.raises(NameServerError, match="no name server answered") as info:
            await p.send(Message("Late", b"x"))
        assert cluster.namesrv_addr in str(info.value)
        assert isinstance(info.value, ConnectError)  # not a NoRouteError: nothing answered
        cluster.set_namesrv_down(False)
        result = await p.send(Message("Late", b"x"))
    assert result.queue.topic == "Late"


async def test_failover_to_the_next_name_server(cluster: DevClusterThread) -> None:
    with DevClusterThread(brokers=1, topics={}, seed=1) as dead:
        dead.set_namesrv_down(True)
        namesrv = [dead.namesrv_addr, cluster.namesrv_addr]
        async with Producer("g", namesrv, routing="off") as p:
            results = [await p.send(Message(TOPIC, b"x")) for _ in range(3)]
    assert len(results) == 3


async def test_heartbeat_and_unregister_reach_the_brokers(cluster: DevClusterThread) -> None:
    async with make_producer(cluster, heartbeat_interval_ms=50) as p:
        await p.send(Message(TOPIC, b"x"))  # the route names the brokers to beat to
        with anyio.fail_after(5):  # the first beat comes ~1 s after start, as Java's
            while p.client_id not in cluster.clients("broker-a"):  # noqa: ASYNC110 - the
                # record lives on the cluster's thread: no event to await from this loop
                await anyio.sleep(0.01)  # polls a condition: the broker's record
        assert "test-group" in cluster.clients("broker-a")[p.client_id]
    assert p.client_id not in cluster.clients("broker-a")


def test_sync_with_points_at_async_with_and_the_blocking_producer(
    cluster: DevClusterThread,
) -> None:
    with pytest.raises(TypeError, match=r"async with.*producer\.blocking"), make_producer(cluster):
        pass


@pytest.mark.parametrize("body", ["text", {"id": 1}, 42])
def test_a_body_that_is_not_bytes_is_a_type_error_at_construction(body: object) -> None:
    with pytest.raises(TypeError, match="body must be bytes") as info:
        Message(TOPIC, body)  # type: ignore[arg-type]
    assert isinstance(info.value, MessageValidationError)  # in the SDK's one hierarchy


async def test_a_producer_dropped_running_warns(cluster: DevClusterThread) -> None:
    p = make_producer(cluster)
    await p.start()
    try:
        with pytest.warns(ResourceWarning, match="unclosed"):
            p.__del__()
    finally:
        await p.aclose()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p.__del__()  # closed: silent


def test_a_producer_used_from_another_loop_says_so(cluster: DevClusterThread) -> None:
    import asyncio

    def from_another_loop(p: Producer) -> list[str]:
        errors = []
        for call in (lambda: p.send(Message(TOPIC, b"x")), p.aclose):
            try:
                asyncio.run(call())  # type: ignore[arg-type]
            except ProducerError as exc:
                errors.append(str(exc))
        return errors

    async def home() -> list[str]:
        async with make_producer(cluster) as p:
            return await asyncio.to_thread(from_another_loop, p)

    errors = asyncio.run(home())
    assert len(errors) == 2
    assert all("started on another event loop" in e for e in errors)


CTRL_C_LOOP = """
import asyncio
from producer import Message, Producer
from producer.testing import DevClusterThread

async def main(addr):
    p = Producer("g", addr)
    try:
        async with p:
            await p.send(Message("T", b"x"))
            print("ready", flush=True)
            while True:
                await p.send(Message("T", b"x"))
    finally:
        print("state", p.state.value, flush=True)

with DevClusterThread(brokers=2, topics={"T": 2}) as cluster:
    asyncio.run(main(cluster.namesrv_addr))
"""


@pytest.mark.timeout(60)
def test_ctrl_c_in_an_asyncio_send_loop_is_one_cancellation_and_a_closed_producer() -> None:
    out, err = interrupted(CTRL_C_LOOP)
    assert out.strip() == "state closed"
    assert_one_cancellation(err)
