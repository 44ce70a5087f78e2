"""What the replicated dev cluster's tests (``test_replication*.py``) share: a clock the
test moves, raw requests (pulls, sends, half messages, pops) and the route's broker ids."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from producer._remoting.command import RemotingCommand
from producer._remoting.pop_requests import InitMode, PopParams, pop_request
from producer._remoting.request_codes import RequestCode
from producer._remoting.store_record import decode_records
from producer._response_codes import ResponseCode
from producer.testing import DevCluster
from tests.helpers.clocks import START_MS
from tests.testing import ha_probe
from tests.testing.rawclient import RawClient, make_request, send_fields

TOPIC = "HaTopic"
GROUP = f"{TOPIC}G"  # ha_probe.pull's group
FLAG_COMMIT, FLAG_SUBSCRIPTION = ha_probe.FLAG_COMMIT, ha_probe.FLAG_SUBSCRIPTION


class Clock:
    def __init__(self) -> None:
        self.ms = START_MS

    def __call__(self) -> int:
        return self.ms


def pull(offset: int, *, flag: int = FLAG_SUBSCRIPTION, commit: int = 0) -> object:
    return ha_probe.pull(TOPIC, offset, flag, commit)


async def request(addr: str, command: object) -> object:
    async with await RawClient.connect(addr) as client:
        return await client.request(command)  # type: ignore[arg-type]


async def send(addr: str, count: int, *, first: int = 0) -> list[str]:
    ids = []
    async with await RawClient.connect(addr) as client:
        for n in range(first, first + count):
            props = f"UNIQ_KEY\x01HA{n:04d}\x02WAIT\x01true"
            fields = send_fields(TOPIC, 0, properties=props)
            answer = await client.request(
                make_request(RequestCode.SEND_MESSAGE_V2, fields, body=b"m%d" % n)
            )
            assert answer.code == ResponseCode.SUCCESS, answer
            ids.append(answer.ext_fields["msgId"])
    return ids


async def route(cluster: DevCluster) -> dict[str, dict[str, str]]:
    answer = await request(
        cluster.namesrv_addr, make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})
    )
    body = json.loads(answer.body)  # type: ignore[attr-defined]
    return {b["brokerName"]: b["brokerAddrs"] for b in body["brokerDatas"]}


def records(answer: object) -> list[tuple[int, int, str, bytes]]:
    found = decode_records(answer.body)  # type: ignore[attr-defined]
    return [(r.queue_offset, r.commit_log_offset, r.store_host, r.body) for r in found]


async def send_half(addr: str, uniq_key: str) -> dict[str, str]:
    """A half message of producer group TxG to ``addr``; the END_TRANSACTION (commit)
    fields that name it."""
    props = f"TRAN_MSG\x01true\x02PGROUP\x01TxG\x02UNIQ_KEY\x01{uniq_key}\x02WAIT\x01true"
    fields = {**send_fields(TOPIC, 0, properties=props, sys_flag=4), "a": "TxG"}
    half = await request(addr, make_request(RequestCode.SEND_MESSAGE_V2, fields, body=b"tx"))
    stored = half.ext_fields  # type: ignore[attr-defined]
    return {
        "producerGroup": "TxG",
        "tranStateTableOffset": stored["queueOffset"],
        "commitLogOffset": str(int(stored["msgId"][-16:], 16)),
        "commitOrRollback": "8",
        "fromTransactionCheck": "false",
        "msgId": uniq_key,
    }


def pop_now(clock: Clock, *, order: bool = False) -> RemotingCommand:
    params = PopParams(
        group=GROUP, topic=TOPIC, broker_name="broker-a", max_messages=8,
        invisible_ms=8000, poll_ms=0, born_ms=clock.ms, init_mode=InitMode.MIN, order=order,
    )  # fmt: skip
    return pop_request(params)


@pytest.fixture(name="clock")
def clock_fixture() -> Clock:
    """The brokers' clock, moved by the test."""
    return Clock()


@pytest.fixture(name="cluster")
async def cluster_fixture(clock: Clock) -> AsyncIterator[DevCluster]:
    """Two groups, each a master and its slave, on ``clock``; topic ``TOPIC``, 2 queues."""
    async with DevCluster(brokers=2, topics={TOPIC: 2}, slaves=1, clock_ms=clock) as cluster:
        yield cluster
