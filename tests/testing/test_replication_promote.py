"""The dev cluster's promotions (``promote``: a slave becomes its group's master, as 5.x's
controller elects it), with transactions and 5.x pops in flight, and a 5.x slave's own
pull rules, against raw requests."""

from __future__ import annotations

import logging

import anyio
import pytest

from producer._consume.received import decode_pulled
from producer._remoting.pop_requests import parse_pop_response
from producer._remoting.producer_requests import heartbeat_request
from producer._remoting.request_codes import RequestCode
from producer._remoting.store_record import decode_records
from producer._response_codes import ResponseCode
from producer.testing import DevCluster, TransactionConfig
from tests.testing.rawclient import RawClient, make_request
from tests.testing.replication_support import (  # the fixtures: clock, cluster
    FLAG_COMMIT,
    FLAG_SUBSCRIPTION,
    GROUP,
    TOPIC,
    Clock,
    clock_fixture,  # noqa: F401
    cluster_fixture,  # noqa: F401
    pop_now,
    pull,
    records,
    request,
    route,
    send,
    send_half,
)

pytestmark = pytest.mark.anyio


async def test_promote_gives_the_group_a_new_master_address(cluster: DevCluster) -> None:
    old_master, slave = cluster.broker_addr("broker-a"), cluster.slave_addr("broker-a")
    await send(old_master, 2)
    cluster.tick()
    new_master = await cluster.promote("broker-a")
    assert new_master == slave == cluster.broker_addr("broker-a")
    assert (await route(cluster))["broker-a"] == {"0": new_master}
    ids = await send(new_master, 1, first=2)  # a slave refuses sends; the new master stores
    answer = await request(new_master, pull(0))
    assert [r[0] for r in records(answer)] == [0, 1, 2]
    assert ids[0].startswith(new_master_id_prefix(new_master))
    await cluster.restart_master("broker-a")  # the old master comes back as the slave
    cluster.tick()
    assert (await route(cluster))["broker-a"] == {"0": new_master, "1": old_master}
    assert [r[0] for r in records(await request(old_master, pull(0)))] == [0, 1, 2]


def new_master_id_prefix(addr: str) -> str:
    host, port = addr.split(":")
    return "".join(f"{int(p):02X}" for p in host.split(".")) + f"{int(port):08X}"


async def test_promoted_master_ends_a_transaction_begun_on_the_old_one(
    cluster: DevCluster,
) -> None:
    end = await send_half(cluster.broker_addr("broker-a"), "HALF1")
    cluster.tick()
    on_slave = await request(
        cluster.slave_addr("broker-a"), make_request(RequestCode.END_TRANSACTION, end)
    )
    assert on_slave.code == ResponseCode.SLAVE_NOT_AVAILABLE  # type: ignore[attr-defined]
    new_master = await cluster.promote("broker-a")
    ended = await request(new_master, make_request(RequestCode.END_TRANSACTION, end))
    assert ended.code == ResponseCode.SUCCESS  # type: ignore[attr-defined]
    assert [m.body for m in cluster.messages(TOPIC)] == [b"tx"]
    assert cluster.open_transactions() == set()


async def test_promoted_master_knows_what_the_old_one_ended(cluster: DevCluster) -> None:
    master = cluster.broker_addr("broker-a")
    end = await send_half(master, "HALF3")
    await send_half(master, "HALF4")
    await request(master, make_request(RequestCode.END_TRANSACTION, end))  # its op record
    cluster.tick()
    await cluster.promote("broker-a")
    assert cluster.open_transactions() == {"HALF4"}  # the copied op marks HALF3 done


async def test_the_promoted_master_checks_transactions_the_slave_never_did(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    config = TransactionConfig(timeout_ms=1_000, interval_ms=1_000, check_max=3)
    async with DevCluster(
        brokers=1, topics={TOPIC: 1}, slaves=1, clock_ms=clock, transactions=config
    ) as cluster:
        await send_half(cluster.broker_addr("broker-a"), "HALF2")
        cluster.tick()
        await cluster.kill_master("broker-a")
        async with await RawClient.connect(cluster.slave_addr("broker-a")) as producer:
            beat = make_request(RequestCode.HEART_BEAT)
            beat.body = heartbeat_request("tx@1", ["TxG"]).body
            await producer.request(beat)
            clock.ms += 5_000  # a slave runs no check round, however long it waits
            cluster.tick()
            await cluster.promote("broker-a")  # the same server and connection, now master
            clock.ms += 1_000
            cluster.tick()
            with anyio.fail_after(5):
                check = await producer.read()
        assert check.code == RequestCode.CHECK_TRANSACTION_STATE
        assert check.ext_fields["msgId"] == "HALF2"
        record = decode_records(check.body)[0]
        assert record.properties["TRANSACTION_CHECK_TIMES"] == "1"  # the first check ever
        assert cluster.transaction_checks("HALF2") == [1]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # no tick failed


async def test_a_promoted_5x_master_revives_the_old_masters_pops(clock: Clock) -> None:
    async with DevCluster(
        brokers=1, topics={TOPIC: 1}, slaves=1, clock_ms=clock, broker_version="5.x"
    ) as five:
        await send(five.broker_addr("broker-a"), 2)
        popped = parse_pop_response(await request(five.broker_addr("broker-a"), pop_now(clock)))
        assert len(decode_pulled(popped.body, "broker-a")) == 2
        five.tick()
        new_master = await five.promote("broker-a")
        again = parse_pop_response(await request(new_master, pop_now(clock)))
        assert not again.found  # the pop offsets came along: nothing popped twice
        clock.ms += 8000  # the invisible time runs out on the new master
        five.tick()
        revived = parse_pop_response(await request(new_master, pop_now(clock)))
        messages = decode_pulled(revived.body, "broker-a")
    assert sorted((m.body, m.reconsume_times) for m in messages) == [(b"m0", 1), (b"m1", 1)]


async def test_a_promoted_5x_master_keeps_an_orderly_pops_queue_held(clock: Clock) -> None:
    async with DevCluster(
        brokers=1, topics={TOPIC: 1}, slaves=1, clock_ms=clock, broker_version="5.x"
    ) as five:
        await send(five.broker_addr("broker-a"), 2)
        first = await request(five.broker_addr("broker-a"), pop_now(clock, order=True))
        assert len(decode_pulled(parse_pop_response(first).body, "broker-a")) == 2
        five.tick()
        new_master = await five.promote("broker-a")
        await send(new_master, 1, first=2)
        held = parse_pop_response(await request(new_master, pop_now(clock, order=True)))
    assert not held.found  # the queue stays held until acked or the invisible time is up


async def test_a_5x_slave_rejects_pulls_without_slave_read_enable(clock: Clock) -> None:
    async with DevCluster(
        brokers=1, topics={TOPIC: 1}, slaves=1, clock_ms=clock, broker_version="5.x"
    ) as five:
        answer = await request(five.slave_addr("broker-a"), pull(0))
    assert (answer.code, answer.remark) == (  # type: ignore[attr-defined]
        ResponseCode.SYSTEM_BUSY,
        "[REJECTREQUEST]system busy, start flow control for a while",
    )


async def test_a_5x_slave_sends_readers_back_while_its_master_lives(clock: Clock) -> None:
    async with DevCluster(
        brokers=1,
        topics={TOPIC: 1},
        slaves=1,
        clock_ms=clock,
        broker_version="5.x",
        slave_read_enable=True,
    ) as five:
        slave = five.slave_addr("broker-a")
        await send(five.broker_addr("broker-a"), 2)
        five.tick()
        found = await request(slave, pull(0, flag=FLAG_SUBSCRIPTION | FLAG_COMMIT, commit=1))
        assert found.code == ResponseCode.SUCCESS  # type: ignore[attr-defined]
        assert five.slave_consumer_offsets("broker-a") == {f"{TOPIC}@{GROUP}": {0: 1}}
        at_end = await request(slave, pull(2))
        assert at_end.code == ResponseCode.PULL_RETRY_IMMEDIATELY  # type: ignore[attr-defined]
        assert at_end.ext_fields["suggestWhichBrokerId"] == "0"  # type: ignore[attr-defined]
        await five.kill_master("broker-a")
        alone = await request(slave, pull(2))
        assert alone.code == ResponseCode.PULL_NOT_FOUND  # type: ignore[attr-defined]
