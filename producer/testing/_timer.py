"""A 5.x broker's timed delivery (``TimerMessageStore``), pure: times are the caller's.

Followed from rocketmq-all-5.3.3: ``HookUtils.checkIfTimerMessage`` (a message with a
delay level loses its ``TIMER_*`` properties and is delayed by level; one already in the
timer topic, or carrying ``TIMER_OUT_MS``, is not a new timer message; otherwise any of
``TIMER_DELIVER_MS`` / ``TIMER_DELAY_SEC`` / ``TIMER_DELAY_MS`` makes it one) and
``HookUtils.transformTimerMessage`` (``DELAY_SEC`` wins, then ``DELAY_MS``, then
``DELIVER_MS``; an unparsable value or a delay beyond ``timerMaxDelaySec`` is refused as
MESSAGE_ILLEGAL; a time not in the future is delivered at once; else ``TIMER_OUT_MS``,
``REAL_TOPIC`` and ``REAL_QID`` are added and the message waits in
``rmq_sys_wheel_timer`` queue 0). ``TimerMessageStore.convertMessage`` puts it back on
its real topic and queue with ``REAL_*`` cleared. Only single sends reach this: a batch
is stored as is, timers ignored, as the real broker does.

Unlike the real wheel, which rounds the time down to ``timerPrecisionMs`` (1 s) and so
may deliver up to a second early, this one delivers exactly at the asked time.
"""

from __future__ import annotations

import base64
import heapq
import itertools
from typing import NamedTuple

from producer._remoting.properties import (
    DELAY,
    REAL_QUEUE_ID,
    REAL_TOPIC,
    TIMER_DELAY_MS,
    TIMER_DELAY_SEC,
    TIMER_DELIVER_MS,
    TIMER_OUT_MS,
)
from producer._remoting.validation import DEFAULT_TIMER_MAX_DELAY_MS
from producer.testing._consume_fields import pending_copy
from producer.testing._store import BrokerStore, PendingMessage, Put, StoredMessage

__all__ = ["TIMER_TOPIC", "TimerIllegal", "TimerWheel", "recall_handle"]

TIMER_TOPIC = "rmq_sys_wheel_timer"  # TimerMessageStore.TIMER_TOPIC
_TIMER_PROPERTIES = (TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS)


class TimerIllegal(Exception):
    """The broker refuses the timer message (answered as 13 MESSAGE_ILLEGAL)."""

    def __init__(self, max_delay_ms: int) -> None:
        super().__init__(
            "timer message illegal, the delay time should not be bigger than the max delay "
            f"{max_delay_ms}ms; or if set del msg, the delay time should be bigger than the "
            "current time"
        )


class Target(NamedTuple):
    topic: str
    queue_id: int


class TimerWheel:
    """Timer messages waiting, as ``(deliver_ms, order, commit_log_offset)``."""

    def __init__(self, max_delay_ms: int = DEFAULT_TIMER_MAX_DELAY_MS) -> None:
        self.max_delay_ms = max_delay_ms
        self._pending: list[tuple[int, int, int]] = []
        self._order = itertools.count()

    def __repr__(self) -> str:
        return f"TimerWheel(backlog={len(self._pending)})"

    def target(self, topic: str, queue_id: int, properties: dict[str, str], now_ms: int) -> Target:
        """Where a single put goes; may add the timer's properties (``properties`` is the
        message's own dict) and raise :class:`TimerIllegal`."""
        if _int(properties.get(DELAY)) > 0:
            for name in _TIMER_PROPERTIES:
                properties.pop(name, None)
            return Target(topic, queue_id)
        if topic == TIMER_TOPIC or TIMER_OUT_MS in properties:
            return Target(topic, queue_id)
        if not any(name in properties for name in _TIMER_PROPERTIES):
            return Target(topic, queue_id)
        deliver_ms = self._deliver_ms(properties, now_ms)
        if deliver_ms <= now_ms:
            return Target(topic, queue_id)
        if deliver_ms - now_ms > self.max_delay_ms:
            raise TimerIllegal(self.max_delay_ms)
        properties[TIMER_OUT_MS] = str(deliver_ms)
        properties[REAL_TOPIC] = topic
        properties[REAL_QUEUE_ID] = str(queue_id)
        return Target(TIMER_TOPIC, 0)

    def _deliver_ms(self, properties: dict[str, str], now_ms: int) -> int:
        try:
            if TIMER_DELAY_SEC in properties:
                return now_ms + int(properties[TIMER_DELAY_SEC]) * 1000
            if TIMER_DELAY_MS in properties:
                return now_ms + int(properties[TIMER_DELAY_MS])
            return int(properties[TIMER_DELIVER_MS])
        except ValueError:
            raise TimerIllegal(self.max_delay_ms) from None

    def scheduled(self, deliver_ms: int, commit_log_offset: int) -> None:
        heapq.heappush(self._pending, (deliver_ms, next(self._order), commit_log_offset))

    def due(self, now_ms: int) -> list[int]:
        """Commit-log offsets of the timer messages due by ``now_ms``, in time order."""
        ready = []
        while self._pending and self._pending[0][0] <= now_ms:
            ready.append(heapq.heappop(self._pending)[2])
        return ready

    def backlog(self) -> int:
        return len(self._pending)

    def divert(self, topic: str, queue_id: int, pending: PendingMessage, now_ms: int) -> Target:
        """:meth:`target` for a put the broker is about to store."""
        properties = pending.properties
        assert isinstance(properties, dict)
        return self.target(topic, queue_id, properties, now_ms)

    def deliver_due(self, now_ms: int, store: BrokerStore, put: Put) -> None:
        """``convertMessage``: each due message put on its real topic and queue."""
        for commit_offset in self.due(now_ms):
            message = store.message_at(commit_offset)
            if message is None:
                continue
            props = dict(message.properties)
            topic = props.pop(REAL_TOPIC, message.topic)
            queue_id = _int(props.pop(REAL_QUEUE_ID, None))
            copy = pending_copy(message, topic, props, message.reconsume_times)
            put(topic, queue_id, copy, may_delay=False)


def recall_handle(stored: StoredMessage, broker_name: str) -> dict[str, str]:
    """``SendMessageProcessor.attachRecallHandle`` (5.3): a timer message's answer carries
    base64url("v1 topic broker timerOutMs+1 uniqKey"); nothing for other messages."""
    props = stored.properties
    out, real = props.get(TIMER_OUT_MS), props.get(REAL_TOPIC)
    if stored.topic != TIMER_TOPIC or out is None or real is None or real.startswith("%RETRY%"):
        return {}
    raw = f"v1 {real} {broker_name} {int(out) + 1} {stored.uniq_key}"
    return {"recallHandle": base64.urlsafe_b64encode(raw.encode()).decode()}


def _int(value: str | None) -> int:
    try:
        return int(value) if value else 0
    except ValueError:
        return 0
