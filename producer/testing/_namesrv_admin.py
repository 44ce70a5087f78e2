"""A name server's answers to ``mqadmin``'s requests (``DefaultRequestProcessor`` and
``RouteInfoManager`` of rocketmq-all-4.9.4; bodies by :mod:`producer._remoting.admin`).

* GET_BROKER_CLUSTER_INFO (106): ``ClusterInfo`` - ``brokerAddrTable`` (a
  ``HashMap(128)`` by broker name, each ``BrokerData`` with every registered id: the
  master 0 and any slaves) and ``clusterAddrTable`` (``HashMap(32)`` of ``HashSet`` s).
  A 5.x name server's ``BrokerData`` adds ``enableActingMaster``.
* GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206): every topic with a route (``TopicList``).
* GET_TOPICS_BY_CLUSTER (224): the topics on the cluster's brokers.
* DELETE_TOPIC_IN_NAMESRV (216): with ``clusterName``, the topic's queue data of that
  cluster's brokers (the topic goes when none is left); without, the whole topic.
  Always SUCCESS, as the real one.
* PUT_KV_CONFIG / GET_KV_CONFIG / DELETE_KV_CONFIG (100-102): ``updateTopic -o true`` keeps
  the topic's order (``broker-a:4;broker-b:4``) under ``ORDER_TOPIC_CONFIG``. Routes do not
  carry it: a stock name server adds ``orderTopicConf`` only with ``orderMessageEnable``
  (default false).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from latency_fault import java_string_hash
from producer._remoting.admin import cluster_info_body, topic_list_body
from producer._remoting.command import RemotingCommand
from producer._remoting.java_hash_map import java_hash_order
from producer._remoting.request_codes import V5_0_0, RequestCode
from producer._response_codes import ResponseCode

if TYPE_CHECKING:
    from producer.testing._namesrv import NameServer

__all__ = ["NAMESRV_ADMIN_CODES", "answer_namesrv_admin"]

KV_CODES = (RequestCode.PUT_KV_CONFIG, RequestCode.GET_KV_CONFIG, RequestCode.DELETE_KV_CONFIG)
NAMESRV_ADMIN_CODES = frozenset(
    {
        RequestCode.GET_BROKER_CLUSTER_INFO,
        RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        RequestCode.GET_TOPICS_BY_CLUSTER,
        RequestCode.DELETE_TOPIC_IN_NAMESRV,
        *KV_CODES,
    }
)
_BROKER_TABLE_CAPACITY = 128  # RouteInfoManager: new HashMap<>(128)
_CLUSTER_TABLE_CAPACITY = 32
_TOPIC_TABLE_CAPACITY = 1024


def answer_namesrv_admin(names: NameServer, request: RemotingCommand) -> RemotingCommand:
    """The name server's answer to one of ``NAMESRV_ADMIN_CODES``."""
    code = request.code
    if code in KV_CODES:
        return _kv_answer(names.kv, request)
    if code == RequestCode.GET_BROKER_CLUSTER_INFO:
        return request.make_response(ResponseCode.SUCCESS, body=cluster_info(names))
    if code == RequestCode.DELETE_TOPIC_IN_NAMESRV:
        topic = request.field("topic")
        if topic is None:
            remark = (
                "org.apache.rocketmq.remoting.exception.RemotingCommandException: "
                "the custom field <topic> is null"
            )
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=remark)
        cluster = request.field("clusterName")
        names.delete_topic(topic, cluster=cluster or None)
        return request.make_response(ResponseCode.SUCCESS)
    if code == RequestCode.GET_TOPICS_BY_CLUSTER:
        cluster = request.field("cluster")
        topics = names.topics_on(names.cluster_members(cluster or ""))
    else:
        topics = names.topics()
    return request.make_response(ResponseCode.SUCCESS, body=topic_list_body(_set_order(topics)))


def _kv_answer(kv: dict[tuple[str, str], str], request: RemotingCommand) -> RemotingCommand:
    """``KVConfigManager``: put (SYSTEM_ERROR ``namespace or key is null``), get
    (QUERY_NOT_FOUND ``No config item, ...``), delete (always SUCCESS)."""
    namespace, key = request.field("namespace"), request.field("key")
    if request.code == RequestCode.PUT_KV_CONFIG:
        if namespace is None or key is None:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR, remark="namespace or key is null"
            )
        kv[(namespace, key)] = request.field("value") or ""
    elif request.code == RequestCode.DELETE_KV_CONFIG:
        kv.pop((namespace or "", key or ""), None)
    else:
        value = kv.get((namespace or "", key or ""))
        if value is None:
            remark = f"No config item, Namespace: {namespace} Key: {key}"
            return request.make_response(ResponseCode.QUERY_NOT_FOUND, remark=remark)
        return request.make_response(ResponseCode.SUCCESS, ext_fields={"value": value})
    return request.make_response(ResponseCode.SUCCESS)


def cluster_info(names: NameServer) -> bytes:
    """``getAllClusterInfo``'s body, in the real tables' iteration order."""
    brokers = java_hash_order(names.broker_names(), java_string_hash, _BROKER_TABLE_CAPACITY)
    clusters = {
        cluster: java_hash_order(names.cluster_members(cluster), java_string_hash)
        for cluster in java_hash_order(
            names.cluster_names(), java_string_hash, _CLUSTER_TABLE_CAPACITY
        )
    }
    return cluster_info_body(
        [names.broker_data(name) for name in brokers],
        clusters,
        acting_master_field=names.version >= V5_0_0,
    )


def _set_order(topics: list[str]) -> list[str]:
    """A ``TopicList``'s ``HashSet``, filled from the ``HashMap(1024)`` topic table."""
    table_order = java_hash_order(topics, java_string_hash, _TOPIC_TABLE_CAPACITY)
    return java_hash_order(table_order, java_string_hash)
