"""The admin probes recorded in ``4_9_4/`` and ``5_2_0/`` (``record.py``) and replayed against
the dev cluster (``tests/testing/test_admin_golden.py``): the requests ``mqadmin`` sends for
its everyday commands, with the headers ``MQClientAPIImpl`` (4.9.4) writes, in an order
that makes each answer interesting (a topic created, a message sent to it, an offset
committed, then the stats; the topic deleted last).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_encoder import json_dumps
from producer._remoting.request_codes import RequestCode

TOPIC = "AdminProbeTopic"
GROUP = "AdminProbeGroup"
CLIENT_ID = "127.0.0.1@admin-probe"

Context = dict[str, str]
_KV = {"namespace": "ORDER_TOPIC_CONFIG", "key": TOPIC}


@dataclass(frozen=True)
class Probe:
    target: str  # "namesrv" or "broker"
    name: str
    code: int
    fields: Callable[[Context], dict[str, str] | None] = lambda _: None
    body: Callable[[Context], bytes] = lambda _: b""
    learn: Callable[[RemotingCommand, Context], None] = field(default=lambda _a, _c: None)

    def command(self, context: Context) -> RemotingCommand:
        return RemotingCommand(
            self.code, ext_fields=self.fields(context), body=self.body(context), version=401
        )


def _create(topic: str, perm: int = 6) -> Callable[[Context], dict[str, str]]:
    return lambda _: {
        "topic": topic,
        "defaultTopic": "TBW102",
        "readQueueNums": "4",
        "writeQueueNums": "4",
        "perm": str(perm),
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": "0",
        "order": "false",
    }


def _send_fields(_: Context) -> dict[str, str]:
    return {
        "a": "AdminProbeProducer",
        "b": TOPIC,
        "c": "TBW102",
        "d": "4",
        "e": "1",
        "f": "0",
        "g": "1795259977471",
        "h": "0",
        "i": "KEYS\x01probe-key\x02UNIQ_KEY\x01AC1100010000000000000000000000AA\x02WAIT\x01true",
        "j": "0",
        "k": "false",
        "m": "false",
    }


def _learn_offset(answer: RemotingCommand, context: Context) -> None:
    context["msg_id"] = (answer.ext_fields or {}).get("msgId", "")
    context["phy_offset"] = str(int(context["msg_id"][-16:] or "0", 16))


def _heartbeat_body(_: Context) -> bytes:
    return json_dumps(
        {
            "clientID": CLIENT_ID,
            "consumerDataSet": [
                {
                    "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
                    "consumeType": "CONSUME_PASSIVELY",
                    "groupName": GROUP,
                    "messageModel": "CLUSTERING",
                    "subscriptionDataSet": [
                        {
                            "classFilterMode": False,
                            "codeSet": [],
                            "expressionType": "TAG",
                            "subString": "*",
                            "subVersion": 1795259977000,
                            "tagsSet": [],
                            "topic": TOPIC,
                        }
                    ],
                    "unitMode": False,
                }
            ],
            "producerDataSet": [{"groupName": "CLIENT_INNER_PRODUCER"}],
        }
    )


def _mode_body(mode: str) -> Callable[[Context], bytes]:
    return lambda _: json_dumps(
        {"consumerGroup": GROUP, "mode": mode, "popShareQueueNum": 0, "topic": TOPIC}
    )


def _assignment_body(_: Context) -> bytes:
    return json_dumps(
        {
            "clientId": CLIENT_ID,
            "consumerGroup": GROUP,
            "messageModel": "CLUSTERING",
            "strategyName": "AVG",
            "topic": TOPIC,
        }
    )


def _sub_group(_: Context) -> bytes:
    return json_dumps(
        {
            "brokerId": 0,
            "consumeBroadcastEnable": True,
            "consumeEnable": True,
            "consumeFromMinEnable": True,
            "groupName": GROUP,
            "notifyConsumerIdsChangedEnable": True,
            "retryMaxTimes": 3,
            "retryQueueNums": 1,
            "whichBrokerWhenConsumeSlowly": 1,
        }
    )


def _bad(_: Context) -> bytes:
    return b"{not json"


def probes(*, v5: bool = False) -> list[Probe]:
    """The probes in recording order (the 5.x ones only with ``v5``)."""
    code = RequestCode
    steps = [
        Probe("namesrv", "cluster_info", code.GET_BROKER_CLUSTER_INFO),
        Probe("broker", "create_topic", code.UPDATE_AND_CREATE_TOPIC, _create(TOPIC)),
        Probe("broker", "create_bad_name", code.UPDATE_AND_CREATE_TOPIC, _create("bad topic!")),
        Probe("broker", "create_system_topic", code.UPDATE_AND_CREATE_TOPIC, _create("TBW102")),
        Probe("namesrv", "route_created", code.GET_ROUTEINFO_BY_TOPIC, lambda _: {"topic": TOPIC}),
        Probe("namesrv", "topic_list", code.GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
        Probe(
            "namesrv",
            "topics_by_cluster",
            code.GET_TOPICS_BY_CLUSTER,
            lambda c: {"cluster": c["cluster"]},
        ),
        Probe(
            "broker", "send", code.SEND_MESSAGE_V2, _send_fields, lambda _: b"probe", _learn_offset
        ),
        Probe("broker", "topic_stats", code.GET_TOPIC_STATS_INFO, lambda _: {"topic": TOPIC}),
        Probe(
            "broker", "topic_stats_missing", code.GET_TOPIC_STATS_INFO, lambda _: {"topic": "Nx"}
        ),
        Probe(
            "broker",
            "commit_offset",
            code.UPDATE_CONSUMER_OFFSET,
            lambda _: {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "1", "commitOffset": "1"},
        ),
        Probe(
            "broker",
            "consume_stats",
            code.GET_CONSUME_STATS,
            lambda _: {"consumerGroup": GROUP, "topic": TOPIC},
        ),
        Probe(
            "broker",
            "consume_stats_any_topic",
            code.GET_CONSUME_STATS,
            lambda _: {"consumerGroup": GROUP},
        ),
        Probe(
            "broker",
            "connections_offline",
            code.GET_CONSUMER_CONNECTION_LIST,
            lambda _: {"consumerGroup": GROUP},
        ),
        Probe("broker", "heartbeat", code.HEART_BEAT, body=_heartbeat_body),
        Probe(
            "broker",
            "connections",
            code.GET_CONSUMER_CONNECTION_LIST,
            lambda _: {"consumerGroup": GROUP},
        ),
        Probe("broker", "runtime_info", code.GET_BROKER_RUNTIME_INFO),
    ]
    steps += [
        Probe(
            "broker", "view_by_id", code.VIEW_MESSAGE_BY_ID, lambda c: {"offset": c["phy_offset"]}
        ),
        Probe(
            "broker", "view_by_bad_id", code.VIEW_MESSAGE_BY_ID, lambda _: {"offset": "99999999"}
        ),
    ]
    if v5:
        steps += [
            Probe("broker", "assignment_default", code.QUERY_ASSIGNMENT, body=_assignment_body),
            Probe("broker", "set_mode_pop", code.SET_MESSAGE_REQUEST_MODE, body=_mode_body("POP")),
            Probe("broker", "assignment_pop", code.QUERY_ASSIGNMENT, body=_assignment_body),
            Probe(
                "broker",
                "set_mode_retry",
                code.SET_MESSAGE_REQUEST_MODE,
                body=lambda _: json_dumps(
                    {"consumerGroup": GROUP, "mode": "POP", "topic": "%RETRY%" + GROUP}
                ),
            ),
        ]
    steps += [
        Probe("broker", "delete_topic", code.DELETE_TOPIC_IN_BROKER, lambda _: {"topic": TOPIC}),
        Probe(
            "namesrv",
            "delete_topic_namesrv",
            code.DELETE_TOPIC_IN_NAMESRV,
            lambda c: {"topic": TOPIC, "clusterName": c["cluster"]},
        ),
        Probe("namesrv", "route_deleted", code.GET_ROUTEINFO_BY_TOPIC, lambda _: {"topic": TOPIC}),
        # updateTopic -o true: the order conf kept by the name server (KVConfigManager)
        Probe("namesrv", "kv_put", code.PUT_KV_CONFIG, lambda _: {**_KV, "value": "b:4"}),
        Probe("namesrv", "kv_get", code.GET_KV_CONFIG, lambda _: _KV),
        Probe("namesrv", "kv_delete", code.DELETE_KV_CONFIG, lambda _: _KV),
        Probe("namesrv", "kv_get_deleted", code.GET_KV_CONFIG, lambda _: _KV),
        Probe("namesrv", "kv_put_no_key", code.PUT_KV_CONFIG, lambda _: {"namespace": "N"}),
        # updateSubGroup / deleteSubGroup (4.9.4 mqadmin's SubscriptionGroupConfig body)
        Probe(
            "broker", "sub_group_update", code.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=_sub_group
        ),
        Probe("broker", "sub_group_bad_body", code.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=_bad),
        Probe(
            "broker",
            "sub_group_delete",
            code.DELETE_SUBSCRIPTIONGROUP,
            lambda _: {"groupName": GROUP, "removeOffset": "true"},
        ),
    ]
    return steps
