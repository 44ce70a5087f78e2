"""QUERY_MESSAGE (12), as ``QueryMessageProcessor.queryMessage`` of 4.9.4 and 5.x answers it
(VIEW_MESSAGE_BY_ID, 33, is ``_admin.py``'s).

The real broker looks ``topic#key`` up in its index (``IndexService``): every stored
message is indexed by its UNIQ_KEY and by each of its KEYS, but for a rolled-back
transaction's record (``buildIndex`` skips TRANSACTION_ROLLBACK_TYPE); a half message is
indexed under the half topic, never under its real one. ``_UNIQUE_KEY_QUERY=true`` sets
``maxNum`` to ``defaultQueryMaxNum`` (32). Hits within [beginTimestamp, endTimestamp] of
store time come back as SUCCESS with the records one after the other; none as
QUERY_NOT_FOUND. Here the index is always up to date (a real one trails the commit log by
its reput, a few ms), so its last update is the newest record's.
"""

from __future__ import annotations

from producer._remoting.command import RemotingCommand
from producer._remoting.message_codec import TRANSACTION_ROLLBACK_TYPE
from producer._remoting.query_message import UNIQUE_KEY_QUERY, UNIQUE_QUERY_MAX_NUM
from producer._remoting.store_record import encode_record
from producer._response_codes import ResponseCode
from producer.testing._consume_fields import pulled_record
from producer.testing._store import BrokerStore, StoredMessage

__all__ = ["answer_query_message"]

_NOT_FOUND = "can not find message, maybe time range not correct"
_REMOTING_EXCEPTION = "org.apache.rocketmq.remoting.exception.RemotingCommandException"


def answer_query_message(store: BrokerStore, request: RemotingCommand) -> RemotingCommand:
    """The broker's answer to one QUERY_MESSAGE."""
    try:
        topic, key, max_num, begin, end = _header(request)
    except ValueError as exc:
        remark = f"{_REMOTING_EXCEPTION}: {exc}"
        return request.make_response(ResponseCode.SYSTEM_ERROR, remark=remark)
    if request.field(UNIQUE_KEY_QUERY) == "true":
        max_num = UNIQUE_QUERY_MAX_NUM
    hits = [
        m
        for m in store.messages(topic)
        if _indexed_as(m, key) and begin <= m.store_timestamp <= end
    ]
    last = max((m.commit_log_offset for m in store.messages()), default=0)
    fields = {"indexLastUpdateTimestamp": "0", "indexLastUpdatePhyoffset": str(last)}
    if not hits:
        return request.make_response(
            ResponseCode.QUERY_NOT_FOUND, ext_fields=fields, remark=_NOT_FOUND
        )
    body = b"".join(encode_record(pulled_record(m)) for m in hits[:max_num])
    return request.make_response(ResponseCode.SUCCESS, ext_fields=fields, body=body)


def _indexed_as(message: StoredMessage, key: str) -> bool:
    if message.sys_flag & TRANSACTION_ROLLBACK_TYPE == TRANSACTION_ROLLBACK_TYPE:
        return False
    return message.uniq_key == key or key in message.keys


def _header(request: RemotingCommand) -> tuple[str, str, int, int, int]:
    """``QueryMessageRequestHeader``: every field is required (``@CFNotNull``)."""
    values = []
    for name in ("topic", "key", "maxNum", "beginTimestamp", "endTimestamp"):
        value = request.field(name)
        if value is None:
            raise ValueError(f"the custom field <{name}> is null")
        values.append(value)
    topic, key, *numbers = values
    try:
        max_num, begin, end = (int(n) for n in numbers)
    except ValueError:
        raise ValueError(f"a number field of QUERY_MESSAGE is not a number: {numbers}") from None
    return topic, key, max_num, begin, end
