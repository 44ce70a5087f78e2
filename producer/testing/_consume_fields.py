"""Wire shapes and small helpers of the dev broker's consumer side (no state).

:class:`Refused` carries a response code and remark out of any check; the structs decode
heartbeat consumer data and lock bodies; :func:`pulled_record` is what a pull returns.
"""

from __future__ import annotations

import msgspec

from latency_fault import java_string_hash
from producer._remoting.command import RemotingCommand
from producer._remoting.java_hash_map import java_hash_order
from producer._remoting.message_codec import compress_body, is_compressed
from producer._remoting.properties import TAGS, encode_properties
from producer._remoting.request_codes import RequestCode
from producer._remoting.sql92_nodes import Node
from producer._remoting.store_record import StoreRecord, body_crc
from producer._remoting.subscription import Subscription
from producer._response_codes import ResponseCode
from producer._types.message import MessageQueue
from producer.testing._groups import LockTable
from producer.testing._java_order import queue_hash
from producer.testing._store import BrokerStore, PendingMessage, StoredMessage, stored_size

_REMOTING_EXCEPTION = "org.apache.rocketmq.remoting.exception.RemotingCommandException"
MAX_TRANSFER_COUNT = 32  # MessageStoreConfig.maxTransferCountOnMessageInMemory
MAX_TRANSFER_BYTES = 256 * 1024
MAX_SCAN_ENTRIES = 800  # max(16000, maxMsgNums * 20) bytes of consume queue, 20 each


class SubscriptionData(msgspec.Struct):
    topic: str
    subString: str = "*"  # noqa: N815 - wire name
    subVersion: int = 0  # noqa: N815 - wire name
    tagsSet: list[str] = []  # noqa: N815 - wire name
    codeSet: list[int] = []  # noqa: N815 - wire name
    expressionType: str = "TAG"  # noqa: N815 - wire name


class ConsumerDataWire(msgspec.Struct, rename={"subscriptions": "subscriptionDataSet"}):
    groupName: str  # noqa: N815 - wire name
    messageModel: str = "CLUSTERING"  # noqa: N815 - wire name
    consumeType: str = "CONSUME_PASSIVELY"  # noqa: N815 - wire name
    consumeFromWhere: str = "CONSUME_FROM_LAST_OFFSET"  # noqa: N815 - wire name
    subscriptions: list[SubscriptionData] = []


class Refused(Exception):
    def __init__(self, code: int, remark: str | None) -> None:
        super().__init__(remark)
        self.code, self.remark = code, remark


class WireQueue(msgspec.Struct):
    topic: str
    brokerName: str  # noqa: N815 - wire name
    queueId: int  # noqa: N815 - wire name


class LockBody(msgspec.Struct):
    consumerGroup: str  # noqa: N815 - wire name
    clientId: str  # noqa: N815 - wire name
    mqSet: list[WireQueue] = []  # noqa: N815 - wire name


def registered_subscription(data: SubscriptionData) -> Subscription:
    """The subscription as the client registered it (its codes are trusted, as Java's)."""
    tags = tuple(data.tagsSet)
    kind = data.expressionType or "TAG"
    return Subscription(data.topic, data.subString, tags, tuple(data.codeSet), kind)


def pending_copy(
    message: StoredMessage, topic: str, props: dict[str, str], reconsume_times: int
) -> PendingMessage:
    """``message`` put again under ``topic`` (send-back, a delayed message falling due)."""
    text = encode_properties(props)
    stored_body = message.body if message.wire_body is None else message.wire_body
    return PendingMessage(
        body=message.body,
        wire_body=message.wire_body,
        properties=props,
        size=stored_size(len(stored_body), len(topic.encode()), len(text.encode())),
        born_timestamp=message.born_timestamp,
        sys_flag=message.sys_flag,
        flag=message.flag,
        born_host=message.born_host,
        reconsume_times=reconsume_times,
    )


def need(request: RemotingCommand, name: str) -> str:
    value = request.field(name)
    if value is None:
        raise Refused(
            ResponseCode.SYSTEM_ERROR, f"{_REMOTING_EXCEPTION}: the custom field <{name}> is null"
        )
    return value


def int_field(request: RemotingCommand, name: str) -> int:
    value = need(request, name)
    try:
        return int(value)
    except ValueError:
        raise Refused(
            ResponseCode.SYSTEM_ERROR, f"{_REMOTING_EXCEPTION}: <{name}> is not a number: {value}"
        ) from None


def int_or_zero(value: str | None) -> int:
    try:
        return int(value) if value else 0
    except ValueError:
        return 0


def group_queue(request: RemotingCommand) -> tuple[str, str, int]:
    return need(request, "consumerGroup"), need(request, "topic"), int_field(request, "queueId")


def offset_answer(request: RemotingCommand, offset: int) -> RemotingCommand:
    return request.make_response(ResponseCode.SUCCESS, ext_fields={"offset": str(offset)})


QUEUE_QUERIES = frozenset(
    {
        RequestCode.GET_MIN_OFFSET,
        RequestCode.GET_EARLIEST_MSG_STORETIME,
        RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
    }
)


def queue_query(request: RemotingCommand, store: BrokerStore) -> RemotingCommand:
    """GET_MIN_OFFSET (0 unless the cluster dropped old messages), GET_EARLIEST_MSG_STORETIME,
    and SEARCH_OFFSET_BY_TIMESTAMP of one queue."""
    topic = need(request, "topic")
    queue_id = int_field(request, "queueId")
    if request.code == RequestCode.GET_MIN_OFFSET:
        return offset_answer(request, store.min_offset(topic, queue_id))
    if request.code == RequestCode.GET_EARLIEST_MSG_STORETIME:
        earliest = str(store.earliest_store_time(topic, queue_id))
        return request.make_response(ResponseCode.SUCCESS, ext_fields={"timestamp": earliest})
    found = store.offset_by_time(topic, queue_id, int_field(request, "timestamp"))
    return offset_answer(request, found)


def pulled_record(message: StoredMessage) -> StoreRecord:
    """The commit-log record a pull returns for ``message``."""
    body = message.body if message.wire_body is None else message.wire_body
    if message.wire_body is None and is_compressed(message.sys_flag):
        body, _ = compress_body(body, 0)  # stored inflated by an older path: re-deflate
    return StoreRecord(
        topic=message.topic,
        queue_id=message.queue_id,
        queue_offset=message.queue_offset,
        commit_log_offset=message.commit_log_offset,
        body=body,
        properties=dict(message.properties),
        born_timestamp=message.born_timestamp,
        born_host=message.born_host or "127.0.0.1:0",
        store_timestamp=message.store_timestamp,
        store_host=message.store_host or "127.0.0.1:0",
        sys_flag=message.sys_flag,
        flag=message.flag,
        reconsume_times=message.reconsume_times,
        prepared_transaction_offset=message.prepared_transaction_offset,
        body_crc=body_crc(body),
    )


def get_messages(
    store: BrokerStore,
    topic: str,
    queue_id: int,
    offset: int,
    max_count: int,
    sub: Subscription,
    sql: Node | None = None,
) -> tuple[int, str, int, list[StoredMessage]]:
    """``DefaultMessageStore.getMessage``: (code, status name, next offset, messages).
    A SQL92 subscription passes what ``sql`` accepts (all, without a compiled filter)."""
    max_offset = store.max_offset(topic, queue_id)
    if max_offset == 0:
        code = ResponseCode.PULL_NOT_FOUND if offset == 0 else ResponseCode.PULL_OFFSET_MOVED
        return code, "NO_MESSAGE_IN_QUEUE", 0, []
    min_offset = store.min_offset(topic, queue_id)
    if offset < min_offset:  # nextOffsetCorrection: a master suggests the minimum
        return ResponseCode.PULL_OFFSET_MOVED, "OFFSET_TOO_SMALL", min_offset, []
    if offset == max_offset:
        return ResponseCode.PULL_NOT_FOUND, "OFFSET_OVERFLOW_ONE", offset, []
    if offset > max_offset:
        return ResponseCode.PULL_OFFSET_MOVED, "OFFSET_OVERFLOW_BADLY", max_offset, []
    limit = min(max_count, MAX_TRANSFER_COUNT)
    found: list[StoredMessage] = []
    size = scanned = 0
    for message in store.read(topic, queue_id, offset, MAX_SCAN_ENTRIES):
        if found and (len(found) >= limit or size + len(message.body) > MAX_TRANSFER_BYTES):
            break
        scanned += 1
        if _matches(message, sub, sql):
            found.append(message)
            size += len(message.body)
    if found:
        return ResponseCode.SUCCESS, "FOUND", offset + scanned, found
    return ResponseCode.PULL_RETRY_IMMEDIATELY, "NO_MATCHED_MESSAGE", offset + scanned, []


def _matches(message: StoredMessage, sub: Subscription, sql: Node | None) -> bool:
    """``ExpressionMessageFilter``: the tag hash (consume queue), or the SQL92 filter on
    the stored properties (commit log); a filter error is no match."""
    if sub.is_sql:
        return sql is None or sql.matches(message.properties)
    tags = message.properties.get(TAGS)
    return sub.matches_code(java_string_hash(tags) if tags else 0, bool(tags))


def lock_answer(request: RemotingCommand, locks: LockTable, now_ms: float) -> RemotingCommand:
    """LOCK_BATCH_MQ / UNLOCK_BATCH_MQ against ``locks``."""
    try:
        body = msgspec.json.decode(request.body or b"{}", type=LockBody)
    except msgspec.DecodeError as exc:
        raise Refused(ResponseCode.SYSTEM_ERROR, f"lock body: {exc}") from None
    queues = [MessageQueue(q.topic, q.brokerName, q.queueId) for q in body.mqSet]
    if request.code == RequestCode.UNLOCK_BATCH_MQ:
        locks.unlock(body.consumerGroup, queues, body.clientId)
        return request.make_response(ResponseCode.SUCCESS)
    granted = locks.try_lock(body.consumerGroup, queues, body.clientId, now_ms)
    # RebalanceLockManager.tryLockBatch answers a HashSet sized for the request's queues.
    answer = {
        "lockOKMQSet": [
            {"brokerName": q.broker_name, "queueId": q.queue_id, "topic": q.topic}
            for q in java_hash_order(granted, queue_hash, initial_capacity=len(queues))
        ]
    }
    return request.make_response(ResponseCode.SUCCESS, body=msgspec.json.encode(answer))
