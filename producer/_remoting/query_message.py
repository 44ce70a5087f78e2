"""QUERY_MESSAGE (12) by UNIQ_KEY: is a message stored in a topic? (pure: no I/O)

What ``MQAdminImpl.queryMessageByUniqKey`` of the 4.9.4 client asks a broker, and what
``QueryMessageProcessor.queryMessage`` (4.9.4 and 5.x) answers: the header names the
topic, the key and a store-time window; ``_UNIQUE_KEY_QUERY=true`` makes the broker look
the key up as a UNIQ_KEY (its index holds ``topic#UNIQ_KEY`` for every message stored
but a rolled-back one, ``IndexService.buildIndex``). Found: SUCCESS, the body the stored
records one after the other; none: QUERY_NOT_FOUND with a remark. The index may hash two
keys alike, so a record counts only if its own UNIQ_KEY and topic match.
"""

from __future__ import annotations

from producer._remoting.command import RemotingCommand
from producer._remoting.properties import UNIQ_KEY
from producer._remoting.request_codes import RequestCode
from producer._remoting.store_record import decode_records
from producer._response_codes import ResponseCode
from producer.errors import ProducerError

__all__ = ["UNIQUE_KEY_QUERY", "query_by_uniq_key", "stored_by_uniq_key"]

#: ``MixAll.UNIQUE_MSG_QUERY_FLAG``: the ext field that makes ``key`` a UNIQ_KEY.
UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"
#: ``MessageStoreConfig.defaultQueryMaxNum``, which the broker uses for unique-key queries.
UNIQUE_QUERY_MAX_NUM = 32
#: The end of the window when it is "until now" (``Long.MAX_VALUE``, as Java asks).
NO_END = (1 << 63) - 1


def query_by_uniq_key(topic: str, uniq_key: str, begin_ms: int) -> RemotingCommand:
    """QUERY_MESSAGE for ``topic``'s message with ``uniq_key`` stored at or after
    ``begin_ms`` (header fields in the order of ``QueryMessageRequestHeader``)."""
    fields = {
        "topic": topic,
        "key": uniq_key,
        "maxNum": str(UNIQUE_QUERY_MAX_NUM),
        "beginTimestamp": str(begin_ms),
        "endTimestamp": str(NO_END),
        UNIQUE_KEY_QUERY: "true",
    }
    return RemotingCommand(RequestCode.QUERY_MESSAGE, ext_fields=fields)


def stored_by_uniq_key(response: RemotingCommand, topic: str, uniq_key: str) -> bool:
    """Whether ``response`` shows ``topic``'s message with ``uniq_key`` stored. Any code
    but SUCCESS and QUERY_NOT_FOUND raises ``ProducerError``: the broker did not say."""
    if response.code == ResponseCode.QUERY_NOT_FOUND:
        return False
    if response.code != ResponseCode.SUCCESS:
        raise ProducerError(
            f"QUERY_MESSAGE answered {response.code}: {response.remark or 'no remark'}"
        )
    records = decode_records(response.body or b"")
    return any(r.topic == topic and r.properties.get(UNIQ_KEY) == uniq_key for r in records)
