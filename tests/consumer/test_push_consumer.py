"""The push consumer against the dev cluster: retries through %RETRY% with delay levels,
the DLQ, partial acknowledgement, offsets that never pass a message in flight, and a
rebalance between two members (docs/consuming.md 5.3 items 6-9, 13)."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from producer import Message, Producer
from producer.consumer import (
    ConsumeContext,
    ConsumeRetryPolicy,
    ConsumeStatus,
    PushConsumer,
    ReceivedMessage,
)
from producer.errors import InvalidOptionError, LocalProtocolError
from producer.testing import DevClusterThread, FaultSpec
from tests.helpers.push import FAST, FAST_LEVELS, consumer, publish, until

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=2, topics={"Orders": 2}, delay_levels=FAST_LEVELS) as c:
        yield c


async def test_reconsume_later_is_redelivered_through_the_retry_topic(
    cluster: DevClusterThread,
) -> None:
    (msg_id,) = await publish(cluster, [b"flaky"])
    deliveries: list[ReceivedMessage] = []

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        deliveries.extend(messages)
        return ConsumeStatus.RECONSUME_LATER if len(deliveries) < 3 else ConsumeStatus.SUCCESS

    async with consumer(cluster, listener):
        await until(lambda: len(deliveries) == 3)
    assert [m.reconsume_times for m in deliveries] == [0, 1, 2]
    assert {m.msg_id for m in deliveries} == {msg_id}  # UNIQ_KEY survives every hop
    assert {m.topic for m in deliveries} == {"Orders"}  # the listener never sees %RETRY%
    assert [m.queue.topic for m in deliveries][1:] == ["%RETRY%cg", "%RETRY%cg"]
    copy = deliveries[1].properties
    assert copy["RETRY_TOPIC"] == "Orders"
    assert copy["ORIGIN_MESSAGE_ID"] == deliveries[0].offset_msg_id
    assert copy["DELAY"] == "3" and copy["REAL_TOPIC"] == "%RETRY%cg"  # 3 + reconsumeTimes
    assert deliveries[2].properties["DELAY"] == "4"


async def test_an_exception_counts_as_reconsume_later(cluster: DevClusterThread) -> None:
    await publish(cluster, [b"boom"])
    calls: list[int] = []

    async def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        calls.append(messages[0].reconsume_times)
        if len(calls) == 1:
            raise RuntimeError("listener bug")
        return ConsumeStatus.SUCCESS

    async with consumer(cluster, listener):
        await until(lambda: len(calls) == 2)
    assert calls == [0, 1]


async def test_dead_letter_after_max_reconsume_times(cluster: DevClusterThread) -> None:
    (msg_id,) = await publish(cluster, [b"poison"])
    calls: list[int] = []

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        calls.append(messages[0].reconsume_times)
        return ConsumeStatus.RECONSUME_LATER

    async with consumer(cluster, listener, max_reconsume_times=1):
        await until(lambda: len(cluster.messages("%DLQ%cg")) == 1)
        await anyio.sleep(0.3)  # nothing more is delivered once it is dead
    assert calls == [0, 1]  # delivered max + 1 times
    (dead,) = cluster.messages("%DLQ%cg")
    assert dead.uniq_key == msg_id and dead.reconsume_times == 2
    assert dead.properties["DELAY"] == "0" and dead.properties["RETRY_TOPIC"] == "Orders"


async def test_delay_level_minus_one_goes_straight_to_the_dlq(cluster: DevClusterThread) -> None:
    await publish(cluster, [b"hopeless"])
    calls: list[int] = []

    def listener(messages: list[ReceivedMessage], context: ConsumeContext) -> ConsumeStatus:
        calls.append(messages[0].reconsume_times)
        context.delay_level = -1
        return ConsumeStatus.RECONSUME_LATER

    async with consumer(cluster, listener):
        await until(lambda: len(cluster.messages("%DLQ%cg")) == 1)
    assert calls == [0]
    assert cluster.messages("%RETRY%cg") == []


async def test_ack_index_retries_only_the_rest_of_the_batch(cluster: DevClusterThread) -> None:
    async with Producer("pg", namesrv=cluster.namesrv_addr) as producer:
        for body in (b"a", b"b", b"c", b"d"):
            await producer.send(Message("Orders", body), order_key="one-queue")
    seen: list[tuple[bytes, int]] = []

    def listener(messages: list[ReceivedMessage], context: ConsumeContext) -> ConsumeStatus:
        seen.extend((m.body, m.reconsume_times) for m in messages)
        context.ack_index = 1  # a and b done; c and d retried
        return ConsumeStatus.SUCCESS

    async with consumer(cluster, listener, consume_batch_size=4):
        await until(lambda: len(seen) >= 6)
    assert sorted(seen) == [(b"a", 0), (b"b", 0), (b"c", 0), (b"c", 1), (b"d", 0), (b"d", 1)]


async def test_committed_offset_never_passes_a_message_in_flight(cluster: DevClusterThread) -> None:
    async with Producer("pg", namesrv=cluster.namesrv_addr) as producer:
        results = [
            await producer.send(Message("Orders", f"m{i}".encode()), order_key="one-queue")
            for i in range(10)
        ]
    queue = results[0].queue
    slow = results[3].queue_offset
    release = anyio.Event()
    done: list[int] = []

    async def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        if messages[0].queue_offset == slow:
            await release.wait()
        done.append(messages[0].queue_offset)
        return ConsumeStatus.SUCCESS

    def committed() -> int | None:
        return cluster.consumer_offsets(queue.broker_name).get("Orders@cg", {}).get(queue.queue_id)

    async with consumer(cluster, listener):
        await until(lambda: len(done) == 9)
        await until(lambda: committed() == slow)
        await anyio.sleep(0.2)  # several persist rounds later it still waits for the slow one
        assert committed() == slow
        release.set()
        await until(lambda: committed() == results[-1].queue_offset + 1)


async def test_two_members_split_the_queues_and_consume_everything(
    cluster: DevClusterThread,
) -> None:
    ids = set(await publish(cluster, [f"m{i}".encode() for i in range(40)]))
    seen: dict[str, set[str]] = {"one": set(), "two": set()}

    def member(name: str) -> PushConsumer:
        def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
            seen[name].update(m.msg_id for m in messages)
            return ConsumeStatus.SUCCESS

        c = PushConsumer(
            "cg", cluster.namesrv_addr, listener=listener, consume_from="first",
            instance_name=name, **FAST,
        )  # fmt: skip
        c.subscribe("Orders")
        return c

    async with member("one") as one, member("two") as two:

        def split() -> bool:
            a = {q for q in one.assigned_queues if q.topic == "Orders"}
            b = {q for q in two.assigned_queues if q.topic == "Orders"}
            return len(a) == len(b) == 2 and not a & b

        await until(split)
        await until(lambda: seen["one"] | seen["two"] == ids)


async def test_bad_setup_is_refused_with_the_fix() -> None:
    with pytest.raises(InvalidOptionError, match="clustering"):
        PushConsumer("g", "127.0.0.1:9876", model="fanout")
    with pytest.raises(InvalidOptionError, match="consume_from"):
        PushConsumer("g", "127.0.0.1:9876", consume_from="middle")
    with pytest.raises(InvalidOptionError, match="max_concurrency"):
        PushConsumer("g", "127.0.0.1:9876", max_concurrency=0)
    c = PushConsumer("g", "127.0.0.1:9876")
    with pytest.raises(InvalidOptionError, match="listener"):
        await c.start()
    c = PushConsumer("g", "127.0.0.1:9876", listener=lambda m: ConsumeStatus.SUCCESS)
    with pytest.raises(InvalidOptionError, match="subscribe"):
        await c.start()
    with pytest.raises(InvalidOptionError, match="topic"):
        c.subscribe("")
    await c.aclose()
    with pytest.raises(LocalProtocolError):
        c.subscribe("Orders")


async def test_a_failed_send_back_falls_back_to_sending_to_the_retry_topic(
    cluster: DevClusterThread,
) -> None:
    (msg_id,) = await publish(cluster, [b"orphan"])
    deliveries: list[ReceivedMessage] = []

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        deliveries.extend(messages)
        if len(deliveries) == 1:
            # The broker can no longer find the record by its commit-log offset (as when
            # the file was removed): CONSUMER_SEND_MSG_BACK answers SYSTEM_ERROR.
            broker = cluster.cluster._handlers[messages[0].queue.broker_name]
            broker.store._by_commit_offset.clear()  # type: ignore[union-attr]
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.SUCCESS

    async with consumer(cluster, listener):
        await until(lambda: len(deliveries) == 2)
    retried = deliveries[1]
    assert retried.msg_id == msg_id and retried.topic == "Orders"
    assert retried.reconsume_times == 1
    assert retried.properties["RECONSUME_TIME"] == "1"
    assert retried.properties["MAX_RECONSUME_TIMES"] == "16"
    assert retried.properties["DELAY"] == "3"  # 3 + reconsume_times, the user's level ignored
    assert retried.properties["ORIGIN_MESSAGE_ID"] == msg_id


async def test_pulls_start_only_once_the_broker_knows_the_subscription_version(
    cluster: DevClusterThread, caplog: pytest.LogCaptureFixture
) -> None:
    """Java dispatches pulls before the heartbeat with the new subVersion, so its first
    pulls are refused (25) and wait 3 s; ours wait for that heartbeat."""
    await publish(cluster, [b"first"])
    seen: list[bytes] = []

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        seen.extend(m.body for m in messages)
        return ConsumeStatus.SUCCESS

    with caplog.at_level("DEBUG", logger="producer.consumer"):
        async with consumer(cluster, listener):
            await until(lambda: seen == [b"first"])
    refused = [r.getMessage() for r in caplog.records if "not latest" in r.getMessage()]
    assert refused == []


async def test_the_retry_policy_dead_letters_hopeless_errors_and_sets_the_delays(
    cluster: DevClusterThread,
) -> None:
    await publish(cluster, [b"unparseable", b"flaky"])
    tries: dict[bytes, list[int]] = {b"unparseable": [], b"flaky": []}

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        (message,) = messages
        tries[message.body].append(message.reconsume_times)
        if message.body == b"unparseable":
            raise ValueError("not JSON")
        if message.reconsume_times < 2:
            raise ConnectionError("the database blinked")
        return ConsumeStatus.SUCCESS

    policy = ConsumeRetryPolicy(dead_letter_on=(ValueError,), delay_levels=(2, 5))
    async with consumer(cluster, listener, retry_policy=policy):
        await until(lambda: len(tries[b"flaky"]) == 3 and len(cluster.messages("%DLQ%cg")) == 1)
    assert tries == {b"unparseable": [0], b"flaky": [0, 1, 2]}
    (dead,) = cluster.messages("%DLQ%cg")
    assert dead.body == b"unparseable"
    delays = [m.properties["DELAY"] for m in cluster.messages("%RETRY%cg")]
    assert delays == ["2", "5"]  # the policy's level per attempt, not the broker's 3, 4


@pytest.mark.parametrize("window", [None, 60_000])
async def test_the_idempotency_guard_drops_a_redelivered_success(
    cluster: DevClusterThread, window: int | None
) -> None:
    (msg_id,) = await publish(cluster, [b"pay order 7"])
    seen: list[str] = []

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        seen.extend(m.msg_id for m in messages)
        return ConsumeStatus.SUCCESS

    async with consumer(cluster, listener, idempotency_window_ms=window) as c:
        await until(lambda: len(seen) == 1)
        async with Producer("pg", namesrv=cluster.namesrv_addr) as producer:
            # The same message again, as a producer retry after a lost answer sends it.
            await producer.send(Message("Orders", b"pay order 7", msg_id=msg_id))
            await producer.send(Message("Orders", b"next"))
        await until(lambda: len(seen) + c.stats["duplicates_dropped"] == 3)
    expected = 1 if window else 2
    assert seen.count(msg_id) == expected
    assert c.stats["duplicates_dropped"] == 2 - expected


async def test_a_listener_stuck_past_the_consume_timeout_is_sent_back(
    cluster: DevClusterThread,
) -> None:
    """Java's cleanExpiredMsg: the stuck message goes back (level 3) so the offset moves on;
    the stuck call may still finish, and the message is then consumed twice."""
    (msg_id,) = await publish(cluster, [b"slow"])
    release = anyio.Event()
    calls: list[int] = []

    async def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        calls.append(messages[0].reconsume_times)
        if len(calls) == 1:
            await release.wait()  # stuck until the copy has been consumed
        return ConsumeStatus.SUCCESS

    async with consumer(cluster, listener, consume_timeout_ms=200) as c:
        await until(lambda: calls == [0, 1])  # the copy arrived while the first call hangs
        queue = next(q for q in c.assigned_queues if q.topic == "Orders" and c.offsets.read(q))
        assert c.offsets.read(queue) == 1  # the offset passed the stuck message
        release.set()
        await until(lambda: c.stats["in_flight"] == 0)
    (copy,) = cluster.messages("%RETRY%cg")
    assert copy.uniq_key == msg_id and copy.properties["DELAY"] == "3"
    assert calls == [0, 1]


async def test_delay_level_one_is_the_level_the_retry_waits(cluster: DevClusterThread) -> None:
    await publish(cluster, [b"soon"])
    deliveries: list[ReceivedMessage] = []

    def listener(messages: list[ReceivedMessage], context: ConsumeContext) -> ConsumeStatus:
        deliveries.extend(messages)
        context.delay_level = 1
        return ConsumeStatus.RECONSUME_LATER if len(deliveries) == 1 else ConsumeStatus.SUCCESS

    async with consumer(cluster, listener):
        await until(lambda: len(deliveries) == 2)
    assert deliveries[1].properties["DELAY"] == "1"  # the listener's level, not 3


async def test_when_send_back_and_its_fallback_fail_the_message_is_consumed_locally(
    cluster: DevClusterThread,
) -> None:
    (msg_id,) = await publish(cluster, [b"stranded"])
    for name in cluster.broker_names:  # every send, the fallback's too, is refused
        cluster.set_fault(name, FaultSpec(error_code=14))
    deliveries: list[ReceivedMessage] = []
    committed_while_waiting: list[int | None] = []

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        deliveries.extend(messages)
        if len(deliveries) == 1:
            broker = cluster.cluster._handlers[messages[0].queue.broker_name]
            broker.store._by_commit_offset.clear()  # type: ignore[union-attr]  # send-back fails
            return ConsumeStatus.RECONSUME_LATER
        queue = messages[0].queue
        offsets = cluster.consumer_offsets(queue.broker_name).get("Orders@cg", {})
        committed_while_waiting.append(offsets.get(queue.queue_id))
        return ConsumeStatus.SUCCESS

    async with consumer(cluster, listener, local_retry_delay_ms=200):
        await until(lambda: len(deliveries) == 2)
    first, again = deliveries
    assert again.msg_id == msg_id and again.queue == first.queue  # not through %RETRY%
    assert again.reconsume_times == 1
    assert committed_while_waiting in ([None], [first.queue_offset])  # held, never passed
    assert cluster.messages("%RETRY%cg") == []


async def test_tags_are_filtered_by_hash_on_the_broker_and_exactly_on_the_client(
    cluster: DevClusterThread,
) -> None:
    # "Aa" and "BB" have the same Java hashCode: the broker's tag-code filter lets "BB"
    # through, and the client's exact re-filter drops it.
    for tag in ("Aa", "BB", "TagB", "TagC"):
        await publish(cluster, [tag.encode()], tags=tag)
    seen: list[bytes] = []

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        seen.extend(m.body for m in messages)
        return ConsumeStatus.SUCCESS

    c = PushConsumer("cg", cluster.namesrv_addr, listener=listener, consume_from="first", **FAST)
    c.subscribe("Orders", "Aa || TagB")

    def consumed_to_the_end() -> bool:
        total = 0
        for queue in c.assigned_queues:
            if queue.topic == "Orders":
                total += c.offsets.read(queue) or 0
        return total == 4  # filtered messages are passed over too (correctTagsOffset)

    async with c:
        await until(lambda: sorted(seen) == [b"Aa", b"TagB"] and consumed_to_the_end())
