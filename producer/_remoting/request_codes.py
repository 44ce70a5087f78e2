"""The codes a request carries: request codes, the client's language, the header's
serialisation and the frame flags. The response codes' table lives below the error tree,
in :mod:`producer._response_codes` (the errors are built from it); this module imports
nothing of the SDK.
"""

from __future__ import annotations

import enum

__all__ = [
    "FLAG_ONEWAY",
    "FLAG_RESPONSE",
    "PROTOCOL_VERSION",
    "LanguageCode",
    "RequestCode",
    "SerializeType",
]


class RequestCode(enum.IntEnum):
    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    QUERY_MESSAGE = 12
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_CONSUMER_OFFSET = 15
    UPDATE_AND_CREATE_TOPIC = 17  # admin (producer._remoting.admin): mqadmin updateTopic
    GET_BROKER_RUNTIME_INFO = 28  # admin: clusterList's per-broker figures
    SEARCH_OFFSET_BY_TIMESTAMP = 29
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    GET_EARLIEST_MSG_STORETIME = 32
    VIEW_MESSAGE_BY_ID = 33  # admin: queryMsgById (a commit-log offset)
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    CONSUMER_SEND_MSG_BACK = 36
    END_TRANSACTION = 37
    GET_CONSUMER_LIST_BY_GROUP = 38
    CHECK_TRANSACTION_STATE = 39
    NOTIFY_CONSUMER_IDS_CHANGED = 40
    LOCK_BATCH_MQ = 41
    UNLOCK_BATCH_MQ = 42
    GET_ALL_CONSUMER_OFFSET = 43
    CHECK_CLIENT_CONFIG = 46
    PUT_KV_CONFIG = 100  # admin, name server: updateTopic -o true (ORDER_TOPIC_CONFIG)
    GET_KV_CONFIG = 101
    DELETE_KV_CONFIG = 102
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106  # admin, name server: clusterList, updateTopic -c
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200  # admin: updateSubGroup
    GET_TOPIC_STATS_INFO = 202  # admin: topicStatus
    GET_CONSUMER_CONNECTION_LIST = 203  # admin: consumerProgress, consumerConnection
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206  # admin, name server: topicList
    DELETE_SUBSCRIPTIONGROUP = 207  # admin: deleteSubGroup
    GET_CONSUME_STATS = 208  # admin: consumerProgress
    DELETE_TOPIC_IN_BROKER = 215  # admin: deleteTopic
    DELETE_TOPIC_IN_NAMESRV = 216  # admin, name server: deleteTopic
    GET_TOPICS_BY_CLUSTER = 224  # admin, name server: topicList -c
    QUERY_TOPIC_CONSUME_BY_WHO = 300  # admin: the groups queryMsgById reports on
    SEND_MESSAGE_V2 = 310
    SEND_BATCH_MESSAGE = 320
    SEND_REPLY_MESSAGE_V2 = 325  # a reply (MSG_TYPE=reply): ReplyMessageProcessor
    PUSH_REPLY_MESSAGE_TO_CLIENT = 326  # broker -> requester: the reply, pushed
    GET_TOPIC_CONFIG = 351  # 5.x: a topic's config, with its message type
    # 5.x server-side rebalance (producer._remoting.assignment): QueryAssignmentProcessor
    QUERY_ASSIGNMENT = 400
    SET_MESSAGE_REQUEST_MODE = 401
    # 5.x pop consumption (producer._remoting.pop_requests)
    POP_MESSAGE = 200050
    ACK_MESSAGE = 200051
    CHANGE_MESSAGE_INVISIBLETIME = 200053
    BATCH_ACK_MESSAGE = 200151


class LanguageCode(enum.IntEnum):
    """RocketMQ's ``LanguageCode``; JSON headers carry the name, binary ones the number."""

    JAVA = 0
    CPP = 1
    DOTNET = 2
    PYTHON = 3
    DELPHI = 4
    ERLANG = 5
    RUBY = 6
    OTHER = 7
    HTTP = 8
    GO = 9
    PHP = 10
    OMS = 11
    RUST = 12


class SerializeType(enum.IntEnum):
    JSON = 0
    ROCKETMQ = 1


FLAG_RESPONSE = 0b01
FLAG_ONEWAY = 0b10

# MQVersion.Version ordinals (rocketmq-all-5.3.3 common/MQVersion.java). Every command
# carries its sender's: a broker's responses say which broker answered.
V4_9_4 = 401
V5_0_0 = 413
V5_2_0 = 453
V5_3_0 = 473
V5_3_3 = 479
_VERSION_NAMES = {V4_9_4: "V4_9_4", V5_0_0: "V5_0_0", V5_2_0: "V5_2_0", V5_3_0: "V5_3_0"}
_VERSION_NAMES[V5_3_3] = "V5_3_3"

# What the 4.9.4 Java client sends. A name server answers requests at or above it with a
# standard-JSON route body.
PROTOCOL_VERSION = V4_9_4
#: The first broker version with timed delivery (TimerMessageStore, 5.0.0).
TIMER_BROKER_VERSION = V5_0_0
#: The first broker version that honours QUERY_CONSUMER_OFFSET's ``setZeroIfNotFound``
#: (5.0.0 ``ConsumerManageProcessor.queryConsumerOffset``); older ones ignore it.
ZERO_IF_NOT_FOUND_VERSION = V5_0_0
#: The first broker version with pop consumption (PopMessageProcessor, 5.0.0).
POP_BROKER_VERSION = V5_0_0


def version_name(version: int) -> str:
    """``MQVersion.getVersionDesc`` for the versions named here, else the code."""
    name = _VERSION_NAMES.get(version)
    if name is not None:
        return name
    major = "5.x" if version >= V5_0_0 else "4.x or older"
    return f"version code {version} ({major})"
