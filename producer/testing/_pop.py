"""A 5.x broker's pop consumption, as the 5.2.0 broker answers it (docs/consuming.md 6.2; no I/O).

Followed: ``PopMessageProcessor.processRequest`` / ``popMsgFromQueue`` / ``getInitOffset``,
``AckMessageProcessor.processRequest`` / ``appendAck`` / ``ackOrderly``,
``ChangeInvisibleTimeProcessor.processRequest`` (``appendCheckPoint`` + ``ackOrigin``),
``PopReviveService.reviveRetry`` and ``PopLongPollingService``, checked against the
recorded 5.2.0 session in ``tests/golden/sessions/pop_5_2_0``.

* POP_MESSAGE reads each queue (all of them for queueId -1, from a random one on) from
  the group's pop offset, which moves on at once; messages of the group's pop retry
  topic ``%RETRY%<group>_<topic>`` fill what is left of the batch (first, one pop in
  five, as the broker's ``randomQ % 5``). Each queue read leaves a check point. Nothing
  found: the pop is held until a message arrives in the topic (not in the retry topic:
  the broker does not wake on it) or until ``bornTime + pollTime`` less 50 ms
  (``PopRequest.isTimeout``), then answered 210 POLLING_TIMEOUT ``NO_MESSAGE_IN_QUEUE``.
* ACK_MESSAGE / BATCH_ACK_MESSAGE mark an offset of a check point; the answer is 0
  whether or not the check point still existed (a double ack, a stale handle after a
  change, an ack after the revive), 208 NO_MESSAGE for an offset outside the queue.
* CHANGE_MESSAGE_INVISIBLETIME writes a new check point at the change time for the
  message's own offset and acks it on the old one.
* :meth:`PopSide.tick` revives check points whose time ran out on the injected clock
  (exactly at popTime + invisibleTime: the real service scans once a second and was
  seen 2-4 s late): each un-acked message is copied into the pop retry topic with
  ``reconsumeTimes + 1`` and ``1ST_POP_TIME``; the copy is handed out with the
  requested topic and the broker's own ``POP_CK`` (retry flag 1).
* Orderly pops (``order=true``) hold the queue until every message popped is acked or
  its invisible time runs out; then the un-acked ones come again from the same queue,
  counted in ``orderCountInfo``. Their revive queue is 999.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from dataclasses import dataclass

from latency_fault import java_string_hash
from producer._remoting.command import RemotingCommand
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.pop_requests import (
    FIRST_POP_TIME,
    MAX_POP_MESSAGES,
    POP_CK,
    POP_ORDER_REVIVE_QUEUE,
    InitMode,
    ReceiptHandle,
    pop_retry_topic,
)
from producer._remoting.request_codes import RequestCode
from producer._remoting.retry_topics import RETRY_PREFIX
from producer._remoting.store_record import encode_record
from producer._remoting.subscription import Subscription, tag_subscription
from producer._response_codes import ResponseCode
from producer.testing._consume_fields import Refused, int_field, need, pending_copy, pulled_record
from producer.testing._pop_acks import REVIVE_QUEUE_NUM, PopAcks
from producer.testing._pop_state import CheckPoint, CheckPoints, OrderLock, OrderLocks
from producer.testing._server import Channel
from producer.testing._store import (
    PERM_READ,
    PERM_WRITE,
    BrokerStore,
    Put,
    StoredMessage,
    TopicConfig,
)

__all__ = ["PopSide"]

#: ``PopRequest.isTimeout``: a held pop times out once now > bornTime + pollTime - 50.
POLL_EARLY_MS = 50
_FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."


@dataclass
class _HeldPop:
    request: RemotingCommand
    channel: Channel
    deadline_ms: int


@dataclass
class _Popped:
    """What one pop gathered: messages as records, and the answer's offset infos."""

    records: list[bytes] = dataclasses.field(default_factory=list)
    start_info: list[str] = dataclasses.field(default_factory=list)
    msg_info: list[str] = dataclasses.field(default_factory=list)
    order_info: list[str] = dataclasses.field(default_factory=list)
    rest: int = 0


class PopSide:
    """One broker's pop state and request processing (a 5.x broker only)."""

    def __init__(
        self,
        store: BrokerStore,
        *,
        broker_name: str,
        clock_ms: Callable[[], int],
        rng: random.Random,
        put: Put,
        create_topic: Callable[[TopicConfig], None],
        version: int,
    ) -> None:
        self.store = store
        self.version = version
        self.broker_name = broker_name
        self.checkpoints = CheckPoints()
        self.order_locks = OrderLocks()
        # (group, topic, queue) -> the next offset a pop reads (the real broker's
        # PopBufferMergeService latest offset)
        self.pop_offsets: dict[tuple[str, str, int], int] = {}
        self._clock_ms = clock_ms
        self._rng = rng
        self._put = put
        self._create_topic = create_topic
        self._held: list[_HeldPop] = []
        self.acks = PopAcks(store, self.checkpoints, self.order_locks, clock_ms=clock_ms, rng=rng)
        previous = store.on_append

        def on_append(topic: str, queue_id: int) -> None:
            if previous is not None:
                previous(topic, queue_id)
            self._wake(topic)

        store.on_append = on_append

    def __repr__(self) -> str:
        return f"PopSide(checkpoints={len(self.checkpoints)}, held_pops={len(self._held)})"

    def process(self, request: RemotingCommand, channel: Channel) -> RemotingCommand | None:
        """The answer to a pop-family request, or ``None`` for a pop held (long polling)."""
        try:
            if request.code == RequestCode.POP_MESSAGE:
                return self._pop(request, channel, hold=True)
            return self.acks.answer(request)
        except Refused as refused:
            return request.make_response(refused.code, remark=refused.remark)

    # -- POP_MESSAGE ---------------------------------------------------------------------

    def _pop(
        self, request: RemotingCommand, channel: Channel, *, hold: bool
    ) -> RemotingCommand | None:
        group, topic = need(request, "consumerGroup"), need(request, "topic")
        max_count = int_field(request, "maxMsgNums")
        queue_id = int_field(request, "queueId")
        config = self._pop_checks(topic, max_count, queue_id, channel.peer)
        order = request.field("order") == "true"
        sub = tag_subscription(topic, request.field("exp"), java_string_hash)
        now = self._clock_ms()
        invisible = int_field(request, "invisibleTime")
        init = InitMode(int_field(request, "initMode") or 0)
        random_q = self._rng.randrange(100)
        revive = POP_ORDER_REVIVE_QUEUE if order else random_q % REVIVE_QUEUE_NUM
        popped = _Popped()
        queues = [queue_id] if queue_id >= 0 else _rotated(config.read_queue_nums, random_q)
        retry = pop_retry_topic(group, topic)
        retry_first = not order and random_q % 5 == 0
        if retry_first:
            self._pop_retry(group, topic, retry, max_count, now, invisible, revive, popped)
        for qid in queues:
            wanted = max_count - len(popped.records)
            args = (group, topic, qid, wanted, now, invisible, revive, sub, init, popped)
            self._pop_order_queue(*args) if order else self._pop_queue(*args)
        if not retry_first and not order:
            self._pop_retry(group, topic, retry, max_count, now, invisible, revive, popped)
        if not popped.records:
            poll = int_field(request, "pollTime")
            deadline = int_field(request, "bornTime") + poll
            if hold and poll > 0 and now <= deadline - POLL_EARLY_MS:
                self._held.append(_HeldPop(request, channel, deadline))
                return None
        return self._pop_answer(request, popped, now, invisible, revive, order)

    def _pop_answer(
        self,
        request: RemotingCommand,
        popped: _Popped,
        now: int,
        invisible: int,
        revive: int,
        order: bool,
    ) -> RemotingCommand:
        fields = {
            "popTime": str(now),
            "invisibleTime": str(invisible),
            "reviveQid": str(revive),
            "restNum": str(popped.rest),
            "startOffsetInfo": ";".join(popped.start_info),
            "msgOffsetInfo": ";".join(popped.msg_info),
        }
        if order:
            fields["orderCountInfo"] = ";".join(popped.order_info)
        if not popped.records:
            return request.make_response(
                ResponseCode.POLLING_TIMEOUT, ext_fields=fields, remark="NO_MESSAGE_IN_QUEUE"
            )
        body = b"".join(popped.records)
        return request.make_response(
            ResponseCode.SUCCESS, ext_fields=fields, body=body, remark="FOUND"
        )

    def adopt(self, other: PopSide) -> None:
        """Take over ``other``'s pops, as a promoted 5.x slave does: the check points
        (written to the revive topic in the commit log, so copied with it), the orderly
        locks and the pop offsets (synced with the consumer offsets). Here all as the old
        master held them at its death, without the copy's lag."""
        self.pop_offsets.update(other.pop_offsets)
        self.checkpoints.adopt(other.checkpoints)
        self.order_locks.adopt(other.order_locks)

    def _pop_queue(
        self, group: str, topic: str, qid: int, wanted: int, now: int, invisible: int,
        revive: int, sub: Subscription, init: InitMode, popped: _Popped,
        retry_of: str | None = None,
    ) -> None:  # fmt: skip
        """``popMsgFromQueue``: read from the pop offset, move it on, leave a check point.
        ``retry_of``: the topic asked for, when ``topic`` is its pop retry topic."""
        retry = retry_of is not None
        key = (group, topic, qid)
        offset = self.pop_offsets.get(key)
        if offset is None:
            offset = self.pop_offsets[key] = self._init_offset(topic, qid, init)
        offset = max(offset, self.store.min_offset(topic, qid))
        found: list[StoredMessage] = []
        scanned = 0
        if wanted > 0:
            for message in self.store.read(topic, qid, offset, wanted):
                scanned += 1
                if sub.matches(message.tags):
                    found.append(message)
        self.pop_offsets[key] = offset + scanned
        popped.rest += self.store.max_offset(topic, qid) - offset - scanned
        if not found:
            return
        flag = int(retry)
        popped.start_info.append(f"{flag} {qid} {offset}")
        popped.msg_info.append(f"{flag} {qid} " + ",".join(str(m.queue_offset) for m in found))
        offsets = [m.queue_offset for m in found]
        self.checkpoints.add(CheckPoint(group, topic, qid, offset, now, invisible, revive, offsets))
        for message in found:
            handle = ReceiptHandle(
                offset, now, invisible, revive, retry, self.broker_name, qid, message.queue_offset
            )
            popped.records.append(self._record(message, handle, retry_of))

    def _pop_retry(
        self, group: str, topic: str, retry: str, max_count: int, now: int, invisible: int,
        revive: int, popped: _Popped,
    ) -> None:  # fmt: skip
        config = self.store.topic(retry)
        if config is None or len(popped.records) >= max_count:
            return
        every = tag_subscription(retry, "*", java_string_hash)
        for qid in range(config.read_queue_nums):
            wanted = max_count - len(popped.records)
            self._pop_queue(
                group, retry, qid, wanted, now, invisible, revive, every, InitMode.MIN, popped,
                topic,
            )  # fmt: skip

    def _pop_order_queue(
        self, group: str, topic: str, qid: int, wanted: int, now: int, invisible: int,
        revive: int, sub: Subscription, init: InitMode, popped: _Popped,
    ) -> None:  # fmt: skip
        """An orderly pop of one queue: nothing while it is held; else from the first
        message not acked, each counted."""
        lock = self.order_locks.get(group, topic, qid)
        key = (group, topic, qid)
        if key not in self.pop_offsets:
            self.pop_offsets[key] = self._init_offset(topic, qid, init)
        if lock is not None and not lock.acked.issuperset(lock.offsets):
            start = min(set(lock.offsets) - lock.acked)
        else:
            start = self.pop_offsets[key]
        popped.rest += self.store.max_offset(topic, qid) - start
        if wanted <= 0 or (lock is not None and lock.is_held(now)):
            return
        found = [m for m in self.store.read(topic, qid, start, wanted) if sub.matches(m.tags)]
        if not found:
            return
        offsets = [m.queue_offset for m in found]
        before = self.order_locks.lock(group, topic, qid, OrderLock(now, invisible, offsets))
        self.pop_offsets[key] = max(self.pop_offsets[key], offsets[-1] + 1)
        popped.rest -= len(found)
        popped.start_info.append(f"0 {qid} {start}")
        popped.msg_info.append(f"0 {qid} " + ",".join(map(str, offsets)))
        popped.order_info.extend(f"0 qo{qid}%{o} {n}" for o, n in before.items() if n)
        popped.order_info.append(f"0 {qid} 0")
        popped.records.extend(self._record(m, None, None) for m in found)

    def _record(
        self, message: StoredMessage, handle: ReceiptHandle | None, retry_of: str | None
    ) -> bytes:
        record = pulled_record(message)
        if handle is not None and retry_of is not None:  # a retried copy: under the topic
            props = dict(record.properties)  # asked for, with the broker's handle
            props[POP_CK] = str(handle)
            record = dataclasses.replace(record, topic=retry_of, properties=props)
        return encode_record(record)

    def _init_offset(self, topic: str, qid: int, init: InitMode) -> int:
        """``getInitOffset``: MIN, retry topics and (``initPopOffsetByCheckMsgInMem``) a
        queue still holding offset 0 start at the minimum; else the last message."""
        low = self.store.min_offset(topic, qid)
        if init == InitMode.MIN or topic.startswith(RETRY_PREFIX) or low <= 0:
            return low
        return max(self.store.max_offset(topic, qid) - 1, 0)

    def _pop_checks(self, topic: str, max_count: int, queue_id: int, peer: str) -> TopicConfig:
        """``processRequest``'s refusals, in its order; the topic's config."""
        if max_count > MAX_POP_MESSAGES:
            raise Refused(
                ResponseCode.INVALID_PARAMETER,
                f"the broker[{self.broker_name}] pop message's num is greater than 32",
            )
        config = self._readable(topic)
        if queue_id >= config.read_queue_nums:
            raise Refused(
                ResponseCode.INVALID_PARAMETER,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] "
                f"topicConfig.readQueueNums:[{config.read_queue_nums}] consumer:[/{peer}]",
            )
        return config

    def _readable(self, topic: str) -> TopicConfig:
        config = self.store.topic(topic)
        if config is None:
            raise Refused(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{topic}] not exist, apply first please! {_FAQ}",
            )
        if not config.perm & PERM_READ:
            raise Refused(
                ResponseCode.NO_PERMISSION, f"the topic[{topic}] peeking message is forbidden"
            )
        return config

    # -- time and arrivals ---------------------------------------------------------------

    def tick(self) -> None:
        """Revive check points that fell due; answer held pops whose poll time ran out."""
        now = self._clock_ms()
        for ck in self.checkpoints.due(now):
            self._revive(ck)
        due, self._held = _split(self._held, lambda h: now > h.deadline_ms - POLL_EARLY_MS)
        for held in due:
            self._answer_held(held)
        # enableNotifyAfterPopOrderLockRelease: an orderly queue let go wakes its pops.
        ordered, self._held = _split(self._held, lambda h: h.request.field("order") == "true")
        for held in ordered:
            self._answer_held(held, hold_again=True)

    def _revive(self, ck: CheckPoint) -> None:
        """``PopReviveService.reviveRetry``: each un-acked message into the retry topic."""
        retry = (
            ck.topic if ck.topic.startswith(RETRY_PREFIX) else pop_retry_topic(ck.group, ck.topic)
        )
        if self.store.topic(retry) is None:
            config = TopicConfig(retry, 1, 1, PERM_READ | PERM_WRITE)
            self.store.put_topic(config)
            self._create_topic(config)
        for offset in ck.offsets:
            if offset in ck.acked:
                continue
            found = self.store.read(ck.topic, ck.queue_id, offset, 1)
            if not found:
                continue
            message = found[0]
            props = {k: v for k, v in message.properties.items() if k != POP_CK}
            props.setdefault(FIRST_POP_TIME, str(ck.pop_time))
            copy = pending_copy(message, retry, props, message.reconsume_times + 1)
            copy = dataclasses.replace(copy, born_host=self.store.store_host)
            self._put(retry, 0, copy, may_delay=False)

    def _wake(self, topic: str) -> None:
        if not self._held or topic.startswith(RETRY_PREFIX):
            return  # the broker does not wake pops on the pop retry topic
        woken, self._held = _split(self._held, lambda h: h.request.field("topic") == topic)
        for held in woken:
            if held.channel.is_open:
                self._answer_held(held, hold_again=True)

    def _answer_held(self, held: _HeldPop, *, hold_again: bool = False) -> None:
        if not held.channel.is_open:
            return
        try:
            response = self._pop(held.request, held.channel, hold=hold_again)
        except Refused as refused:
            response = held.request.make_response(refused.code, remark=refused.remark)
        if response is not None:
            response.version = self.version
            held.channel.write(encode_frame(response))

    def channel_closed(self, channel: Channel) -> None:
        self._held = [held for held in self._held if held.channel is not channel]


def _split(
    held: list[_HeldPop], chosen: Callable[[_HeldPop], bool]
) -> tuple[list[_HeldPop], list[_HeldPop]]:
    """(the held pops ``chosen`` picks, the others), in order."""
    picked: list[_HeldPop] = []
    kept: list[_HeldPop] = []
    for item in held:
        (picked if chosen(item) else kept).append(item)
    return picked, kept


def _rotated(count: int, start: int) -> list[int]:
    return [(start + i) % count for i in range(count)]
