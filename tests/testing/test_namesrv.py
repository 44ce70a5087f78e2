"""The name server over the wire: route encodings by request version, errors, TBW102."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from latency_fault import java_string_hash
from producer._remoting.frame_decoder import decode_frame
from producer._remoting.java_hash_map import java_hash_order
from producer._remoting.producer_requests import parse_route_response, route_request
from producer._remoting.request_codes import RequestCode, SerializeType
from producer._remoting.route import parse_route_data
from producer._response_codes import ResponseCode
from producer.testing import DevCluster
from tests.protocol.golden import golden_dir
from tests.testing.rawclient import RawClient, make_request

pytestmark = pytest.mark.anyio

PROBE = golden_dir() / "probe"
FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."


@pytest.fixture
async def cluster() -> AsyncIterator[DevCluster]:
    cluster = DevCluster(brokers=2, auto_create_topic={"broker-a"})
    cluster.add_topic("GoldenTopic", 4, brokers=["broker-a"])
    async with cluster:
        yield cluster


def route(topic: str, *, version: int = 401, standard_only: bool = False, **kw: object):  # type: ignore[no-untyped-def]
    fields = {"topic": topic}
    if standard_only:
        fields["acceptStandardJsonOnly"] = "true"
    return make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, fields, version=version, **kw)  # type: ignore[arg-type]


def golden_body(name: str, cluster: DevCluster) -> bytes:
    """A probe response body with the capture's broker-a address swapped for ours."""
    body = decode_frame((PROBE / name).read_bytes()).body
    return body.replace(b"127.0.0.2:10911", cluster.broker_addr("broker-a").encode())


@pytest.mark.parametrize(
    ("version", "standard_only", "serialize_type", "golden"),
    [
        (0, False, SerializeType.JSON, "01_route_json_version0_legacy_body.response.bin"),
        (0, True, SerializeType.JSON, "02_route_json_version0_acceptStandardJsonOnly.response.bin"),
        (401, False, SerializeType.JSON, "03_route_json_version401.response.bin"),
        (0, False, SerializeType.ROCKETMQ, "04_route_binary_version0.response.bin"),
        (402, False, SerializeType.ROCKETMQ, "03_route_json_version401.response.bin"),
    ],
)
async def test_route_body_is_legacy_below_401_unless_standard_json_is_asked_for(
    cluster: DevCluster,
    version: int,
    standard_only: bool,
    serialize_type: SerializeType,
    golden: str,
) -> None:
    async with await RawClient.connect(cluster.namesrv_addr) as client:
        request = route(
            "GoldenTopic",
            version=version,
            standard_only=standard_only,
            serialize_type=serialize_type,
        )
        response = await client.request(request)
    assert (response.code, response.flag, response.serialize_type) == (0, 1, serialize_type)
    assert response.ext_fields is None and response.remark is None
    assert response.body == golden_body(golden, cluster)
    assert parse_route_data(response.body).queue_datas[0].write_queue_nums == 4


@pytest.mark.parametrize("serialize_type", list(SerializeType))
async def test_unknown_topic_is_topic_not_exist_with_the_real_remark(
    cluster: DevCluster, serialize_type: SerializeType
) -> None:
    async with await RawClient.connect(cluster.namesrv_addr) as client:
        response = await client.request(route("NoSuchTopic", serialize_type=serialize_type))
    assert response.code == ResponseCode.TOPIC_NOT_EXIST
    assert response.remark == f"No topic route info in name server for the topic: NoSuchTopic{FAQ}"
    assert response.body == b"" and response.serialize_type == serialize_type


async def test_tbw102_is_served_by_the_auto_create_brokers_only(cluster: DevCluster) -> None:
    async with await RawClient.connect(cluster.namesrv_addr) as client:
        response = await client.request(route("TBW102"))
    data = parse_route_data(response.body)
    assert [
        (q.broker_name, q.perm, q.write_queue_nums, q.read_queue_nums) for q in data.queue_datas
    ] == [("broker-a", 7, 8, 8)]
    assert data.broker_datas[0].broker_addrs == {0: cluster.broker_addr("broker-a")}


async def test_no_auto_create_means_no_tbw102_route() -> None:
    async with (
        DevCluster(brokers=1, auto_create_topic=False) as cluster,
        await RawClient.connect(cluster.namesrv_addr) as client,
    ):
        response = await client.request(route("TBW102"))
    assert response.code == ResponseCode.TOPIC_NOT_EXIST


async def test_routes_list_brokers_in_java_hashmap_order_and_follow_add_topic(
    cluster: DevCluster,
) -> None:
    cluster.add_topic("Both", 2)
    cluster.add_topic("OnlyB", 3, perm=4, brokers=["broker-b"])
    async with await RawClient.connect(cluster.namesrv_addr) as client:
        both = parse_route_response(await client.request(route_request("Both")))
        only_b = parse_route_response(await client.request(route_request("OnlyB")))
    assert [b.broker_name for b in both.broker_datas] == ["broker-b", "broker-a"]  # as captured
    assert [q.broker_name for q in both.queue_datas] == ["broker-b", "broker-a"]
    assert [(q.broker_name, q.perm, q.write_queue_nums) for q in only_b.queue_datas] == [
        ("broker-b", 4, 3)
    ]


def test_java_hash_order_matches_java_hashmap() -> None:
    # "broker-a".hashCode() = 372697965 -> bucket 11; "broker-b" -> bucket 8 (of 16).
    assert java_hash_order(["broker-a", "broker-b"], java_string_hash) == ["broker-b", "broker-a"]
    names = [f"broker-{c}" for c in "abcdefghijklmnop"]
    assert sorted(java_hash_order(names, java_string_hash)) == sorted(names)


@pytest.mark.parametrize("serialize_type", list(SerializeType))
async def test_other_codes_are_not_supported(
    cluster: DevCluster, serialize_type: SerializeType
) -> None:
    async with await RawClient.connect(cluster.namesrv_addr) as client:
        response = await client.request(make_request(9999, serialize_type=serialize_type))
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert response.remark == " request type 9999 not supported"
    assert response.serialize_type == serialize_type


async def test_missing_topic_field_is_a_system_error(cluster: DevCluster) -> None:
    async with await RawClient.connect(cluster.namesrv_addr) as client:
        response = await client.request(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {}))
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert "<topic> is null" in (response.remark or "")


async def test_auto_created_topic_gets_a_route(cluster: DevCluster) -> None:
    from tests.testing.rawclient import send_fields

    async with await RawClient.connect(cluster.broker_addr("broker-a")) as broker:
        sent = await broker.request(
            make_request(RequestCode.SEND_MESSAGE_V2, send_fields("Fresh", 1))
        )
    assert sent.code == ResponseCode.SUCCESS
    async with await RawClient.connect(cluster.namesrv_addr) as client:
        data = parse_route_response(await client.request(route_request("Fresh")))
    assert [(q.broker_name, q.perm, q.write_queue_nums) for q in data.queue_datas] == [
        ("broker-a", 6, 4)
    ]
