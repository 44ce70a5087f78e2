"""The dev broker's consumer side, frame by frame (docs/consuming.md 1.4-1.5, 3.1): pull
checks and statuses, long polling, heartbeat side effects, send-back errors."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import anyio
import pytest

from producer._remoting.command import RemotingCommand
from producer._remoting.consumer_requests import (
    ConsumeFromWhere,
    ConsumerData,
    MessageModel,
    PullParams,
    consumer_heartbeat_request,
    pull_request,
    send_back_request,
)
from producer._remoting.request_codes import RequestCode
from producer._remoting.store_record import decode_records
from producer._response_codes import ResponseCode
from producer._types.message import MessageQueue
from producer.consumer._sql_filters import parse_subscription
from producer.testing import DevCluster
from tests.testing.rawclient import RawClient, make_request, send_fields

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
QUEUE = MessageQueue("Orders", "broker-a", 0)
PULL = PullParams("G", QUEUE, 0, 32, 0, suspend_timeout_ms=0, sub_version=1, suspend=False)


@pytest.fixture
async def cluster() -> AsyncIterator[DevCluster]:
    async with DevCluster(brokers=1, topics={"Orders": 2}) as c:
        yield c


@pytest.fixture
async def broker(cluster: DevCluster) -> AsyncIterator[RawClient]:
    async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
        yield client


def framed(command: RemotingCommand) -> RemotingCommand:
    return make_request(command.code, command.ext_fields, body=command.body)


async def register(client: RawClient, expression: str = "*") -> RemotingCommand:
    data = ConsumerData(
        "G",
        MessageModel.CLUSTERING,
        ConsumeFromWhere.FIRST_OFFSET,
        (parse_subscription("Orders", expression),),
        {"Orders": 5},
    )
    await client.send(framed(consumer_heartbeat_request("c1@1", [data])))
    notify = await client.read()  # the broker tells the group first (as #32 before #33)
    answer = await client.read()
    return notify if notify.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED else answer


async def put(client: RawClient, tags: str, queue_id: int = 0) -> None:
    props = f"UNIQ_KEY\x01K{tags}\x02TAGS\x01{tags}"
    fields = send_fields("Orders", queue_id, properties=props)
    response = await client.request(make_request(RequestCode.SEND_MESSAGE_V2, fields, body=b"b"))
    assert response.code == ResponseCode.SUCCESS


async def pull(client: RawClient, **changes: object) -> RemotingCommand:
    return await client.request(framed(pull_request(dataclasses.replace(PULL, **changes))))  # type: ignore[arg-type]


async def test_heartbeat_notifies_the_group_and_creates_its_retry_topic(
    cluster: DevCluster, broker: RawClient
) -> None:
    notify = await register(broker)
    assert notify.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED
    assert notify.is_oneway and not notify.is_response
    assert notify.ext_fields == {"consumerGroup": "G"}
    assert "%RETRY%G" in cluster._namesrv.topics()


async def test_pull_checks_in_the_brokers_order(broker: RawClient) -> None:
    unregistered = await pull(broker)
    assert unregistered.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
    assert unregistered.remark is not None and "group info not exist" in unregistered.remark
    await register(broker)
    unknown = await pull(broker, queue=MessageQueue("Nope", "broker-a", 0))
    assert unknown.code == ResponseCode.TOPIC_NOT_EXIST
    illegal = await pull(broker, queue=MessageQueue("Orders", "broker-a", 9))
    assert illegal.code == ResponseCode.SYSTEM_ERROR and "queueId[9] is illegal" in (
        illegal.remark or ""
    )
    newer = await pull(broker, sub_version=6)
    assert newer.code == ResponseCode.SUBSCRIPTION_NOT_LATEST


async def test_pull_statuses_and_offsets(broker: RawClient) -> None:
    await register(broker, "TagA")
    empty = await pull(broker)
    assert (empty.code, empty.remark) == (ResponseCode.PULL_NOT_FOUND, "NO_MESSAGE_IN_QUEUE")
    for tags in ("TagA", "TagC", "TagA", "TagC"):
        await put(broker, tags)
    found = await pull(broker, max_messages=2)  # full after two: the scan stops at 3
    assert found.code == ResponseCode.SUCCESS
    assert [r.properties["TAGS"] for r in decode_records(found.body)] == ["TagA", "TagA"]
    assert found.ext_fields is not None and found.ext_fields["nextBeginOffset"] == "3"
    everything = await pull(broker)  # filtered entries are scanned past, not returned
    assert everything.ext_fields is not None and everything.ext_fields["nextBeginOffset"] == "4"
    filtered = await pull(broker, offset=3)
    assert filtered.code == ResponseCode.PULL_RETRY_IMMEDIATELY
    assert filtered.ext_fields is not None and filtered.ext_fields["nextBeginOffset"] == "4"
    badly = await pull(broker, offset=100)
    assert (badly.code, badly.remark) == (ResponseCode.PULL_OFFSET_MOVED, "OFFSET_OVERFLOW_BADLY")
    assert badly.ext_fields is not None and badly.ext_fields["nextBeginOffset"] == "4"


async def test_a_held_pull_is_answered_when_a_message_arrives(
    cluster: DevCluster, broker: RawClient
) -> None:
    await register(broker)
    held = framed(pull_request(dataclasses.replace(PULL, suspend=True, suspend_timeout_ms=20000)))
    await broker.send(held)
    async with await RawClient.connect(cluster.broker_addr("broker-a")) as producer:
        with anyio.move_on_after(0.2) as early:
            await broker.read()
        assert early.cancelled_caught  # nothing yet: the pull is held
        await put(producer, "TagA")
    answer = await broker.read()
    assert answer.opaque == held.opaque and answer.code == ResponseCode.SUCCESS


async def test_send_back_of_an_unknown_offset_is_a_system_error(broker: RawClient) -> None:
    request = send_back_request(
        group="G", commit_log_offset=12345, delay_level=0, origin_msg_id="X",
        origin_topic="Orders", max_reconsume_times=16,
    )  # fmt: skip
    answer = await broker.request(framed(request))
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark == "look message by offset failed, 12345"
