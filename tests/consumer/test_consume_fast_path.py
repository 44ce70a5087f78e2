"""The lean consume path keeps the listener's rules: one decoding pass gives what the
general record reader gives, each call of a plain listener's worker-thread run has its own
verdict, and workers started on demand still reach ``max_concurrency`` and no more."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import anyio
import pytest

from producer import Message, Producer
from producer._remoting.store_record import StoreRecord, decode_records, encode_record
from producer._types.consumer.context import ConsumeContext
from producer.consumer import ConsumeStatus, PushConsumer, ReceivedMessage
from producer.consumer._listener import ListenerCall
from producer.consumer._telemetry import ConsumerTelemetry
from producer.testing import DevClusterThread

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def test_one_pass_decoding_gives_every_field_of_the_record() -> None:
    records = [
        StoreRecord(
            topic="Orders",
            queue_id=3,
            queue_offset=7 + n,
            commit_log_offset=1000 * n,
            body=bytes([n]) * 50,
            properties={"TAGS": "a", "UNIQ_KEY": f"K{n}"},
            born_timestamp=1 + n,
            born_host="10.0.0.1:5000",
            store_timestamp=2 + n,
            store_host="10.0.0.2:10911",
            flag=4,
            reconsume_times=2,
            prepared_transaction_offset=9,
            body_crc=123,
        )
        for n in range(3)
    ]
    assert decode_records(b"".join(map(encode_record, records))) == records


async def test_each_call_of_a_plain_run_has_its_own_verdict() -> None:
    boom = ValueError("boom")

    def listener(messages: list[ReceivedMessage]) -> object:
        kind = messages[0].kind  # type: ignore[attr-defined]
        if kind == "raise":
            raise boom
        if kind == "return-error":
            return boom  # a value, not a failure with an error
        return ConsumeStatus.SUCCESS if kind == "ok" else None

    call = ListenerCall(listener, 4, telemetry=ConsumerTelemetry("g"), clock_ms=lambda: 0.0)
    context = ConsumeContext(None)  # type: ignore[arg-type]
    kinds = ["ok", "raise", "return-error", "none", "ok"]
    calls = [
        ([SimpleNamespace(kind=k, topic="T", consume_start_ms=0.0, undecodable=None)], context)
        for k in kinds
    ]
    verdicts = await call.run_plain(calls, 0.0)  # type: ignore[arg-type]
    statuses = [v.status for v in verdicts]
    ok, later = ConsumeStatus.SUCCESS, ConsumeStatus.RECONSUME_LATER
    assert statuses == [ok, later, later, later, ok]
    assert [v.error for v in verdicts] == [None, boom, None, None, None]


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=1, topics={"Orders": 1}) as c:
        yield c


async def test_workers_reach_max_concurrency_and_never_pass_it(cluster: DevClusterThread) -> None:
    async with Producer("pg", namesrv=cluster.namesrv_addr) as producer:
        for i in range(12):
            await producer.send(Message("Orders", f"m{i}".encode()))
    running, peak, done = 0, 0, 0
    full = anyio.Event()

    async def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        nonlocal running, peak, done
        running += 1
        peak = max(peak, running)
        if running == 4:
            full.set()
        await full.wait()  # each call waits until four run at once
        running -= 1
        done += 1
        return ConsumeStatus.SUCCESS

    c = PushConsumer(
        "cg", cluster.namesrv_addr, listener=listener, consume_from="first", max_concurrency=4
    )
    c.subscribe("Orders")
    async with c:
        with anyio.fail_after(20):
            await full.wait()
            while done < 12:  # noqa: ASYNC110 - the listener's count
                await anyio.sleep(0.02)
    assert peak == 4
