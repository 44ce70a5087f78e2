"""``await send``: rules S1-S11 of docs/semantics.md against the dev cluster and its faults."""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Awaitable, Callable

import anyio
import pytest

from producer import AttemptOutcome, Message, RetryPolicy, SendStatus
from producer.errors import (
    BrokerError,
    ConnectError,
    ConnectionLostError,
    Fate,
    MessageIllegalError,
    NoRouteError,
    RemoteProtocolError,
    RequestTimeout,
    SendTimeout,
)
from producer.testing import DevClusterThread, FaultSpec
from tests.helpers.sends import UNEVEN, add_uneven_topic, assert_retries_were_rebuilt
from tests.producer.conftest import TOPIC, make_producer

# Every rule holds with transparent batching on and off (a lone send is never batched,
# and these tests send one at a time: the same path either way, which is what they show).
pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("batching")]

BROKERS = ["broker-a", "broker-b", "broker-c"]


def fault_all(cluster: DevClusterThread, spec: FaultSpec) -> None:
    for name in BROKERS:
        cluster.set_fault(name, spec)


def msg(body: bytes = b"payload") -> Message:
    return Message(TOPIC, body)


def assert_hops_to_another_broker(brokers: list[str]) -> None:
    """S7: each retry goes to a different broker than the attempt before it."""
    for before, after in itertools.pairwise(brokers):
        assert before != after, brokers


# -- S1, S4, S5, S7, S9: attempts per response code ---------------------------------------


@pytest.mark.parametrize("policy", [RetryPolicy.java_4_9(), RetryPolicy.default()], ids=str)
@pytest.mark.parametrize("code", [1, 14, 16, 17, 204, 205])
async def test_s1_s4_retriable_code_uses_all_attempts_on_other_brokers(
    cluster: DevClusterThread, policy: RetryPolicy, code: int
) -> None:
    fault_all(cluster, FaultSpec(error_code=code))
    async with make_producer(cluster, retry_policy=policy) as p:
        with pytest.raises(BrokerError) as info:
            await p.send(msg())
    error = info.value
    assert error.code == code
    assert [a.outcome for a in error.attempts] == [AttemptOutcome.BROKER_ERROR] * 3
    assert_hops_to_another_broker([a.broker_name for a in error.attempts])
    assert error.fate is Fate.NOT_STORED
    assert cluster.message_count(TOPIC) == 0


@pytest.mark.parametrize("policy", [RetryPolicy.java_4_9(), RetryPolicy.default()], ids=str)
@pytest.mark.parametrize("code", [3, 13, 29])
async def test_s5_non_retriable_code_raises_after_one_attempt(
    cluster: DevClusterThread, policy: RetryPolicy, code: int
) -> None:
    fault_all(cluster, FaultSpec(error_code=code))
    async with make_producer(cluster, retry_policy=policy) as p:
        with pytest.raises(BrokerError) as info:
            await p.send(msg())
    assert info.value.code == code
    assert len(info.value.attempts) == 1
    if code == 13:
        assert isinstance(info.value, MessageIllegalError)


@pytest.mark.parametrize(
    ("policy", "attempts"),
    [(RetryPolicy.java_4_9(), 1), (RetryPolicy.java_5_3(), 3), (RetryPolicy.default(), 3)],
    ids=["java_4_9", "java_5_3", "default"],
)
async def test_s4_system_busy_retried_by_5_3_and_default_only(
    cluster: DevClusterThread, policy: RetryPolicy, attempts: int
) -> None:
    fault_all(cluster, FaultSpec(error_code=2))
    async with make_producer(cluster, retry_policy=policy) as p:
        with pytest.raises(BrokerError) as info:
            await p.send(msg())
    assert len(info.value.attempts) == attempts


@pytest.mark.parametrize("sending", ["send", "send_async", "send_batch"])
async def test_s4_a_throttled_send_waits_its_backoff_before_each_retry(
    cluster: DevClusterThread, sending: str
) -> None:
    # Full jitter draws each back-off from [ceiling/2, ceiling): two retries wait at least
    # one whole ceiling, however fast or slow the machine answers.
    ceiling_ms = 150.0
    policy = dataclasses.replace(
        RetryPolicy.default(), backoff_base_ms=ceiling_ms, backoff_max_ms=ceiling_ms
    )
    fault_all(cluster, FaultSpec(error_code=215))
    async with make_producer(cluster, retry_policy=policy, batching=False) as p:
        sends: dict[str, Callable[[], Awaitable[object]]] = {
            "send": lambda: p.send(msg()),
            "send_async": lambda: p.send_async(msg()),
            "send_batch": lambda: p.send_batch([msg(), msg()]),
        }
        started = time.monotonic()
        with pytest.raises(BrokerError) as info:
            await sends[sending]()
        waited_s = time.monotonic() - started
    assert [a.code for a in info.value.attempts] == [215] * 3
    assert waited_s >= 2 * (ceiling_ms / 2) / 1000.0


@pytest.mark.parametrize("retries", [0, 1, 4])
async def test_s1_attempts_are_one_plus_retry_times(
    cluster: DevClusterThread, retries: int
) -> None:
    fault_all(cluster, FaultSpec(error_code=14))
    async with make_producer(cluster, retry_times_when_send_failed=retries) as p:
        with pytest.raises(BrokerError) as info:
            await p.send(msg())
    assert len(info.value.attempts) == retries + 1


async def test_s4_s7_retry_after_broker_error_lands_on_a_healthy_broker(
    cluster: DevClusterThread,
) -> None:
    cluster.set_fault("broker-a", FaultSpec(error_code=14))
    async with make_producer(cluster) as p:
        results = [await p.send(msg()) for _ in range(12)]
    for result in results:
        assert result.queue.broker_name != "broker-a"
        if len(result.attempts) == 2:
            assert result.attempts[0].broker_name == "broker-a"
    assert any(len(r.attempts) == 2 for r in results)
    assert cluster.message_count(TOPIC) == 12


@pytest.mark.parametrize(
    ("spec", "error_type"),
    [
        (FaultSpec(down=True), ConnectError),
        (FaultSpec(reset=True), ConnectionLostError),
        # bad bytes kill the connection: pending requests see it lost, the cause attached
        (FaultSpec(garbage=True), ConnectionLostError),
    ],
    ids=["down", "reset", "garbage"],
)
async def test_s4_transport_failures_are_retried_on_another_broker(
    cluster: DevClusterThread, spec: FaultSpec, error_type: type[Exception]
) -> None:
    cluster.set_fault("broker-a", spec)
    cluster.set_fault("broker-b", spec)
    async with make_producer(cluster) as p:
        results = [await p.send(msg()) for _ in range(6)]
    assert all(r.queue.broker_name == "broker-c" for r in results)
    failed = [a for r in results for a in r.attempts if a.outcome is not AttemptOutcome.OK]
    assert failed, "some send should have hit a failing broker first"
    fault_all(cluster, spec)
    async with make_producer(cluster) as p:
        with pytest.raises(error_type) as info:
            await p.send(msg())
    assert len(info.value.attempts) == 3  # type: ignore[attr-defined]
    if spec.garbage:
        assert isinstance(info.value.__cause__, RemoteProtocolError)


# -- S2, S3: one budget -------------------------------------------------------------------


async def test_s2_blackholed_cluster_fails_with_send_timeout_within_budget(
    cluster: DevClusterThread,
) -> None:
    async with make_producer(cluster) as p:
        await p.send(msg())  # route and connections are warm: the budget is all attempts
        fault_all(cluster, FaultSpec(blackhole=True))
        started = time.monotonic()
        with pytest.raises(SendTimeout) as info:
            await p.send(msg(), timeout_ms=500)
        elapsed_ms = (time.monotonic() - started) * 1000
    assert isinstance(info.value, TimeoutError)
    assert 500 <= elapsed_ms <= 550, elapsed_ms
    assert [a.outcome for a in info.value.attempts] == [AttemptOutcome.TIMEOUT] * 3
    assert info.value.fate is Fate.UNKNOWN  # written, never answered


async def test_an_unknown_fate_resent_under_the_errors_msg_id_is_one_message(
    cluster: DevClusterThread,
) -> None:
    """A send stored but answered too late fails UNKNOWN; its error names the UNIQ_KEY,
    and re-sending under it leaves two copies of one message for consumers to de-duplicate."""
    async with make_producer(cluster, retry_times_when_send_failed=0, batching=False) as p:
        await p.send(msg())
        before = cluster.unique_msg_ids(TOPIC)
        fault_all(cluster, FaultSpec(latency_ms=400))
        with pytest.raises(SendTimeout) as info:
            await p.send(msg(b"once"), timeout_ms=100)
        fault_all(cluster, FaultSpec())
        error = info.value
        assert error.fate is Fate.UNKNOWN and error.msg_id is not None
        again = await p.send(Message(TOPIC, b"once", msg_id=error.msg_id))
        fault_all(cluster, FaultSpec(latency_ms=50))
        async_error = p.send_async(msg(), timeout_ms=1)  # a future's error names its id too
        with pytest.raises(SendTimeout) as late:
            await async_error
        fault_all(cluster, FaultSpec())
    assert again.msg_id == error.msg_id
    assert late.value.msg_id == async_error.msg_id
    stored = [m for m in cluster.messages(TOPIC) if m.body == b"once"]
    assert len(stored) == 2
    assert cluster.unique_msg_ids(TOPIC) - before >= {error.msg_id}


async def test_s3_hung_first_broker_does_not_eat_the_retries(cluster: DevClusterThread) -> None:
    """The hung attempt is capped at its share of the budget (a third: 3 attempts left), so
    the retry on broker-b fits in the same budget. Its break - the whole budget to the
    first attempt, as Java 4.9 does (the test below) - ends the send with SendTimeout after
    one attempt: the outcome tells them apart, with no wall-clock margin. The budget leaves
    the retry two thirds of it (1000 ms) however late a loaded machine runs the timer."""
    budget_ms = 1500
    cluster.add_topic("Two", 2, brokers=["broker-a", "broker-b"])
    cluster.set_fault("broker-a", FaultSpec(blackhole=True))
    hung = Message("Two", b"x")
    async with make_producer(cluster) as p:
        results = [await p.send(hung, timeout_ms=budget_ms) for _ in range(4)]
    retried = [r for r in results if len(r.attempts) == 2]
    assert retried, "round-robin must put some first attempts on broker-a"
    for r in retried:
        first, second = r.attempts
        assert (first.broker_name, first.outcome) == ("broker-a", AttemptOutcome.TIMEOUT)
        assert (second.broker_name, r.queue.broker_name) == ("broker-b", "broker-b")


async def test_s3_java_4_9_lets_the_hung_broker_take_the_whole_budget(
    cluster: DevClusterThread,
) -> None:
    """rocketmq#4720, reproduced on purpose by the faithful preset."""
    cluster.add_topic("Two", 2, brokers=["broker-a", "broker-b"])
    cluster.set_fault("broker-a", FaultSpec(blackhole=True))
    hung = Message("Two", b"x")
    outcomes = []
    async with make_producer(cluster, retry_policy=RetryPolicy.java_4_9()) as p:
        for _ in range(4):
            try:
                outcomes.append(await p.send(hung, timeout_ms=300))
            except SendTimeout as exc:
                outcomes.append(exc)
    timeouts = [o for o in outcomes if isinstance(o, SendTimeout)]
    assert timeouts
    assert all(len(t.attempts) == 1 for t in timeouts)


# -- S6: non-OK store status ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (10, SendStatus.FLUSH_DISK_TIMEOUT),
        (11, SendStatus.SLAVE_NOT_AVAILABLE),
        (12, SendStatus.FLUSH_SLAVE_TIMEOUT),
    ],
)
async def test_s6_not_store_ok_status_is_returned_without_retry(
    cluster: DevClusterThread, code: int, status: SendStatus
) -> None:
    fault_all(cluster, FaultSpec(store_status=code))
    async with make_producer(cluster) as p:
        result = await p.send(msg())
    assert result.status is status
    assert len(result.attempts) == 1
    assert cluster.unique_msg_ids(TOPIC) == {result.msg_id}


async def test_s6_retry_another_broker_when_not_store_ok(cluster: DevClusterThread) -> None:
    fault_all(cluster, FaultSpec(store_status=10))
    async with make_producer(cluster, retry_another_broker_when_not_store_ok=True) as p:
        result = await p.send(msg())
    assert result.status is SendStatus.FLUSH_DISK_TIMEOUT
    assert [a.outcome for a in result.attempts] == [AttemptOutcome.NOT_STORED_OK] * 3
    assert_hops_to_another_broker([a.broker_name for a in result.attempts])
    # every attempt was stored: same UNIQ_KEY three times (the price of this option)
    assert cluster.message_count(TOPIC) == 3
    assert cluster.unique_msg_ids(TOPIC) == {result.msg_id}


# -- S7, S8: fresh queue and fault feedback ----------------------------------------------


async def test_s7_retry_rebuilds_the_request_for_the_new_queue(cluster: DevClusterThread) -> None:
    add_uneven_topic(cluster)
    cluster.set_fault("broker-a", FaultSpec(error_code=1))
    async with make_producer(cluster) as p:
        results = [await p.send(Message(UNEVEN, b"x")) for _ in range(16)]
    assert_retries_were_rebuilt(cluster, results)


async def test_s8_classic_routing_avoids_a_broker_after_an_error(cluster: DevClusterThread) -> None:
    cluster.set_fault("broker-a", FaultSpec(error_code=14))
    async with make_producer(cluster, routing="classic_4_9") as p:
        first_hits = []
        for _ in range(20):
            result = await p.send(msg())
            first_hits.append(result.attempts[0].broker_name)
        assert not p.router.is_available("broker-a", int(anyio.current_time() * 1000))
    # at most one send tried broker-a: the one that taught the tracker
    assert first_hits.count("broker-a") <= 1


async def test_s8_cancelled_attempt_is_not_reported_as_a_fault(cluster: DevClusterThread) -> None:
    cluster.set_fault("broker-a", FaultSpec(blackhole=True))
    cluster.set_fault("broker-b", FaultSpec(blackhole=True))
    cluster.set_fault("broker-c", FaultSpec(blackhole=True))
    async with make_producer(cluster, routing="classic_4_9") as p:
        with anyio.move_on_after(0.2):
            await p.send(msg(), timeout_ms=5000)
        now = int(anyio.current_time() * 1000)
        assert all(p.router.is_available(b, now) for b in BROKERS)


async def test_s8_a_send_cancelled_while_its_request_is_out_lets_go_of_everything(
    cluster: DevClusterThread,
) -> None:
    # Connections open to every broker first: on asyncio the first attempt is then the
    # connection's loop future, awaited in the caller's own coroutine (Producer.send,
    # through Sender.start_first).
    async with make_producer(cluster, routing="classic_4_9") as p:
        for _ in range(12):
            await p.send(msg())
        for broker in BROKERS:
            cluster.set_fault(broker, FaultSpec(blackhole=True))
        with anyio.move_on_after(0.2) as scope:
            await p.send(msg(), timeout_ms=5000)
        assert scope.cancelled_caught
        now = int(anyio.current_time() * 1000)
        assert all(p.router.is_available(b, now) for b in BROKERS)  # no fault learnt
        assert p.in_flight == 0  # its slot freed
        with anyio.fail_after(1):
            await p.flush()  # its ticket ended
        for broker in BROKERS:
            cluster.clear_fault(broker)


# -- S10, S11 -------------------------------------------------------------------------------


async def test_s10_unknown_topic_is_a_no_route_error_when_auto_create_is_off(
    cluster: DevClusterThread,
) -> None:
    async with make_producer(cluster, auto_create_topic=False) as p:
        with pytest.raises(NoRouteError) as info:
            await p.send(Message("NoSuchTopic", b"x"))
    assert info.value.topic == "NoSuchTopic"
    assert info.value.code == 17  # the name server's TOPIC_NOT_EXIST
    assert "NoSuchTopic" in str(info.value)
    assert p.namesrv_addrs[0] in str(info.value)
    assert "mqadmin updateTopic" in str(info.value)
    assert cluster.message_count("NoSuchTopic") == 0


async def test_s10_a_fresh_topic_is_created_through_tbw102_on_first_send(
    cluster: DevClusterThread,
) -> None:
    async with make_producer(cluster) as p:
        first = await p.send(Message("Fresh", b"1"))
        assert first.queue.queue_id < 4  # TBW102's queues, capped at defaultTopicQueueNums
        second = await p.send(Message("Fresh", b"2"))
    assert (first.status, second.status) == (SendStatus.SEND_OK, SendStatus.SEND_OK)
    assert cluster.message_count("Fresh") == 2


async def test_s10_no_auto_create_broker_names_how_to_create_the_topic() -> None:
    with DevClusterThread(brokers=2, topics={}, auto_create_topic=False, seed=0) as cluster:
        async with make_producer(cluster) as p:
            with pytest.raises(NoRouteError, match="no broker auto-creates") as info:
                await p.send(Message("Fresh", b"x"))
    assert info.value.code == 17
    assert "topics=" in str(info.value) and "--topic NAME:QUEUES" in str(info.value)


async def test_s10_read_only_topic_has_no_route(cluster: DevClusterThread) -> None:
    cluster.add_topic("ReadOnly", 4, perm=4)
    async with make_producer(cluster) as p:
        with pytest.raises(NoRouteError, match="writable"):
            await p.send(Message("ReadOnly", b"x"))


async def test_s11_unknown_fate_is_not_retried_when_asked(cluster: DevClusterThread) -> None:
    fault_all(cluster, FaultSpec(blackhole=True))
    policy = RetryPolicy(retry_unknown_fate=False)
    async with make_producer(cluster, retry_policy=policy) as p:
        with pytest.raises(RequestTimeout) as info:
            await p.send(msg(), timeout_ms=600)
    assert len(info.value.attempts) == 1
    assert info.value.fate is Fate.UNKNOWN
