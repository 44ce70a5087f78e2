"""Keyed sends (F5), oneway, batch, hooks and OpenTelemetry, against the dev cluster."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from producer import AttemptContext, Message, SendStatus
from producer.errors import ConnectError, MessageValidationError, TransportError
from producer.testing import DevClusterThread, FaultSpec
from tests.producer.conftest import TOPIC, make_producer

pytestmark = pytest.mark.anyio


# -- keyed / ordered sends ------------------------------------------------------------------


async def test_f5_keyed_sends_stay_on_one_queue_and_are_never_steered(
    cluster: DevClusterThread,
) -> None:
    async with make_producer(cluster, routing="adaptive") as p:
        first = await p.send(Message(TOPIC, b"1"), order_key="order-42")
        cluster.set_fault(first.queue.broker_name, FaultSpec(latency_ms=30))
        later = [await p.send(Message(TOPIC, b"n"), order_key="order-42") for _ in range(5)]
    assert {r.queue for r in later} == {first.queue}
    assert all(len(r.attempts) == 1 for r in later)


async def test_f5_keyed_send_is_one_attempt(cluster: DevClusterThread) -> None:
    async with make_producer(cluster) as p:
        first = await p.send(Message(TOPIC, b"1"), order_key="k")
        cluster.set_fault(first.queue.broker_name, FaultSpec(down=True))
        with pytest.raises(TransportError) as info:
            await p.send(Message(TOPIC, b"2"), order_key="k")
    assert len(info.value.attempts) == 1


# -- oneway and batch -----------------------------------------------------------------------


async def test_oneway_is_stored_without_an_answer(cluster: DevClusterThread) -> None:
    bodies = {b"oneway-%d" % i for i in range(5)}
    async with make_producer(cluster) as p:
        for body in sorted(bodies):
            await p.send_oneway(Message(TOPIC, body))
        with anyio.fail_after(5):  # no answer to wait for: watch the brokers' stores
            while {m.body for m in cluster.messages(TOPIC)} != bodies:  # noqa: ASYNC110 - the
                # store lives on the cluster's thread: no event to await from this loop
                await anyio.sleep(0.01)
    assert cluster.message_count(TOPIC) == 5  # each once: oneway never retries


async def test_oneway_write_failure_raises(cluster: DevClusterThread) -> None:
    async with make_producer(cluster) as p:
        await p.send(Message(TOPIC, b"warm"))
        for name in ("broker-a", "broker-b", "broker-c"):
            cluster.set_fault(name, FaultSpec(down=True))
        # a oneway write into a connection the peer just closed cannot know it failed;
        # a failing sync send first makes every connection's loss known
        with pytest.raises(TransportError):
            await p.send(Message(TOPIC, b"y"))
        with pytest.raises(ConnectError) as info:
            await p.send_oneway(Message(TOPIC, b"x"))
    assert len(info.value.attempts) == 1


async def test_batch_stores_every_message_with_its_id(cluster: DevClusterThread) -> None:
    batch = [Message(TOPIC, b"b%d" % i, keys=[f"k{i}"]) for i in range(10)]
    async with make_producer(cluster) as p:
        result = await p.send_batch(batch)
    assert result.status is SendStatus.SEND_OK
    assert len(result.msg_ids) == 10
    assert cluster.unique_msg_ids(TOPIC) == set(result.msg_ids)
    assert len(result.offset_msg_id.split(",")) == 10


async def test_a_preset_msg_id_is_sent_and_stored_as_the_uniq_key(
    cluster: DevClusterThread,
) -> None:
    """Re-publishing under a first send's msg_id keeps it (as Java keeps a set UNIQ_KEY),
    alone, in a batch, and next to messages that get fresh ids."""
    first = "7F00000100002A9F0000000000000001"
    async with make_producer(cluster) as p:
        single = await p.send(Message(TOPIC, b"again", msg_id=first))
        batch = await p.send_batch(
            [Message(TOPIC, b"1", msg_id="batch-kept"), Message(TOPIC, b"2")]
        )
    assert single.msg_id == first
    assert batch.msg_ids[0] == "batch-kept"
    assert batch.msg_ids[1] not in (first, "batch-kept")
    assert cluster.unique_msg_ids(TOPIC) == {first, "batch-kept", batch.msg_ids[1]}


async def test_batch_of_mixed_topics_is_refused(cluster: DevClusterThread) -> None:
    async with make_producer(cluster) as p:
        with pytest.raises(MessageValidationError, match="topic"):
            await p.send_batch([Message(TOPIC, b"1"), Message("Other", b"2")])


# -- hooks ----------------------------------------------------------------------------------


class RecordingHook:
    def __init__(self) -> None:
        self.before: list[tuple[str, int]] = []
        self.after: list[tuple[str, int, bool]] = []

    def before_attempt(self, ctx: AttemptContext) -> None:
        self.before.append((ctx.queue.broker_name, ctx.attempt))

    async def after_attempt(self, ctx: AttemptContext) -> None:
        self.after.append((ctx.queue.broker_name, ctx.attempt, ctx.error is None))


class BrokenHook:
    def before_attempt(self, ctx: AttemptContext) -> None:
        raise RuntimeError("hook bug")


async def test_hooks_see_every_attempt_and_cannot_break_a_send(
    cluster: DevClusterThread,
) -> None:
    cluster.set_fault("broker-a", FaultSpec(error_code=14))
    hook = RecordingHook()
    async with make_producer(cluster, hooks=[BrokenHook(), hook]) as p:
        results = [await p.send(Message(TOPIC, b"x")) for _ in range(8)]
    total = sum(len(r.attempts) for r in results)
    assert len(hook.before) == len(hook.after) == total
    failed = [a for a in hook.after if not a[2]]
    assert all(broker == "broker-a" for broker, _, _ in failed)


# -- OpenTelemetry --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spans() -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)  # once per process: OpenTelemetry allows no reset
    return exporter


async def test_a_span_per_send_with_an_event_per_attempt(
    cluster: DevClusterThread, spans: InMemorySpanExporter
) -> None:
    spans.clear()
    cluster.set_fault("broker-a", FaultSpec(error_code=14))
    async with make_producer(cluster) as p:
        results = [await p.send(Message(TOPIC, b"x")) for _ in range(6)]
    finished = [s for s in spans.get_finished_spans() if s.name == f"{TOPIC} publish"]
    assert len(finished) == 6
    for span, result in zip(finished, results, strict=True):
        attrs = span.attributes or {}
        assert attrs["messaging.system"] == "rocketmq"
        assert attrs["messaging.destination.name"] == TOPIC
        assert attrs["messaging.message.id"] == result.msg_id
        assert attrs["rocketmq.broker.name"] == result.queue.broker_name
        assert len(span.events) == len(result.attempts)


async def test_each_member_of_a_transparent_batch_has_its_own_span(
    cluster: DevClusterThread, spans: InMemorySpanExporter
) -> None:
    async with make_producer(cluster) as p:
        await p.send(Message(TOPIC, b"warm-up"))
        spans.clear()
        futures = [p.send_async(Message(TOPIC, b"b")) for _ in range(10)]
        results = [await f for f in futures]
    finished = [s for s in spans.get_finished_spans() if s.name == f"{TOPIC} publish"]
    ids = sorted((s.attributes or {})["messaging.message.id"] for s in finished)
    assert ids == sorted(r.msg_id for r in results)
    assert all(len(s.events) == 1 for s in finished)


@pytest.fixture(scope="module")
def metrics_reader() -> InMemoryMetricReader:
    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))  # once per process
    return reader


def _points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    found: dict[str, list[Any]] = {}
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found.setdefault(metric.name, []).extend(metric.data.data_points)
    return found


async def test_metrics_count_attempts_retries_and_durations(
    cluster: DevClusterThread, metrics_reader: InMemoryMetricReader
) -> None:
    cluster.set_fault("broker-a", FaultSpec(error_code=14))
    async with make_producer(cluster) as p:
        results = [await p.send(Message(TOPIC, b"x")) for _ in range(12)]  # every broker
    points = _points(metrics_reader)
    attempts = sum(pt.value for pt in points["rocketmq.producer.attempts"])
    retries = sum(pt.value for pt in points["rocketmq.producer.retries"])
    durations = sum(pt.count for pt in points["messaging.client.operation.duration"])
    total = sum(len(r.attempts) for r in results)
    assert total > len(results)  # broker-a's errors were retried
    assert attempts >= total  # other tests in this process may have added to them
    assert retries >= total - len(results)
    assert durations >= len(results)


# -- transactions: the public names (README T1-T7) ------------------------------------------


def test_the_transaction_names_are_public_and_typed() -> None:
    import dataclasses
    import inspect

    import producer
    import producer.blocking
    import producer.testing
    from producer.errors import LocalProtocolError, TransactionError

    for name in ("TransactionProducer", "TransactionResult", "TransactionState"):
        assert name in producer.__all__ and getattr(producer, name).__doc__, name
    assert "TransactionConfig" in producer.testing.__all__
    assert issubclass(TransactionError, LocalProtocolError)
    # the values are END_TRANSACTION's commitOrRollback
    assert {s.name: s.value for s in producer.TransactionState} == {
        "COMMIT": 8,
        "ROLLBACK": 12,
        "UNKNOWN": 0,
    }
    fields = [f.name for f in dataclasses.fields(producer.TransactionResult)]
    assert fields == ["send_result", "state", "end_written", "execute_error", "end_error"]
    assert {"settled", "msg_id"} <= set(dir(producer.TransactionResult))
    keywords = list(inspect.signature(producer.TransactionProducer).parameters)
    assert keywords == [
        "producer",
        "check",
        "check_timeout_ms",
        "check_workers",
        "max_pending_checks",
        "topics",
    ]
    steps = {"send_in_transaction", "send_half", "commit", "rollback", "start", "aclose"}
    assert steps <= set(dir(producer.TransactionProducer))
    assert steps - {"start", "aclose"} <= set(dir(producer.blocking.TransactionProducer))
    config = producer.testing.TransactionConfig()  # 4.9.4 BrokerConfig's defaults
    assert (config.timeout_ms, config.interval_ms, config.check_max) == (6_000, 60_000, 15)
    assert callable(producer.testing.DevCluster.open_transactions)
    assert callable(producer.testing.DevClusterThread.open_transactions)


async def test_a_transaction_through_the_public_names_only(cluster: DevClusterThread) -> None:
    from producer import Producer, TransactionProducer, TransactionResult, TransactionState
    from producer.errors import TransactionError

    def check(message: object) -> TransactionState:
        raise AssertionError("no check expected")

    tx = TransactionProducer(Producer("tx-surface", cluster.namesrv_addr), check=check)
    async with tx:
        result = await tx.send_in_transaction(
            Message(TOPIC, b"paid"), lambda m: TransactionState.COMMIT
        )
        half = await tx.send_half(Message(TOPIC, b"void"))
        await tx.rollback(half)
        with pytest.raises(TransactionError, match="not open here"):
            await tx.commit(half)
    assert isinstance(result, TransactionResult) and result.settled
    assert result.state is TransactionState.COMMIT and result.msg_id == result.send_result.msg_id
