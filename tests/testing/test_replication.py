"""The dev cluster's replicated groups (``slaves=1``) against raw requests: the slave's
registration, its copy of the master's log with a lag on the cluster's clock, its answers
as a 4.9.4 SLAVE (``PullMessageProcessor``, ``nextOffsetCorrection``,
``SlaveSynchronize``), ``kill_master`` and ``restart_master``."""

from __future__ import annotations

import pytest

from producer._remoting.request_codes import RequestCode
from producer._remoting.store_record import decode_records
from producer._response_codes import ResponseCode
from producer.testing import DevCluster
from tests.helpers.clocks import START_MS
from tests.testing.rawclient import RawClient, create_topic, make_request
from tests.testing.replication_support import (  # the fixtures: clock, cluster
    FLAG_COMMIT,
    FLAG_SUBSCRIPTION,
    GROUP,
    TOPIC,
    Clock,
    clock_fixture,  # noqa: F401
    cluster_fixture,  # noqa: F401
    pull,
    records,
    request,
    route,
    send,
)

pytestmark = pytest.mark.anyio


async def test_each_group_registers_its_slave_as_broker_id_1(cluster: DevCluster) -> None:
    addrs = await route(cluster)
    for name in ("broker-a", "broker-b"):
        assert addrs[name] == {"0": cluster.broker_addr(name), "1": cluster.slave_addr(name)}
        assert cluster.slave_addr(name) != cluster.broker_addr(name)
    info = await request(
        cluster.namesrv_addr, make_request(RequestCode.GET_BROKER_CLUSTER_INFO, {})
    )
    slave = cluster.slave_addr("broker-a")
    assert f'1:"{slave}"'.encode() in info.body  # type: ignore[attr-defined]


async def test_slave_serves_the_masters_messages_at_their_offsets_once_the_lag_passed(
    cluster: DevCluster, clock: Clock
) -> None:
    cluster.set_replication_lag("broker-a", ms=1000)
    master, slave = cluster.broker_addr("broker-a"), cluster.slave_addr("broker-a")
    await send(master, 3)
    cluster.tick()
    early = await request(slave, pull(0))
    assert early.code == ResponseCode.PULL_NOT_FOUND  # type: ignore[attr-defined]
    assert cluster.replication("broker-a")["behind"] == 3
    clock.ms += 1000
    cluster.tick()
    from_slave = await request(slave, pull(0))
    from_master = await request(master, pull(0))
    assert from_slave.code == ResponseCode.SUCCESS  # type: ignore[attr-defined]
    # the same records: queue and commit-log offsets, and the master's store host (HA
    # copies the log's bytes, so a msgId decoded from the slave names the master)
    assert records(from_slave) == records(from_master)
    assert [r[0] for r in records(from_slave)] == [0, 1, 2]
    assert {r[2] for r in records(from_slave)} == {master}


async def test_slave_stays_the_lag_in_messages_behind(cluster: DevCluster) -> None:
    cluster.set_replication_lag("broker-a", messages=2)
    await send(cluster.broker_addr("broker-a"), 5)
    cluster.tick()
    answer = await request(cluster.slave_addr("broker-a"), pull(0))
    assert [r[0] for r in records(answer)] == [0, 1, 2]
    assert answer.ext_fields["maxOffset"] == "3"  # type: ignore[attr-defined]


async def test_a_slave_corrects_no_offset_and_asks_to_retry(cluster: DevCluster) -> None:
    await send(cluster.broker_addr("broker-a"), 3)
    cluster.tick()
    on_slave = await request(cluster.slave_addr("broker-a"), pull(10))
    on_master = await request(cluster.broker_addr("broker-a"), pull(10))
    assert (on_master.code, on_master.ext_fields["nextBeginOffset"]) == (  # type: ignore[attr-defined]
        ResponseCode.PULL_OFFSET_MOVED,
        "3",
    )
    assert (on_slave.code, on_slave.ext_fields["nextBeginOffset"]) == (  # type: ignore[attr-defined]
        ResponseCode.PULL_RETRY_IMMEDIATELY,
        "10",
    )
    assert on_slave.remark == "OFFSET_OVERFLOW_BADLY"  # type: ignore[attr-defined]


async def test_suggest_which_broker_id_is_the_real_brokers(clock: Clock) -> None:
    # without slaveReadEnable (4.9.4's default): always the master, however far behind
    async with DevCluster(
        brokers=1, topics={TOPIC: 1}, slaves=1, clock_ms=clock, in_memory_bytes=200
    ) as plain:
        await send(plain.broker_addr("broker-a"), 3)
        plain.tick()
        for addr in (plain.broker_addr("broker-a"), plain.slave_addr("broker-a")):
            answer = await request(addr, _pull_one(0))  # 441 bytes behind
            assert answer.ext_fields["suggestWhichBrokerId"] == "0"  # type: ignore[attr-defined]
    # slaveReadEnable: a pull reading more than the in-memory share behind the log's end
    # is sent to the slave (whichBrokerWhenConsumeSlowly), one near the end to the master
    async with DevCluster(
        brokers=1,
        topics={TOPIC: 1},
        slaves=1,
        clock_ms=clock,
        slave_read_enable=True,
        in_memory_bytes=200,
    ) as reading:
        master = reading.broker_addr("broker-a")
        await send(master, 3)  # 147 bytes each
        reading.tick()
        whole = await request(master, pull(0))  # read to offset 2: 147 bytes behind
        assert whole.ext_fields["suggestWhichBrokerId"] == "0"  # type: ignore[attr-defined]
        behind = await request(master, _pull_one(0))  # 441 bytes behind
        assert behind.ext_fields["suggestWhichBrokerId"] == "1"  # type: ignore[attr-defined]
        on_slave = await request(reading.slave_addr("broker-a"), _pull_one(0))
        assert on_slave.ext_fields["suggestWhichBrokerId"] == "1"  # type: ignore[attr-defined]
        near = await request(master, _pull_one(2))
        assert near.ext_fields["suggestWhichBrokerId"] == "0"  # type: ignore[attr-defined]


def _pull_one(offset: int) -> object:
    command = pull(offset)
    command.ext_fields["maxMsgNums"] = "1"  # type: ignore[attr-defined]
    return command


async def test_slave_offsets_and_the_masters_sync(cluster: DevCluster, clock: Clock) -> None:
    master, slave = cluster.broker_addr("broker-a"), cluster.slave_addr("broker-a")
    await send(master, 3)
    cluster.tick()
    await request(slave, pull(0, flag=FLAG_SUBSCRIPTION | FLAG_COMMIT, commit=2))
    assert cluster.slave_consumer_offsets("broker-a") == {}  # a slave stores no pulled offset
    fields = {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "0", "commitOffset": "3"}
    await request(slave, make_request(RequestCode.UPDATE_CONSUMER_OFFSET, fields))
    assert cluster.slave_consumer_offsets("broker-a") == {f"{TOPIC}@{GROUP}": {0: 3}}
    await request(
        master, make_request(RequestCode.UPDATE_CONSUMER_OFFSET, {**fields, "commitOffset": "1"})
    )
    clock.ms += 9_999
    cluster.tick()
    assert cluster.slave_consumer_offsets("broker-a") == {f"{TOPIC}@{GROUP}": {0: 3}}
    clock.ms += 1  # SlaveSynchronize every 10 s: the master's entry overwrites the slave's
    cluster.tick()
    assert cluster.slave_consumer_offsets("broker-a") == {f"{TOPIC}@{GROUP}": {0: 1}}


async def test_kill_master_leaves_only_the_slave_in_the_route(cluster: DevCluster) -> None:
    master, slave = cluster.broker_addr("broker-a"), cluster.slave_addr("broker-a")
    await send(master, 2)
    cluster.tick()
    await cluster.kill_master("broker-a")
    assert (await route(cluster))["broker-a"] == {"1": slave}
    assert (await route(cluster))["broker-b"].keys() == {"0", "1"}
    with pytest.raises(ConnectionRefusedError):
        await RawClient.connect(master)
    assert [r[0] for r in records(await request(slave, pull(0)))] == [0, 1]


async def test_restarted_master_returns_to_the_route_and_the_slave_copies_on(
    cluster: DevCluster,
) -> None:
    master, slave = cluster.broker_addr("broker-a"), cluster.slave_addr("broker-a")
    await send(master, 2)
    await cluster.kill_master("broker-a")
    cluster.tick()  # nothing copied while the master is gone
    assert cluster.replication("broker-a")["behind"] == 2
    await cluster.restart_master("broker-a")
    assert (await route(cluster))["broker-a"] == {"0": master, "1": slave}
    await send(master, 1, first=2)
    cluster.tick()
    assert [r[0] for r in records(await request(slave, pull(0)))] == [0, 1, 2]


async def test_view_message_by_id_reads_the_copied_record_on_the_slave(
    cluster: DevCluster,
) -> None:
    master, slave = cluster.broker_addr("broker-a"), cluster.slave_addr("broker-a")
    await send(master, 2)
    cluster.tick()
    pulled = await request(slave, pull(0))
    second = decode_records(pulled.body)[1]  # type: ignore[attr-defined]
    view = make_request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(second.commit_log_offset)})
    on_slave = await request(slave, view)
    # as a real 4.9.4 slave answers: the stored record's bytes, no header fields
    assert (on_slave.code, on_slave.remark, on_slave.ext_fields) == (0, None, None)  # type: ignore[attr-defined]
    assert decode_records(on_slave.body) == [second]  # type: ignore[attr-defined]
    missing = make_request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": "999999999"})
    answer = await request(slave, missing)
    assert (answer.code, answer.remark) == (  # type: ignore[attr-defined]
        ResponseCode.SYSTEM_ERROR,
        "can not find message by the offset, 999999999",
    )


async def test_after_a_restart_syncs_wait_for_the_slaves_next_registration(
    cluster: DevCluster, clock: Clock
) -> None:
    """Checked on a real 4.9.4 (module _replication's docstring): an offset committed to
    the slave while the master was dead outlives the master's return until the slave has
    re-registered (10 s after its start, then every 30 s) and synced (every 10 s)."""
    master, slave = cluster.broker_addr("broker-a"), cluster.slave_addr("broker-a")
    fields = {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "0", "commitOffset": "2"}
    await request(master, make_request(RequestCode.UPDATE_CONSUMER_OFFSET, fields))
    cluster.tick()
    clock.ms += 5_000
    await cluster.kill_master("broker-a")
    await request(
        slave, make_request(RequestCode.UPDATE_CONSUMER_OFFSET, {**fields, "commitOffset": "5"})
    )
    clock.ms += 10_000  # the slave registered at 10 s, while its master was gone
    await cluster.restart_master("broker-a")
    await send(master, 1)
    cluster.tick()  # 15 s: the HA client reconnects at 5 + 2 x 5 s: copies again
    assert cluster.replication("broker-a")["behind"] == 0
    clock.ms += 24_999  # 39.999 s: not registered again yet
    cluster.tick()
    assert cluster.slave_consumer_offsets("broker-a") == {f"{TOPIC}@{GROUP}": {0: 5}}
    clock.ms += 1  # 40 s: registered (the master's address again), then the 40 s sync
    cluster.tick()
    assert cluster.slave_consumer_offsets("broker-a") == {f"{TOPIC}@{GROUP}": {0: 2}}


async def _offsets_after_a_restart(
    cluster: DevCluster, clock: Clock, killed_s: float, back_s: float
) -> None:
    """Master offset 2 synced at 0 s; the master killed at ``killed_s``; offset 5 committed
    to the slave; the master back at ``back_s``."""
    master, slave = cluster.broker_addr("broker-a"), cluster.slave_addr("broker-a")
    fields = {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "0", "commitOffset": "2"}
    await request(master, make_request(RequestCode.UPDATE_CONSUMER_OFFSET, fields))
    cluster.tick()
    clock.ms = START_MS + int(killed_s * 1000)
    await cluster.kill_master("broker-a")
    five = {**fields, "commitOffset": "5"}
    await request(slave, make_request(RequestCode.UPDATE_CONSUMER_OFFSET, five))
    clock.ms = START_MS + int(back_s * 1000)
    await cluster.restart_master("broker-a")


def synced_at(cluster: DevCluster, clock: Clock, seconds: float) -> None:
    """The slave still has its own offset just before ``seconds``, the master's at it."""
    clock.ms = START_MS + int(seconds * 1000) - 1
    cluster.tick()
    assert cluster.slave_consumer_offsets("broker-a") == {f"{TOPIC}@{GROUP}": {0: 5}}
    clock.ms += 1
    cluster.tick()
    assert cluster.slave_consumer_offsets("broker-a") == {f"{TOPIC}@{GROUP}": {0: 2}}


async def test_a_restart_between_registrations_syncs_at_the_next_tick(
    cluster: DevCluster, clock: Clock
) -> None:
    # registrations at 0, 10, 40 s: none from 12 to 25 s, so the address is still known
    await _offsets_after_a_restart(cluster, clock, 12, 25)
    await send(cluster.broker_addr("broker-a"), 1)
    clock.ms = START_MS + 26_999  # the HA client's retries: 12 + 3 x 5 s = 27 s
    cluster.tick()
    assert cluster.replication("broker-a")["behind"] == 1
    clock.ms += 1
    cluster.tick()
    assert cluster.replication("broker-a")["behind"] == 0
    synced_at(cluster, clock, 30)


async def test_the_first_registration_is_10_s_after_the_slave_starts(
    cluster: DevCluster, clock: Clock
) -> None:
    await _offsets_after_a_restart(cluster, clock, 7, 9)  # none from 7 to 9 s
    synced_at(cluster, clock, 10)


async def test_a_slave_refuses_topic_and_group_writes_as_validate_slave_does(
    cluster: DevCluster,
) -> None:
    """``mqadmin deleteTopic -c`` on a real 4.9.4 with slaves sends the delete to the slaves
    too, and each answers SYSTEM_ERROR with ``AdminBrokerProcessor.validateSlave``'s remark;
    the master still takes the write."""
    slave, master = cluster.slave_addr("broker-a"), cluster.broker_addr("broker-a")
    writes = [
        create_topic("MadeOnSlave"),
        make_request(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": TOPIC}),
        make_request(RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": GROUP}),
    ]
    for write in writes:
        answer = await request(slave, write)
        assert (answer.code, answer.remark) == (  # type: ignore[attr-defined]
            ResponseCode.SYSTEM_ERROR,
            "Can't modify topic or subscription group from slave broker, "
            "please execute it from master broker.",
        )
    made = await request(master, create_topic("MadeOnMaster"))
    assert made.code == ResponseCode.SUCCESS  # type: ignore[attr-defined]
