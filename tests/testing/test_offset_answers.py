"""The dev broker answers a group's offsets as each real broker version does (issue 39):
QUERY_CONSUMER_OFFSET for a never committed queue (4.9.4: 0 while offset 0 is in memory,
QUERY_NOT_FOUND once it is gone; 5.x: QUERY_NOT_FOUND when asked ``setZeroIfNotFound=
false``) and GET_ALL_CONSUMER_OFFSET's fastjson table, read back by the client's parser."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from producer._remoting.committed_offsets import committed_in_table, read_query_offset
from producer._remoting.frame_decoder import decode_frame
from producer._remoting.request_codes import RequestCode
from producer._response_codes import ResponseCode
from producer._types.message import MessageQueue
from producer.testing import DevCluster
from tests.testing.rawclient import RawClient, make_request

pytestmark = pytest.mark.anyio
QUEUE = MessageQueue("Orders", "broker-a", 1)
ASK = {"consumerGroup": "g", "topic": "Orders", "queueId": "1"}


@pytest.fixture(params=["4.9.4", "5.x"])
async def cluster(request: pytest.FixtureRequest) -> AsyncIterator[DevCluster]:
    async with DevCluster(brokers=1, topics={"Orders": 2}, broker_version=request.param) as c:
        c.backlog("Orders", 10)
        yield c


async def test_a_never_committed_queue_is_answered_as_the_broker_version_does(
    cluster: DevCluster,
) -> None:
    async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
        not_zero = make_request(
            RequestCode.QUERY_CONSUMER_OFFSET, {**ASK, "setZeroIfNotFound": "false"}
        )
        answers = [
            await client.request(r)
            for r in (not_zero, make_request(RequestCode.QUERY_CONSUMER_OFFSET, ASK))
        ]
        cluster.drop_before("Orders", 5, queue_id=1)  # offset 0 is gone: not found
        gone = await client.request(make_request(RequestCode.QUERY_CONSUMER_OFFSET, ASK))
    found = (ResponseCode.SUCCESS, {"offset": "0"})
    not_found = (ResponseCode.QUERY_NOT_FOUND, {})
    if cluster.broker_version == "4.9.4":
        assert [(a.code, a.ext_fields) for a in answers] == [found, found]
        assert answers[0].remark is None and gone.remark == (
            "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"
        )
        assert not read_query_offset(answers[0]).certain  # 0 from 4.9.4: maybe none
    else:
        assert [(a.code, a.ext_fields) for a in answers] == [not_found, found]
        assert answers[0].remark == "Not found, do not set to zero, maybe this group boot first"
        assert read_query_offset(answers[1]).certain
    assert (gone.code, gone.ext_fields) == not_found


async def test_the_whole_offset_table_tells_committed_zero_from_none(cluster: DevCluster) -> None:
    async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
        empty = await client.request(make_request(RequestCode.GET_ALL_CONSUMER_OFFSET))
        commit = {**ASK, "commitOffset": "0"}
        await client.request(make_request(RequestCode.UPDATE_CONSUMER_OFFSET, commit))
        other = {**ASK, "consumerGroup": "h", "queueId": "0", "commitOffset": "7"}
        await client.request(make_request(RequestCode.UPDATE_CONSUMER_OFFSET, other))
        table = await client.request(make_request(RequestCode.GET_ALL_CONSUMER_OFFSET))
    assert (empty.code, empty.ext_fields, empty.body) == (0, None, b'{"offsetTable":{}}')
    assert table.body == b'{"offsetTable":{"Orders@g":{1:0},"Orders@h":{0:7}}}'
    assert committed_in_table(empty, "g", QUEUE) is None
    assert committed_in_table(table, "g", QUEUE) == 0
    assert committed_in_table(table, "h", QUEUE) is None  # h committed queue 0, not 1
    assert committed_in_table(table, "h", MessageQueue("Orders", "broker-a", 0)) == 7


GOLDEN = Path(__file__).parent.parent / "golden" / "sessions" / "pop_5_2_0_offset_query"


async def test_an_empty_queue_is_not_found_on_5x_as_a_real_5_2_0_broker_answered() -> None:
    """Frames #22/#23 of a real 5.2.0 session: a never committed, empty ``%RETRY%`` queue
    asked without ``setZeroIfNotFound`` is 22 QUERY_NOT_FOUND (4.9.4 would say 0)."""
    request = decode_frame((GOLDEN / "000022-broker5-a-c4-c2s.bin").read_bytes())
    golden = decode_frame((GOLDEN / "000023-broker5-a-c4-s2c.bin").read_bytes())
    answers = {}
    for version in ("5.x", "4.9.4"):
        async with DevCluster(brokers=1, broker_version=version) as cluster:
            cluster.add_topic("%RETRY%PopPushGroup", 1)
            async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
                answers[version] = await client.request(request)
    ours = answers["5.x"]
    assert (ours.code, ours.flag, ours.opaque) == (golden.code, golden.flag, golden.opaque)
    assert (ours.remark, ours.ext_fields) == (golden.remark, golden.ext_fields)
    assert (answers["4.9.4"].code, answers["4.9.4"].ext_fields) == (0, {"offset": "0"})
