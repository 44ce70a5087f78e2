"""The bodies and headers of the admin requests ``mqadmin`` sends (pure encode/decode).

Each body is what ``RemotingSerializable.encode`` (fastjson, default features) writes on
a 4.9.4 / 5.x broker or name server: bean fields in alphabetical order, null fields left
out, integer map keys bare (``{0:"host:port"}``) and :class:`MessageQueue` map keys written
as objects (``{{"brokerName":"b","queueId":0,"topic":"t"}:{...}}``) - neither is JSON, and
Java's fastjson reads both. Maps and sets are written in the order given: the caller
passes Java's iteration order (``HashMap`` buckets), as the servers' answers have it.

* GET_BROKER_CLUSTER_INFO (106, ``ClusterInfo``): :func:`cluster_info_body`;
* GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206) / GET_TOPICS_BY_CLUSTER (224), ``TopicList``:
  :func:`topic_list_body`;
* UPDATE_AND_CREATE_TOPIC (17, ``CreateTopicRequestHeader``): :func:`parse_create_topic`;
* GET_TOPIC_STATS_INFO (202, ``TopicStatsTable``): :func:`topic_stats_body`;
* GET_CONSUME_STATS (208, ``ConsumeStats``): :func:`consume_stats_body`;
* GET_CONSUMER_CONNECTION_LIST (203, ``ConsumerConnection``): :func:`consumer_connection_body`;
* GET_BROKER_RUNTIME_INFO (28, ``KVTable``): :func:`kv_table_body`;
* QUERY_TOPIC_CONSUME_BY_WHO (300, ``GroupList``): :func:`group_list_body`;
* UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200, ``SubscriptionGroupConfig``):
  :func:`parse_subscription_group`.

:func:`parse_queue_table` reads a ``MessageQueue``-keyed table back (tests, tools).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import msgspec

from producer._remoting.route import BrokerData, quote_legacy, quote_legacy_keys
from producer._remoting.send_header import HeaderFieldError, parse_int
from producer._types.message import MessageQueue
from producer.errors import RemoteProtocolError

__all__ = [
    "ClientConnection",
    "CreateTopicHeader",
    "OffsetWrapper",
    "SubscriptionGroup",
    "TopicOffset",
    "cluster_info_body",
    "consume_stats_body",
    "consumer_connection_body",
    "fastjson",
    "group_list_body",
    "kv_table_body",
    "parse_create_topic",
    "parse_queue_table",
    "parse_subscription_group",
    "topic_list_body",
    "topic_stats_body",
]

_Value = object


def fastjson(value: _Value) -> str:
    """``value`` as fastjson's default features write it: a ``dict`` in its own order
    (``None`` values left out, as a bean's null fields are), ``int`` keys bare,
    :class:`MessageQueue` keys as objects, ``float`` as Java's ``Double.toString``."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)  # exact for the values written here (0.0, small rates)
    if isinstance(value, str):
        return quote_legacy(value)
    if isinstance(value, MessageQueue):
        return _queue_json(value)
    if isinstance(value, Mapping):
        items = (f"{_key(k)}:{fastjson(v)}" for k, v in value.items() if v is not None)
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(fastjson(v) for v in value) + "]"
    raise TypeError(f"fastjson: cannot write {type(value).__name__}")


def _key(key: object) -> str:
    if isinstance(key, bool) or not isinstance(key, int | str | MessageQueue):
        raise TypeError(f"fastjson: cannot write a {type(key).__name__} map key")
    return str(key) if isinstance(key, int) else fastjson(key)


def _queue_json(queue: MessageQueue) -> str:
    return (
        f'{{"brokerName":{quote_legacy(queue.broker_name)},"queueId":{queue.queue_id},'
        f'"topic":{quote_legacy(queue.topic)}}}'
    )


# -- name server ----------------------------------------------------------------------------


def cluster_info_body(
    brokers: Sequence[BrokerData],
    clusters: Mapping[str, Sequence[str]],
    *,
    acting_master_field: bool = False,
) -> bytes:
    """``ClusterInfo``: ``brokerAddrTable`` (name -> BrokerData, ids in numeric order) and
    ``clusterAddrTable`` (cluster -> broker names). 5.x's ``BrokerData`` adds
    ``enableActingMaster`` (``acting_master_field``)."""
    table = {
        b.broker_name: {
            "brokerAddrs": dict(sorted(b.broker_addrs.items())),
            "brokerName": b.broker_name,
            "cluster": b.cluster,
            "enableActingMaster": False if acting_master_field else None,
        }
        for b in brokers
    }
    clusters_json = {name: list(members) for name, members in clusters.items()}
    return fastjson({"brokerAddrTable": table, "clusterAddrTable": clusters_json}).encode()


def topic_list_body(topics: Iterable[str]) -> bytes:
    """``TopicList`` (``brokerAddr`` is null on these answers, so absent)."""
    return fastjson({"topicList": list(topics)}).encode()


def group_list_body(groups: Iterable[str]) -> bytes:
    """``GroupList`` (QUERY_TOPIC_CONSUME_BY_WHO, 300)."""
    return fastjson({"groupList": list(groups)}).encode()


# -- broker: topics -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CreateTopicHeader:
    """``CreateTopicRequestHeader`` (``defaultTopic`` and ``topicFilterType`` are read and
    not kept, as the broker ignores the first and this SDK has no class filters)."""

    topic: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int
    order: bool


_CREATE_REQUIRED = ("topic", "defaultTopic", "topicFilterType")


def parse_create_topic(fields: Mapping[str, str] | None) -> CreateTopicHeader:
    """The header of UPDATE_AND_CREATE_TOPIC; a missing ``@CFNotNull`` field or a bad
    number raises :class:`HeaderFieldError` naming it (``topicSysFlag`` may be absent)."""
    fields = fields or {}
    for name in _CREATE_REQUIRED:
        if fields.get(name) is None:
            raise HeaderFieldError(name, "is missing")
    sys_flag = fields.get("topicSysFlag")
    return CreateTopicHeader(
        topic=fields["topic"],
        read_queue_nums=parse_int(fields, "readQueueNums"),
        write_queue_nums=parse_int(fields, "writeQueueNums"),
        perm=parse_int(fields, "perm"),
        topic_sys_flag=0 if sys_flag is None else parse_int(fields, "topicSysFlag"),
        order=(fields.get("order") or "").lower() == "true",
    )


@dataclass(frozen=True, slots=True)
class TopicOffset:
    """One queue's line of ``TopicStatsTable``."""

    min_offset: int
    max_offset: int
    last_update_timestamp: int


def topic_stats_body(entries: Iterable[tuple[MessageQueue, TopicOffset]]) -> bytes:
    """``TopicStatsTable``: ``{"offsetTable":{<queue>:{lastUpdateTimestamp, max, min}}}``."""
    table = {
        queue: {
            "lastUpdateTimestamp": o.last_update_timestamp,
            "maxOffset": o.max_offset,
            "minOffset": o.min_offset,
        }
        for queue, o in entries
    }
    return fastjson({"offsetTable": table}).encode()


# -- broker: consumers ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetWrapper:
    """One queue's line of ``ConsumeStats``; ``pull_offset`` is 5.x's (``None`` on 4.9.4)."""

    broker_offset: int
    consumer_offset: int
    last_timestamp: int
    pull_offset: int | None = None


def consume_stats_body(
    entries: Iterable[tuple[MessageQueue, OffsetWrapper]], consume_tps: float = 0.0
) -> bytes:
    """``ConsumeStats``: ``{"consumeTps":0.0,"offsetTable":{<queue>:{...}}}``."""
    table = {
        queue: {
            "brokerOffset": o.broker_offset,
            "consumerOffset": o.consumer_offset,
            "lastTimestamp": o.last_timestamp,
            "pullOffset": o.pull_offset,
        }
        for queue, o in entries
    }
    return fastjson({"consumeTps": float(consume_tps), "offsetTable": table}).encode()


@dataclass(frozen=True, slots=True)
class ClientConnection:
    """``Connection``: a client as the broker saw its heartbeat (language by name)."""

    client_id: str
    client_addr: str
    language: str
    version: int


def consumer_connection_body(
    connections: Iterable[ClientConnection],
    subscriptions: Iterable[Mapping[str, object]],
    *,
    consume_type: str,
    message_model: str,
    consume_from_where: str,
) -> bytes:
    """``ConsumerConnection``; ``subscriptions`` are ``SubscriptionData`` objects in the
    order of the broker's table (their ``topic`` is the key)."""
    body = {
        "connectionSet": [
            {
                "clientAddr": c.client_addr,
                "clientId": c.client_id,
                "language": c.language,
                "version": c.version,
            }
            for c in connections
        ],
        "consumeFromWhere": consume_from_where,
        "consumeType": consume_type,
        "messageModel": message_model,
        "subscriptionTable": {str(s["topic"]): dict(s) for s in subscriptions},
    }
    return fastjson(body).encode()


def kv_table_body(table: Iterable[tuple[str, str]]) -> bytes:
    """``KVTable``: ``{"table":{...}}`` (a broker's runtime figures, all strings)."""
    return fastjson({"table": dict(table)}).encode()


# -- reading a MessageQueue-keyed table -----------------------------------------------------

_QUEUE_KEY = re.compile(
    rb'([{,])\{"brokerName":("(?:[^"\\]|\\.)*"),"queueId":(-?\d+),"topic":("(?:[^"\\]|\\.)*")\}:'
)
_KEY_SEP = "\x00"


def parse_queue_table(
    body: bytes, field: str = "offsetTable"
) -> list[tuple[MessageQueue, dict[str, object]]]:
    """``body``'s ``field`` table (``TopicStatsTable``, ``ConsumeStats``) as (queue, line)
    pairs in written order; anything else raises :class:`RemoteProtocolError`."""

    def as_string_key(match: re.Match[bytes]) -> bytes:
        broker, queue_id, topic = (msgspec.json.decode(match.group(i)) for i in (2, 3, 4))
        key = _KEY_SEP.join((str(topic), str(broker), str(queue_id)))
        return match.group(1) + msgspec.json.encode(key) + b":"

    try:
        decoded = msgspec.json.decode(quote_legacy_keys(_QUEUE_KEY.sub(as_string_key, body)))
        table = decoded[field]
        pairs = []
        for key, line in table.items():
            topic, broker, queue_id = key.split(_KEY_SEP)
            pairs.append((MessageQueue(topic, broker, int(queue_id)), line))
    except (msgspec.DecodeError, KeyError, TypeError, AttributeError, ValueError) as exc:
        raise RemoteProtocolError(f"not a fastjson queue table: {exc!r}") from None
    return pairs


# -- subscription groups --------------------------------------------------------------------


class SubscriptionGroup(msgspec.Struct, frozen=True, rename="camel"):
    """``SubscriptionGroupConfig``'s fields a broker acts on (others are ignored), with
    Java's defaults for those a body leaves out."""

    group_name: str
    consume_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16


_group_decoder = msgspec.json.Decoder(SubscriptionGroup)


def parse_subscription_group(body: bytes) -> SubscriptionGroup:
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP's body; a malformed one (or one without
    ``groupName``) raises :class:`RemoteProtocolError`."""
    try:
        return _group_decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise RemoteProtocolError(f"SubscriptionGroupConfig: {exc}") from None
