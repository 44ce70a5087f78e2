"""QUERY_MESSAGE by UNIQ_KEY: the request the producer's transaction checks send, what
the dev broker answers (as ``QueryMessageProcessor`` does), and how the answer is read."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from producer._remoting.query_message import (
    NO_END,
    UNIQUE_KEY_QUERY,
    query_by_uniq_key,
    stored_by_uniq_key,
)
from producer._remoting.request_codes import RequestCode
from producer._response_codes import ResponseCode
from producer.errors import ProducerError
from producer.testing import DevCluster
from tests.testing.rawclient import RawClient, make_request, send_fields

pytestmark = pytest.mark.anyio


@pytest.fixture
async def broker() -> AsyncIterator[RawClient]:
    cluster = DevCluster(brokers=1, topics={"Orders": 4, "Other": 1})
    async with cluster, await RawClient.connect(cluster.broker_addr("broker-a")) as client:
        for topic, key in (("Orders", "K1"), ("Orders", "K2"), ("Other", "K3")):
            props = f"UNIQ_KEY\x01{key}\x02KEYS\x01order-{key}\x02WAIT\x01true"
            send = make_request(
                RequestCode.SEND_MESSAGE_V2, send_fields(topic, 0, properties=props)
            )
            assert (await client.request(send)).code == ResponseCode.SUCCESS
        yield client


def test_the_request_asks_for_a_unique_key_over_the_window() -> None:
    request = query_by_uniq_key("Orders", "K1", begin_ms=5)
    assert request.code == RequestCode.QUERY_MESSAGE == 12
    assert request.ext_fields == {
        "topic": "Orders",
        "key": "K1",
        "maxNum": "32",
        "beginTimestamp": "5",
        "endTimestamp": str(NO_END),
        UNIQUE_KEY_QUERY: "true",
    }


async def test_a_stored_message_is_found_by_its_uniq_key_in_its_own_topic(
    broker: RawClient,
) -> None:
    found = await broker.request(query_by_uniq_key("Orders", "K1", begin_ms=0))
    assert found.code == ResponseCode.SUCCESS
    assert stored_by_uniq_key(found, "Orders", "K1")
    assert not stored_by_uniq_key(found, "Orders", "K2")  # another key's record
    elsewhere = await broker.request(query_by_uniq_key("Orders", "K3", begin_ms=0))
    assert elsewhere.code == ResponseCode.QUERY_NOT_FOUND
    assert elsewhere.remark == "can not find message, maybe time range not correct"
    assert not stored_by_uniq_key(elsewhere, "Orders", "K3")


async def test_the_store_time_window_and_plain_keys(broker: RawClient) -> None:
    later = await broker.request(query_by_uniq_key("Orders", "K1", begin_ms=NO_END - 1))
    assert later.code == ResponseCode.QUERY_NOT_FOUND
    fields = dict(query_by_uniq_key("Orders", "order-K2", 0).ext_fields or {})
    del fields[UNIQUE_KEY_QUERY]  # a plain key query: KEYS are indexed too
    by_key = await broker.request(make_request(RequestCode.QUERY_MESSAGE, fields))
    assert stored_by_uniq_key(by_key, "Orders", "K2")


async def test_a_header_without_a_field_is_refused(broker: RawClient) -> None:
    fields = dict(query_by_uniq_key("Orders", "K1", 0).ext_fields or {})
    del fields["maxNum"]
    refused = await broker.request(make_request(RequestCode.QUERY_MESSAGE, fields))
    assert refused.code == ResponseCode.SYSTEM_ERROR
    assert "<maxNum> is null" in (refused.remark or "")
    with pytest.raises(ProducerError, match="QUERY_MESSAGE answered 1"):
        stored_by_uniq_key(refused, "Orders", "K1")
