"""mqadmin's requests against the dev cluster over the wire: what each one changes and
answers, beyond the recorded probes (``test_admin_golden.py``)."""

from __future__ import annotations

import itertools
import json

import pytest

from producer._remoting.admin import parse_queue_table
from producer._remoting.command import RemotingCommand
from producer._remoting.consumer_requests import (
    ConsumeFromWhere,
    ConsumerData,
    MessageModel,
    PullParams,
    consumer_heartbeat_request,
    pull_request,
)
from producer._remoting.frame_encoder import json_dumps
from producer._remoting.pop_requests import (
    InitMode,
    PopParams,
    ack_request,
    parse_pop_response,
    pop_request,
)
from producer._remoting.request_codes import RequestCode
from producer._remoting.route import parse_route_data, quote_legacy_keys
from producer._response_codes import ResponseCode
from producer._types.message import MessageQueue
from producer.consumer._sql_filters import parse_subscription
from producer.testing import DevCluster
from tests.golden.admin.probes import GROUP
from tests.testing.rawclient import RawClient, create_topic, make_request, send_fields

pytestmark = pytest.mark.anyio
_heartbeats = itertools.count(1 << 20)


async def ask(addr: str, request: RemotingCommand) -> RemotingCommand:
    async with await RawClient.connect(addr) as client:
        return await client.request(request)


async def route_of(cluster: DevCluster, topic: str) -> RemotingCommand:
    return await ask(
        cluster.namesrv_addr, make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    )


def topic_list(answer: RemotingCommand) -> list[str]:
    return list(json.loads(answer.body)["topicList"])


async def test_a_created_topic_is_routed_updated_and_deleted_as_mqadmin_does() -> None:
    async with DevCluster(brokers=2) as cluster:
        a, b = cluster.broker_addr("broker-a"), cluster.broker_addr("broker-b")
        for addr in (a, b):  # updateTopic -c: one request per master
            assert (await ask(addr, create_topic("Created"))).code == ResponseCode.SUCCESS
        route = parse_route_data((await route_of(cluster, "Created")).body)
        assert sorted((q.broker_name, q.write_queue_nums, q.perm) for q in route.queue_datas) == [
            ("broker-a", 4, 6),
            ("broker-b", 4, 6),
        ]
        await ask(
            a, create_topic("Created", queues=2, perm=4)
        )  # updateTopic -b: one broker, replaced
        route = parse_route_data((await route_of(cluster, "Created")).body)
        assert {q.broker_name: (q.write_queue_nums, q.perm) for q in route.queue_datas} == {
            "broker-a": (2, 4),
            "broker-b": (4, 6),
        }
        send = make_request(RequestCode.SEND_MESSAGE_V2, send_fields("Created", 3))
        assert (await ask(b, send)).code == ResponseCode.SUCCESS
        listed = await ask(cluster.namesrv_addr, make_request(206))
        assert "Created" in topic_list(listed)
        # deleteTopic -c: each master, then the name server with the cluster's name
        delete = make_request(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "Created"})
        for addr in (a, b):
            assert (await ask(addr, delete)).code == ResponseCode.SUCCESS
        fields = {"topic": "Created", "clusterName": "OtherCluster"}
        await ask(cluster.namesrv_addr, make_request(RequestCode.DELETE_TOPIC_IN_NAMESRV, fields))
        assert (await route_of(cluster, "Created")).code == ResponseCode.SUCCESS  # not its cluster
        fields["clusterName"] = "DefaultCluster"
        await ask(cluster.namesrv_addr, make_request(RequestCode.DELETE_TOPIC_IN_NAMESRV, fields))
        assert (await route_of(cluster, "Created")).code == ResponseCode.TOPIC_NOT_EXIST
        stats = make_request(RequestCode.GET_TOPIC_STATS_INFO, {"topic": "Created"})
        assert (await ask(b, stats)).remark == "topic[Created] not exist"


@pytest.mark.parametrize("name", ["DefaultCluster", "broker-a", "DefaultCluster_REPLY_TOPIC"])
async def test_the_cluster_and_broker_names_are_system_topics(name: str) -> None:
    """``TopicConfigManager`` adds the broker's own name (and its cluster's) to the JVM's
    system topics; another broker's name is an ordinary topic to it."""
    async with DevCluster(brokers=2) as cluster:
        answer = await ask(cluster.broker_addr("broker-a"), create_topic(name))
        deleted = await ask(
            cluster.broker_addr("broker-a"),
            make_request(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": name}),
        )
    for refused in (answer, deleted):
        assert refused.code == ResponseCode.SYSTEM_ERROR
        assert refused.remark == f"The topic[{name}] is conflict with system topic."


async def test_a_create_without_a_required_field_is_refused_naming_it() -> None:
    request = create_topic("T")
    assert request.ext_fields is not None
    del request.ext_fields["readQueueNums"]
    async with DevCluster(brokers=1) as cluster:
        answer = await ask(cluster.broker_addr("broker-a"), request)
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark is not None and "<readQueueNums> is null" in answer.remark


async def test_cluster_info_lists_every_broker_by_id_in_the_real_tables_order() -> None:
    async with DevCluster(brokers=3, cluster_name="Blue") as cluster:
        answer = await ask(cluster.namesrv_addr, make_request(106))
        addrs = {name: cluster.broker_addr(name) for name in cluster.broker_names}
    body = answer.body.decode()
    assert body.startswith('{"brokerAddrTable":{"broker-b":{"brokerAddrs":{0:"')  # bare int keys
    info = json.loads(quote_legacy_keys(answer.body))
    # HashMap(128) of broker names: b, c, a - as a real name server writes them
    assert list(info["brokerAddrTable"]) == ["broker-b", "broker-c", "broker-a"]
    assert {n: d["brokerAddrs"] for n, d in info["brokerAddrTable"].items()} == {
        n: {"0": addr} for n, addr in addrs.items()
    }
    assert info["clusterAddrTable"] == {"Blue": ["broker-b", "broker-c", "broker-a"]}


async def test_topic_lists_are_in_the_real_name_servers_set_order() -> None:
    """The topics the recorded 4.9.4 name server listed, in the order it listed them."""
    recorded = [
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "BenchmarkTest",
        "OFFSET_MOVED_EVENT",
        "TBW102",
        "AdminProbeTopic",
        "SELF_TEST_TOPIC",
        "DefaultCluster",
        "SCHEDULE_TOPIC_XXXX",
        "HaProbe",
        "DefaultCluster_REPLY_TOPIC",
        "broker-b",
        "%RETRY%AdminProbeGroup",
        "broker-a",
    ]
    async with DevCluster(brokers=1) as cluster:
        for topic in recorded:
            cluster.add_topic(topic, 1)
        listed = await ask(cluster.namesrv_addr, make_request(206))
        by_cluster = await ask(
            cluster.namesrv_addr, make_request(224, {"cluster": "DefaultCluster"})
        )
        none = await ask(cluster.namesrv_addr, make_request(224, {"cluster": "Nobody"}))
    assert topic_list(listed) == topic_list(by_cluster) == recorded
    assert topic_list(none) == []


def heartbeat(client_id: str, group: str, topics: list[str]) -> RemotingCommand:
    data = ConsumerData(
        group,
        MessageModel.CLUSTERING,
        ConsumeFromWhere.FIRST_OFFSET,
        tuple(parse_subscription(t, "*") for t in topics),
        {t: 1 for t in topics},
    )
    request = consumer_heartbeat_request(client_id, [data])
    request.opaque = next(_heartbeats)
    return request


async def test_consume_stats_skip_topics_the_live_group_does_not_subscribe() -> None:
    async with DevCluster(brokers=1, topics={"Subscribed": 2, "Dropped": 1}) as cluster:
        addr = cluster.broker_addr("broker-a")
        async with await RawClient.connect(addr) as client:
            for topic in ("Subscribed", "Dropped"):
                fields = {"consumerGroup": GROUP, "topic": topic, "queueId": "0"}
                commit = make_request(
                    RequestCode.UPDATE_CONSUMER_OFFSET, {**fields, "commitOffset": "0"}
                )
                await client.request(commit)
            stats = make_request(RequestCode.GET_CONSUME_STATS, {"consumerGroup": GROUP})
            before = parse_queue_table((await client.request(stats)).body)
            await client.answer(heartbeat("c1", GROUP, ["Subscribed"]))
            stats.opaque += 1000
            after = parse_queue_table((await client.request(stats)).body)
    assert sorted({q.topic for q, _ in before}) == ["Dropped", "Subscribed"]
    assert [(q.topic, q.queue_id) for q, _ in after] == [("Subscribed", 0), ("Subscribed", 1)]


async def test_a_4_9_4_broker_does_not_know_the_assignment_requests() -> None:
    async with DevCluster(brokers=1) as cluster:
        answer = await ask(cluster.broker_addr("broker-a"), make_request(400, body=b"{}"))
    assert answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert answer.remark == " request type 400 not supported"


async def assignment(
    client: RawClient, client_id: str, topic: str, strategy: str = "AVG"
) -> object:
    body = {
        "clientId": client_id,
        "consumerGroup": GROUP,
        "messageModel": "CLUSTERING",
        "strategyName": strategy,
        "topic": topic,
    }
    answer = await client.answer(make_request(400, body=json_dumps(body)))
    assert answer.code == ResponseCode.SUCCESS
    found = json.loads(answer.body).get("messageQueueAssignments")
    if found is None:
        return None
    return sorted(
        (a["messageQueue"]["brokerName"], a["messageQueue"]["queueId"], a["mode"]) for a in found
    )


async def set_mode(client: RawClient, topic: str, mode: str, share: int) -> RemotingCommand:
    body = {"consumerGroup": GROUP, "mode": mode, "popShareQueueNum": share, "topic": topic}
    return await client.answer(make_request(401, body=json_dumps(body)))


async def test_assignments_split_pull_queues_and_share_pop_brokers_as_allocate4pop() -> None:
    cluster = DevCluster(brokers=2, broker_version="5.x", topics={"Pop": 2})
    async with cluster, await RawClient.connect(cluster.broker_addr("broker-a")) as client:
        for cid in ("c1", "c2", "c3"):
            await client.answer(heartbeat(cid, GROUP, ["Pop"]))
        # PULL by default: AVG over the 4 queues of both brokers among 3 clients
        assert await assignment(client, "c1", "Pop") == [
            ("broker-a", 0, "PULL"),
            ("broker-a", 1, "PULL"),
        ]
        assert await assignment(client, "c3", "Pop") == [("broker-b", 1, "PULL")]
        assert await assignment(client, "c1", "Pop", "AVG_BY_CIRCLE") == [
            ("broker-a", 0, "PULL"),
            ("broker-b", 1, "PULL"),
        ]
        assert await assignment(client, "c1", "Pop", "NoSuchStrategy") is None
        assert await assignment(client, "c1", "NoRoute") is None
        assert (await set_mode(client, "Pop", "POP", 0)).code == ResponseCode.SUCCESS
        assert await assignment(client, "c2", "Pop") == [
            ("broker-a", -1, "POP"),
            ("broker-b", -1, "POP"),
        ]
        await set_mode(client, "Pop", "POP", 1)  # its own share and the next client's
        assert await assignment(client, "c3", "Pop") == [
            ("broker-a", 0, "POP"),
            ("broker-a", 1, "POP"),
            ("broker-b", 1, "POP"),
        ]
        refused = await set_mode(client, f"%RETRY%{GROUP}", "POP", 0)
        assert (refused.code, refused.remark) == (
            ResponseCode.NO_PERMISSION,
            "retry topic is not allowed to set mode",
        )
        assert (await assignment(client, "c1", f"%RETRY%{GROUP}"))[0][2] == "PULL"  # type: ignore[index]


async def test_runtime_info_says_the_version_and_4_9_4s_earliest_time_quirk() -> None:
    for version, earliest_known in (("4.9.4", False), ("5.x", True)):
        async with DevCluster(brokers=1, broker_version=version, topics={"T": 1}) as cluster:
            addr = cluster.broker_addr("broker-a")
            assert (await ask(addr, make_request(310, send_fields("T")))).code == 0
            answer = await ask(addr, make_request(RequestCode.GET_BROKER_RUNTIME_INFO))
            stored = cluster.messages("T")[0]
        table = json.loads(answer.body)["table"]
        assert table["msgPutTotalTodayNow"] == "1"
        expected = str(stored.store_timestamp) if earliest_known else "-1"
        assert table["earliestMessageTimeStamp"] == expected, version


async def test_a_pop_groups_consume_stats_follow_its_acks() -> None:
    """A 5.x broker's offset table moves as pops' check points are acked (PopBufferMerge-
    Service), which is what consumerProgress shows for a pop-mode push consumer."""
    clock = [1_000_000]
    cluster = DevCluster(
        brokers=1, broker_version="5.x", topics={"P": 1}, clock_ms=lambda: clock[0]
    )
    async with cluster, await RawClient.connect(cluster.broker_addr("broker-a")) as client:
        for _ in range(3):
            assert (await client.request(make_request(310, send_fields("P")))).code == 0
        params = PopParams(GROUP, "P", "broker-a", 2, 60_000, 0, clock[0], 0, InitMode.MIN)
        pop = make_request(RequestCode.POP_MESSAGE, pop_request(params).ext_fields)
        popped = parse_pop_response(await client.request(pop))
        stats = make_request(RequestCode.GET_CONSUME_STATS, {"consumerGroup": GROUP})

        async def consumer_offset() -> tuple[int, int]:
            stats.opaque += 1000
            [(_, line)] = parse_queue_table((await client.request(stats)).body)
            return line["consumerOffset"], line["brokerOffset"]

        assert await consumer_offset() == (0, 3)  # popped 0 and 1, not acked
        for offset in (1, 0):
            handle = popped.handle_for("broker-a", 0, offset)
            ack = make_request(RequestCode.ACK_MESSAGE, ack_request(GROUP, "P", handle).ext_fields)
            assert (await client.request(ack)).code == ResponseCode.SUCCESS
        assert await consumer_offset() == (2, 3)
        pop.opaque += 1000
        parse_pop_response(await client.request(pop))  # offset 2, never acked
        assert await consumer_offset() == (2, 3)
        clock[0] += 60_000
        cluster.tick()  # revived into the pop retry topic: the check point is done
        assert await consumer_offset() == (3, 3)


async def test_a_5x_create_keeps_the_message_type_attribute_and_the_order_flag() -> None:
    """``mqadmin5 updateTopic -a +message.type=FIFO -o true``: GET_TOPIC_CONFIG shows both."""
    request = create_topic("Fifo")
    assert request.ext_fields is not None
    request.ext_fields.update({"attributes": "+message.type=FIFO", "order": "true"})
    async with DevCluster(brokers=1, broker_version="5.x") as cluster:
        addr = cluster.broker_addr("broker-a")
        assert (await ask(addr, request)).code == ResponseCode.SUCCESS
        answer = await ask(addr, make_request(RequestCode.GET_TOPIC_CONFIG, {"topic": "Fifo"}))
    config = json.loads(answer.body)
    assert (config["attributes"], config["order"]) == ({"message.type": "FIFO"}, True)


def sub_group(**fields: object) -> RemotingCommand:
    body = {"groupName": GROUP, "retryMaxTimes": 3, "retryQueueNums": 1, **fields}
    return make_request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=json_dumps(body))


async def test_update_sub_group_governs_pulls_and_delete_sub_group_restores_the_defaults() -> None:
    """``updateSubGroup ... -s false`` (consumeEnable) refuses the group's pulls, as
    ``PullMessageProcessor`` does; ``deleteSubGroup -r true`` drops it and its offsets."""
    pull = PullParams(GROUP, MessageQueue("T", "broker-a", 0), 0, 1, 0, 0, 0, suspend=False)
    async with DevCluster(brokers=1, topics={"T": 1}) as cluster:
        addr = cluster.broker_addr("broker-a")
        assert (await ask(addr, sub_group(consumeEnable=False))).code == ResponseCode.SUCCESS
        refused = await ask(addr, make_request(11, pull_request(pull).ext_fields))
        assert (refused.code, refused.remark) == (
            ResponseCode.NO_PERMISSION,
            f"subscription group no permission, {GROUP}",
        )
        fields = {"consumerGroup": GROUP, "topic": "T", "queueId": "0", "commitOffset": "0"}
        await ask(addr, make_request(RequestCode.UPDATE_CONSUMER_OFFSET, fields))
        delete = {"groupName": GROUP, "removeOffset": "true"}
        assert (await ask(addr, make_request(207, delete))).code == ResponseCode.SUCCESS
        allowed = await ask(addr, make_request(11, pull_request(pull).ext_fields))
        stats = await ask(
            addr, make_request(RequestCode.GET_CONSUME_STATS, {"consumerGroup": GROUP})
        )
        bad = await ask(addr, make_request(200, body=b'{"retryMaxTimes":1}'))
    # the defaults again: past the permission check, to the next one (no heartbeat yet)
    assert allowed.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
    assert parse_queue_table(stats.body) == []  # its offsets went with it
    assert bad.code == ResponseCode.SYSTEM_ERROR and "groupName" in (bad.remark or "")
