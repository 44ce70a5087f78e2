"""Trace records of what a producer or a consumer did (``SendMessageTraceHookImpl`` and
``ConsumeMessageTraceHookImpl`` of the 4.9.4 client), handed to a dispatcher.

A send's record is made after each attempt the broker answered (none for a oneway send
or a failed attempt; none when the broker's answer has no ``MSG_REGION`` or says
``TRACE_ON=false``), its time the attempt's start; a transparent batch's attempt makes
one per message. A listener call makes a ``SubBefore``
and a ``SubAfter`` per message (skipping messages stored with ``TRACE_ON=false``),
sharing a fresh request id; ``costTime`` is the call's time divided by its messages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from producer._remoting.namespace import unwrap
from producer._remoting.properties import KEYS, MSG_REGION, TRACE_ON
from producer._remoting.trace import TRACE_TOPIC, ConsumeReturn, MessageType, TraceRecord
from producer._remoting.validation import check_send_topic
from producer._types.consumer.received import ReceivedMessage
from producer._types.message import Message, MessageQueue
from producer._types.send_result import SendResult
from producer._types.send_status import SendStatus
from producer._types.trace_records import PubRecord, SubAfterRecord, SubBeforeRecord
from producer.errors import InvalidOptionError, MessageValidationError

__all__ = ["ConsumeTrace", "PublishTrace", "trace_topic"]

Append = Callable[[Sequence[TraceRecord]], None]


def trace_topic(trace: object) -> str | None:
    """The topic ``trace=`` names: ``False``/``None`` none, ``True`` RocketMQ's
    ``RMQ_SYS_TRACE_TOPIC``, a string that topic."""
    if trace is None or trace is False:
        return None
    if trace is True:
        return TRACE_TOPIC
    if not isinstance(trace, str):
        raise InvalidOptionError(
            f"trace={trace!r}: True (RMQ_SYS_TRACE_TOPIC), False, or a topic name"
        )
    try:
        check_send_topic(trace)
    except MessageValidationError as exc:
        raise InvalidOptionError(f"trace={trace!r} is not a usable topic: {exc}") from None
    return trace


def _keys(keys: object) -> str | None:
    if keys is None:
        return None
    if isinstance(keys, str):
        return keys or None
    joined = " ".join(str(k) for k in keys)  # type: ignore[attr-defined]
    return joined or None


class PublishTrace:
    """Traces every send attempt a broker answered (``Pub``): the sender's
    :data:`~producer._send.sender.AnswerObserver`, called on the send's own path, so it
    only builds the records and hands them over."""

    def __init__(
        self, append: Append, group: str, wall_ms: Callable[[], int], namespace: str | None = None
    ) -> None:
        self._append = append
        self.group = unwrap(group, namespace)  # the user's names, as Java's withoutNamespace
        self._wall_ms = wall_ms
        self.namespace = namespace

    def __call__(
        self,
        messages: Sequence[tuple[Message, str]],
        queue: MessageQueue,
        addr: str,
        latency_ms: float,
        result: SendResult | None,
    ) -> None:
        if result is None or result.region_id is None or not result.trace_on:
            return
        latency = int(latency_ms)
        started = self._wall_ms() - latency
        offset_ids = result.offset_msg_id.split(",")
        records: list[TraceRecord] = []
        for index, (message, msg_id) in enumerate(messages):
            delayed = message.delay_level or message.timed
            records.append(
                PubRecord(
                    timestamp=started,
                    region_id=result.region_id,
                    group=self.group,
                    topic=unwrap(queue.topic, self.namespace),
                    msg_id=msg_id,
                    tags=message.tags,
                    keys=_keys(message.keys),
                    store_host=addr,
                    body_length=len(message.body),
                    cost_ms=latency // len(messages),  # Java divides by the messages too
                    msg_type=MessageType.DELAY if delayed else MessageType.NORMAL,
                    offset_msg_id=offset_ids[min(index, len(offset_ids) - 1)],
                    success=result.status is SendStatus.SEND_OK,
                )
            )
        self._append(records)


class ConsumeTrace:
    """Traces listener calls of consumer group ``group`` (``SubBefore``/``SubAfter``)."""

    def __init__(
        self,
        append: Append,
        group: str,
        *,
        wall_ms: Callable[[], int],
        request_id: Callable[[int], str],
    ) -> None:
        self._append = append
        self.group = group
        self._wall_ms = wall_ms
        self._request_id = request_id

    def called(
        self, batch: Sequence[ReceivedMessage], success: bool, raised: bool, seconds: float
    ) -> None:
        """One listener call over ``batch`` ended after ``seconds``."""
        traced = [m for m in batch if m.properties.get(TRACE_ON) != "false"]
        if not traced:
            return
        end = self._wall_ms()
        start = end - int(seconds * 1000)
        request_id = self._request_id(start)
        cost = int(seconds * 1000) // len(batch)
        code = ConsumeReturn.SUCCESS if success else ConsumeReturn.FAILED
        if raised:
            code = ConsumeReturn.EXCEPTION
        records: list[TraceRecord] = []
        group, rid = self.group, request_id
        for m in traced:  # the KEYS property as stored, and the region it was sent in
            keys, region = m.properties.get(KEYS), m.properties.get(MSG_REGION)
            records.append(
                SubBeforeRecord(start, region, group, rid, m.msg_id, m.reconsume_times, keys)
            )
        for m in traced:
            keys = m.properties.get(KEYS)
            records.append(SubAfterRecord(rid, m.msg_id, cost, success, keys, code, end, group))
        self._append(records)
