"""The name server: topic routes as a 4.9.4 name server hands them out (no I/O).

Brokers are registered in-process (the cluster calls :meth:`NameServer.register_broker`
and :meth:`NameServer.register_topic`) rather than over REGISTER_BROKER. Routes list
brokers in the order of Java's ``HashMap`` iteration over broker names, as the real
server does (``broker-b`` before ``broker-a``): clients must not rely on it.

A broker name holds one address per broker id (0 the master, 1 its slave). As
``RouteInfoManager.onChannelDestroy`` does when a broker's channel closes,
:meth:`NameServer.unregister_broker` removes one id; the name (and its topics' queue
data, which only the master's registration writes) stays while another id is left.
"""

from __future__ import annotations

from latency_fault import java_string_hash
from producer._remoting.command import RemotingCommand
from producer._remoting.frame_decoder import decode_payload
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.java_hash_map import java_hash_order
from producer._remoting.request_codes import PROTOCOL_VERSION, V4_9_4, RequestCode
from producer._remoting.route import (
    MASTER_ID,
    BrokerData,
    QueueData,
    TopicRouteData,
    encode_route_data,
)
from producer._response_codes import ResponseCode
from producer.testing._broker import not_supported
from producer.testing._namesrv_admin import NAMESRV_ADMIN_CODES, answer_namesrv_admin
from producer.testing._server import Channel, Decider, ServerReply
from producer.testing._store import TopicConfig

__all__ = ["NameServer"]

_FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."


class NameServer:
    """Route tables, the GET_ROUTEINFO_BY_TOPIC handler and ``mqadmin``'s requests
    (``_namesrv_admin.py``)."""

    def __init__(self, *, cluster_name: str = "DefaultCluster", version: int = V4_9_4) -> None:
        self.cluster_name = cluster_name
        self.version = version  # which name server's bodies (5.x: enableActingMaster)
        self._brokers: dict[str, dict[int, str]] = {}  # name -> broker id -> address
        self._topics: dict[str, dict[str, QueueData]] = {}
        self.kv: dict[tuple[str, str], str] = {}  # KVConfigManager: (namespace, key) -> value

    def __repr__(self) -> str:
        return f"NameServer(brokers={list(self._brokers)}, topics={len(self._topics)})"

    # -- registration --------------------------------------------------------------------

    def register_broker(self, name: str, address: str, broker_id: int = MASTER_ID) -> None:
        self._brokers.setdefault(name, {})[broker_id] = address

    def unregister_broker(self, name: str, broker_id: int) -> None:
        """The broker's channel closed (``onChannelDestroy``): forget that one id."""
        addresses = self._brokers.get(name, {})
        addresses.pop(broker_id, None)
        if not addresses:
            self._brokers.pop(name, None)

    def broker_addrs(self, name: str) -> dict[int, str]:
        """``brokerAddrs`` of one broker name (empty when none is registered)."""
        return dict(sorted(self._brokers.get(name, {}).items()))

    def register_topic(self, broker_name: str, config: TopicConfig) -> None:
        self._topics.setdefault(config.name, {})[broker_name] = QueueData(
            broker_name=broker_name,
            read_queue_nums=config.read_queue_nums,
            write_queue_nums=config.write_queue_nums,
            perm=config.perm,
            topic_sys_flag=config.topic_sys_flag,
        )

    def delete_topic(self, name: str, *, cluster: str | None = None) -> None:
        """Forget ``name`` (``mqadmin deleteTopic``: DELETE_TOPIC_IN_NAMESRV): on the
        brokers of ``cluster`` only when given (the topic goes once none is left)."""
        if cluster is None:
            self._topics.pop(name, None)
            return
        queues = self._topics.get(name, {})
        for broker in self.cluster_members(cluster):
            queues.pop(broker, None)
        if not queues:
            self._topics.pop(name, None)

    def topics(self) -> list[str]:
        """Every routed topic, in registration order (which Java's table keeps within a
        hash bucket, so the admin answers list colliding names as the real one does)."""
        return list(self._topics)

    def topics_on(self, brokers: list[str]) -> list[str]:
        """The topics with queues on any of ``brokers``."""
        return [t for t, queues in self._topics.items() if set(queues) & set(brokers)]

    def broker_names(self) -> list[str]:
        return list(self._brokers)

    def cluster_names(self) -> list[str]:
        return [self.cluster_name] if self._brokers else []

    def cluster_members(self, cluster: str) -> list[str]:
        """The broker names registered in ``cluster``."""
        return list(self._brokers) if cluster == self.cluster_name else []

    def broker_data(self, name: str) -> BrokerData:
        """A registered broker group: its cluster and every broker id's address."""
        return BrokerData(
            cluster=self.cluster_name,
            broker_name=name,
            broker_addrs=self.broker_addrs(name),
        )

    # -- routes --------------------------------------------------------------------------

    def route(self, topic: str) -> TopicRouteData | None:
        """``pickupTopicRouteData``: ``None`` when no registered broker has the topic."""
        queues = self._topics.get(topic)
        if not queues:
            return None
        names = [
            name
            for name in java_hash_order(list(queues), java_string_hash)
            if name in self._brokers
        ]
        if not names:
            return None
        return TopicRouteData(
            queue_datas=[queues[name] for name in names],
            broker_datas=[self.broker_data(name) for name in names],
        )

    # -- RequestHandler ------------------------------------------------------------------

    def handle(self, payload: bytes, decider: Decider, channel: Channel) -> ServerReply | None:
        request = decode_payload(payload)
        if request.is_response:
            return None
        decision = decider(False)
        if request.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            response = self.route_response(request)
        elif request.code in NAMESRV_ADMIN_CODES:
            response = answer_namesrv_admin(self, request)
        else:
            response = not_supported(request)
        if request.is_oneway:
            return None
        return ServerReply(encode_frame(response), decision.delay)

    def route_response(self, request: RemotingCommand) -> RemotingCommand:
        topic = request.field("topic")
        if topic is None:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR,
                remark="org.apache.rocketmq.remoting.exception.RemotingCommandException: "
                "the custom field <topic> is null",
            )
        route = self.route(topic)
        if route is None:
            return request.make_response(
                ResponseCode.TOPIC_NOT_EXIST,
                remark=f"No topic route info in name server for the topic: {topic}{_FAQ}",
            )
        standard = (
            request.version >= PROTOCOL_VERSION
            or (request.field("acceptStandardJsonOnly") or "").lower() == "true"
        )
        return request.make_response(
            ResponseCode.SUCCESS, body=encode_route_data(route, legacy=not standard)
        )
