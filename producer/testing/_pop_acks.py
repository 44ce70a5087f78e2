"""A 5.x broker's answers to ACK_MESSAGE, BATCH_ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME
and GET_TOPIC_CONFIG (``AckMessageProcessor.processRequest`` / ``appendAck`` / ``ackOrderly``,
``ChangeInvisibleTimeProcessor.processRequest``; docs/consuming.md 6; no I/O).

An ack is answered 0 whether or not its check point still exists (a double ack, a stale
handle after a change, an ack after the revive: the message then comes back although the
answer was 0), 208 NO_MESSAGE for an offset outside the queue. A change writes a new
check point for the message's own offset at the change time and acks the old one; an
orderly change keeps the pop time and lengthens the queue's hold.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable

import msgspec

from producer._remoting.command import RemotingCommand
from producer._remoting.pop_batch_ack import decode_batch_ack
from producer._remoting.pop_requests import POP_ORDER_REVIVE_QUEUE, ReceiptHandle
from producer._remoting.request_codes import RequestCode
from producer._response_codes import ResponseCode
from producer.testing._consume_fields import Refused, int_field, need
from producer.testing._pop_state import CheckPoint, CheckPoints, CkKey, OrderLocks
from producer.testing._store import BrokerStore

__all__ = ["REVIVE_QUEUE_NUM", "PopAcks", "topic_config_answer"]

REVIVE_QUEUE_NUM = 8  # BrokerConfig.reviveQueueNum
_FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."


class PopAcks:
    """Acks and changes against one broker's check points and orderly locks."""

    def __init__(
        self,
        store: BrokerStore,
        checkpoints: CheckPoints,
        order_locks: OrderLocks,
        *,
        clock_ms: Callable[[], int],
        rng: random.Random,
    ) -> None:
        self.store = store
        self.checkpoints = checkpoints
        self.order_locks = order_locks
        self._clock_ms = clock_ms
        self._rng = rng

    def __repr__(self) -> str:
        return f"PopAcks(checkpoints={len(self.checkpoints)})"

    def answer(self, request: RemotingCommand) -> RemotingCommand:
        """The answer to an ack, a batch ack or a change (refusals raise ``Refused``)."""
        if request.code == RequestCode.CHANGE_MESSAGE_INVISIBLETIME:
            return self._change(request)
        return self._ack(request)

    def _ack(self, request: RemotingCommand) -> RemotingCommand:
        ok = request.make_response(ResponseCode.SUCCESS)
        if request.code == RequestCode.BATCH_ACK_MESSAGE:
            _, acks = decode_batch_ack(request.body)
            if not acks:
                return request.make_response(ResponseCode.NO_MESSAGE)
            for handle, group, topic in acks:
                real = handle.real_topic(group, topic)
                low, high = (
                    self.store.min_offset(real, handle.queue_id),
                    self.store.max_offset(real, handle.queue_id),
                )
                if low <= handle.queue_offset <= high:  # others are skipped, as the broker does
                    self._apply_ack(group, real, handle)
            return ok
        group, topic = need(request, "consumerGroup"), need(request, "topic")
        handle = ReceiptHandle.parse(need(request, "extraInfo"))
        qid, offset = int_field(request, "queueId"), int_field(request, "offset")
        self._check_offset(topic, qid, offset)
        self._apply_ack(
            group, topic, dataclasses.replace(handle, queue_id=qid, queue_offset=offset)
        )
        return ok

    def _check_offset(self, topic: str, qid: int, offset: int, *, say: bool = True) -> None:
        """The ack's refusals; a change (``say=False``) gives its 208 with no remark, as
        5.2.0's ``ChangeInvisibleTimeProcessor`` does (the ack's names the offsets)."""
        config = self.store.topic(topic)
        if config is None:
            raise Refused(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{topic}] not exist, apply first please! {_FAQ}",
            )
        if not 0 <= qid < config.read_queue_nums:
            raise Refused(
                ResponseCode.MESSAGE_ILLEGAL,
                f"queueId[{qid}] is illegal, topic:[{topic}] "
                f"topicConfig.readQueueNums:[{config.read_queue_nums}]",
            )
        low, high = self.store.min_offset(topic, qid), self.store.max_offset(topic, qid)
        if not low <= offset <= high:
            said = f"offset is illegal, key:{topic}@{qid}, commit:{offset}, store:{low}~{high}"
            raise Refused(ResponseCode.NO_MESSAGE, said if say else None)

    def _apply_ack(self, group: str, topic: str, handle: ReceiptHandle) -> None:
        if handle.is_order:
            self.order_locks.acked(group, topic, handle.queue_id, handle.queue_offset)
            return
        self.checkpoints.ack(_ck_key(group, topic, handle), handle.queue_offset)

    def _change(self, request: RemotingCommand) -> RemotingCommand:
        group, topic = need(request, "consumerGroup"), need(request, "topic")
        handle = ReceiptHandle.parse(need(request, "extraInfo"))
        qid, offset = int_field(request, "queueId"), int_field(request, "offset")
        invisible = int_field(request, "invisibleTime")
        self._check_offset(topic, qid, offset, say=False)
        now = self._clock_ms()
        if handle.is_order:  # processChangeInvisibleTimeForOrder: same pop time, longer
            lock = self.order_locks.get(group, topic, qid)
            total = now - handle.pop_time + invisible
            if lock is not None and lock.pop_time == handle.pop_time:
                lock.invisible_time = total
            fields = {
                "popTime": str(handle.pop_time),
                "invisibleTime": str(total),
                "reviveQid": str(POP_ORDER_REVIVE_QUEUE),
            }
        else:
            revive = self._rng.randrange(REVIVE_QUEUE_NUM)
            # ackOrigin first, so that a new check point sharing the old one's key (a
            # change in the millisecond of its pop) is not the one acked.
            self.checkpoints.ack(_ck_key(group, topic, handle), offset)
            self.checkpoints.add(
                CheckPoint(group, topic, qid, offset, now, invisible, revive, [offset])
            )
            fields = {
                "popTime": str(now),
                "invisibleTime": str(invisible),
                "reviveQid": str(revive),
            }
        return request.make_response(
            ResponseCode.SUCCESS, ext_fields=fields, remark="not set any response code"
        )


def _ck_key(group: str, topic: str, handle: ReceiptHandle) -> CkKey:
    """The check point a handle names."""
    return (
        group,
        topic,
        handle.queue_id,
        handle.ck_queue_offset,
        handle.pop_time,
        handle.revive_qid,
    )


def topic_config_answer(request: RemotingCommand, store: BrokerStore) -> RemotingCommand:
    """GET_TOPIC_CONFIG (``AdminBrokerProcessor.getTopicConfig``): the topic's config as
    JSON, its message type among its attributes; 17 for a topic the broker lacks."""
    topic = request.field("topic") or ""
    config = store.topic(topic)
    if config is None:
        return request.make_response(
            ResponseCode.TOPIC_NOT_EXIST, remark=f"No topic in this broker. topic: {topic}"
        )
    body = {
        "attributes": {"message.type": config.message_type},
        "order": config.order,
        "perm": config.perm,
        "readQueueNums": config.read_queue_nums,
        "topicFilterType": "SINGLE_TAG",
        "topicName": config.name,
        "topicSysFlag": config.topic_sys_flag,
        "writeQueueNums": config.write_queue_nums,
    }
    return request.make_response(ResponseCode.SUCCESS, body=msgspec.json.encode(body))
