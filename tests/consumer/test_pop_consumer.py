"""``PopConsumer`` (the push consumer's listener over pop, issue 38) on asyncio and trio
against the dev cluster in 5.x mode, on a clock the test moves: retries hide the message
for the pop delay table's step and it comes back through the pop retry topic; past the
maximum it goes to the dead-letter queue; consumers share queues; no offset is stored."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from producer import Message, Producer
from producer._consume.pop_retry import POP_DELAYS_MS, PopAction, pop_step
from producer.consumer import ConsumeStatus, PopConsumer, PoppedMessage
from producer.errors import PopUnsupportedError
from producer.testing import DevClusterThread
from tests.helpers.clocks import MovingClock

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]
TOPIC, GROUP = "Orders", "PopPushGroup"


@pytest.fixture
def clock() -> MovingClock:
    return MovingClock()


@pytest.fixture
def cluster(clock: MovingClock) -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=1, topics={TOPIC: 2}, broker_version="5.x", clock_ms=clock) as c:
        yield c


async def send(cluster: DevClusterThread, count: int) -> None:
    async with Producer("pg", namesrv=cluster.namesrv_addr) as producer:
        for i in range(count):
            await producer.send(Message(TOPIC, b"m%d" % i, keys=[f"k{i}"]))


class Seen:
    """What the listener got, and a way to wait (bounded) until it got ``n`` calls."""

    def __init__(self, answer: object) -> None:
        self.answer = answer
        self.calls: list[list[PoppedMessage]] = []
        self._changed = anyio.Event()

    async def __call__(self, messages: list[PoppedMessage]) -> object:
        self.calls.append(list(messages))
        self._changed.set()
        answer = self.answer(messages) if callable(self.answer) else self.answer
        return answer

    async def until(self, calls: int) -> None:
        with anyio.fail_after(20):
            while len(self.calls) < calls:
                self._changed = anyio.Event()
                await self._changed.wait()

    @property
    def bodies(self) -> list[bytes]:
        return sorted(m.body for call in self.calls for m in call)


def pop_consumer(
    cluster: DevClusterThread, clock: MovingClock, seen: Seen, **options: object
) -> PopConsumer:
    made = PopConsumer(
        GROUP, cluster.namesrv_addr, listener=seen, clock=clock, await_duration_ms=60_000,
        invisible_duration_ms=30_000, **options,  # type: ignore[arg-type]
    )  # fmt: skip
    made.subscribe(TOPIC)
    return made


async def test_every_message_consumed_once_and_acked(
    cluster: DevClusterThread, clock: MovingClock
) -> None:
    seen = Seen(ConsumeStatus.SUCCESS)
    await send(cluster, 6)
    async with pop_consumer(cluster, clock, seen) as consumer:
        await seen.until(6)
        await consumer.wait_idle()
        clock.advance(cluster, 600_000)  # long past every invisible time: nothing comes back
        await consumer.wait_idle()
        assert consumer.stats["acked"] == 6
    assert seen.bodies == [b"m%d" % i for i in range(6)]
    assert cluster.message_count(f"%RETRY%{GROUP}_{TOPIC}") == 0


async def test_reconsume_later_hides_it_for_the_first_pop_delay_then_it_comes_back(
    cluster: DevClusterThread, clock: MovingClock
) -> None:
    def once_later(messages: list[PoppedMessage]) -> ConsumeStatus:
        first = messages[0].reconsume_times == 0
        return ConsumeStatus.RECONSUME_LATER if first else ConsumeStatus.SUCCESS

    seen = Seen(once_later)
    await send(cluster, 1)
    async with pop_consumer(cluster, clock, seen) as consumer:
        await seen.until(1)
        await consumer.wait_idle()
        assert consumer.stats["retried"] == 1
        clock.advance(cluster, POP_DELAYS_MS[0] - 1)
        clock.advance(cluster, 1)  # 10 s after the change: revived into the retry topic
        clock.advance(cluster, 60_000)  # the pop held before then runs out; the next finds it
        await seen.until(2)
        await consumer.wait_idle()
        again = seen.calls[1][0]
        assert (again.body, again.reconsume_times, again.topic) == (b"m0", 1, TOPIC)
        assert again.receipt.handle.retry and consumer.stats["acked"] == 1


async def test_past_the_maximum_it_goes_to_the_dead_letter_queue(
    cluster: DevClusterThread, clock: MovingClock
) -> None:
    seen = Seen(ConsumeStatus.RECONSUME_LATER)
    await send(cluster, 1)
    async with pop_consumer(cluster, clock, seen, max_reconsume_times=1) as consumer:
        await seen.until(1)
        await consumer.wait_idle()
        clock.advance(cluster, POP_DELAYS_MS[0])
        clock.advance(cluster, 60_000)
        await seen.until(2)
        await consumer.wait_idle()
        assert consumer.stats["dead_lettered"] == 1
        clock.advance(cluster, 600_000)
        await consumer.wait_idle()
    (dead,) = cluster.messages(f"%DLQ%{GROUP}")
    assert dead.body == b"m0" and len(seen.calls) == 2


async def test_two_consumers_of_a_group_consume_each_message_once(
    cluster: DevClusterThread, clock: MovingClock
) -> None:
    seen = Seen(ConsumeStatus.SUCCESS)  # one listener, both consumers
    small = {"pop_batch_size": 1, "max_cached_messages": 1}
    a = pop_consumer(cluster, clock, seen, **small)
    b = pop_consumer(cluster, clock, seen, **small)
    async with a, b:
        await send(cluster, 8)
        await seen.until(8)
        await a.wait_idle()
        await b.wait_idle()
        assert a.stats["acked"] + b.stats["acked"] == 8
    assert seen.bodies == [b"m%d" % i for i in range(8)]  # each once


@pytest.mark.parametrize(
    ("status", "index", "ack_index", "times", "level", "expected"),
    [
        (ConsumeStatus.SUCCESS, 0, None, 0, 0, (PopAction.ACK, 0)),
        (ConsumeStatus.SUCCESS, 2, 1, 0, 0, (PopAction.RETRY, 10_000)),
        (ConsumeStatus.RECONSUME_LATER, 0, None, 3, 0, (PopAction.RETRY, 120_000)),
        (ConsumeStatus.RECONSUME_LATER, 0, None, 40, 0, (PopAction.DEAD_LETTER, 0)),
        (ConsumeStatus.RECONSUME_LATER, 0, None, 15, 0, (PopAction.RETRY, 7_200_000)),
        (ConsumeStatus.RECONSUME_LATER, 0, None, 0, 2, (PopAction.RETRY, 30_000)),
        (ConsumeStatus.RECONSUME_LATER, 0, None, 0, -1, (PopAction.DEAD_LETTER, 0)),
    ],
)
def test_the_step_for_each_message(
    status: ConsumeStatus, index: int, ack_index: int | None, times: int, level: int,
    expected: tuple[PopAction, int],
) -> None:  # fmt: skip
    step = pop_step(status, index, ack_index, times, 16, level)
    assert (step.action, step.delay_ms) == expected


async def test_orderly_pop_hands_a_queues_messages_over_one_batch_at_a_time(
    cluster: DevClusterThread, clock: MovingClock
) -> None:
    """Orderly: the next message of the queue only once the one before is settled; a
    RECONSUME_LATER holds the queue (the broker redelivers the same message first)."""
    cluster.add_topic("Fifo", 1, message_type="FIFO")
    async with Producer("pg", namesrv=cluster.namesrv_addr) as producer:
        for i in range(3):
            await producer.send(Message("Fifo", b"f%d" % i))

    def fail_f1_once(messages: list[PoppedMessage]) -> ConsumeStatus:
        first_try = messages[0].body == b"f1" and messages[0].reconsume_times == 0
        return ConsumeStatus.RECONSUME_LATER if first_try else ConsumeStatus.SUCCESS

    seen = Seen(fail_f1_once)
    consumer = PopConsumer(
        GROUP, cluster.namesrv_addr, listener=seen, clock=clock, orderly=True,
        await_duration_ms=60_000, invisible_duration_ms=30_000,
    )  # fmt: skip
    consumer.subscribe("Fifo")
    async with consumer:
        await seen.until(2)  # f0, then f1 (fails)
        await consumer.wait_idle()
        clock.advance(cluster, POP_DELAYS_MS[0])  # f1's hold runs out: f1 again, then f2
        await seen.until(4)
        await consumer.wait_idle()
    order = [(m.body, m.reconsume_times) for call in seen.calls for m in call]
    # f2 came in the first pop too (left un-consumed behind f1): the broker counts it as
    # delivered once before (orderCountInfo), although no listener saw it.
    assert order == [(b"f0", 0), (b"f1", 0), (b"f1", 1), (b"f2", 1)]


async def test_a_4x_broker_fails_the_start(clock: MovingClock) -> None:
    with DevClusterThread(brokers=1, topics={TOPIC: 1}, broker_version="4.9.4") as old:
        consumer = PopConsumer(GROUP, old.namesrv_addr, listener=Seen(ConsumeStatus.SUCCESS))
        consumer.subscribe(TOPIC)
        with pytest.raises(PopUnsupportedError, match="answers as V4_9_4"):
            async with consumer:
                pass
