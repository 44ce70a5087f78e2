"""Reading a message's trace back (what ``mqadmin queryMsgTraceById`` does).

Every trace message carries the ids and keys of the messages it traces in ``KEYS``, so
each broker of the trace topic is asked with QUERY_MESSAGE by key (over all time), the
bodies found are decoded, and the records about the message are kept, oldest first. A
trace message that does not decode is logged and skipped (a trace topic may hold other
writers' data); one it holds about other messages is left out.
"""

from __future__ import annotations

import logging
import random
from ssl import SSLContext

from producer._client.clock import LoopClock
from producer._remoting.command import RemotingCommand
from producer._remoting.query_message import NO_END, UNIQUE_QUERY_MAX_NUM
from producer._remoting.request_codes import RequestCode
from producer._remoting.store_record import decode_records
from producer._remoting.trace import TRACE_TOPIC, TraceRecord, decode_trace_body
from producer._response_codes import ResponseCode
from producer._transport import current_runtime
from producer._types.credentials import Credentials
from producer.consumer._connect import Identity, open_api
from producer.errors import ProducerError, RemoteProtocolError

__all__ = ["read_trace"]

log = logging.getLogger("producer.trace")


async def read_trace(
    namesrv: str | list[str],
    msg_id: str,
    *,
    topic: str = TRACE_TOPIC,
    credentials: Credentials | None = None,
    ssl: bool | SSLContext | None = None,
    timeout_ms: float = 3000.0,
) -> list[TraceRecord]:
    """The trace records about message ``msg_id`` (its UNIQ_KEY) in ``topic``, by time.

    Raises :class:`~producer.errors.NoRouteError` when no name server knows ``topic``.
    """
    group = "TOOLS_CONSUMER"  # MixAll.TOOLS_CONSUMER_GROUP: the admin tools' group
    who = Identity.of_tool(group, "trace", namesrv, credentials, ssl, timeout_ms)
    runtime = current_runtime()
    clock = LoopClock(runtime.loop_time)
    pool, api = await open_api(runtime, who, clock, random.Random())
    try:
        deadline = clock.monotonic_ms() + timeout_ms
        route = await api.routes.get(topic, deadline)
        records: list[TraceRecord] = []
        for addr in sorted(set(route.broker_addrs.values())):
            response = await api.client.invoke(addr, _query(topic, msg_id), timeout_ms)
            records.extend(_about(response, msg_id))
    finally:
        await pool.__aexit__(None, None, None)
    return sorted(records, key=_time)


def _query(topic: str, key: str) -> RemotingCommand:
    fields = {
        "topic": topic,
        "key": key,
        "maxNum": str(UNIQUE_QUERY_MAX_NUM),
        "beginTimestamp": "0",
        "endTimestamp": str(NO_END),
    }
    return RemotingCommand(RequestCode.QUERY_MESSAGE, ext_fields=fields)


def _about(response: RemotingCommand, msg_id: str) -> list[TraceRecord]:
    if response.code == ResponseCode.QUERY_NOT_FOUND:
        return []
    if response.code != ResponseCode.SUCCESS:
        raise ProducerError(f"QUERY_MESSAGE answered {response.code}: {response.remark}")
    found: list[TraceRecord] = []
    for stored in decode_records(response.body or b""):
        try:
            records = decode_trace_body(stored.inflated_body())
        except RemoteProtocolError as exc:
            log.warning("a trace message that does not decode was skipped: %s", exc)
            continue
        found.extend(r for r in records if r.msg_id == msg_id)
    return found


def _time(record: TraceRecord) -> int:
    return record.timestamp
