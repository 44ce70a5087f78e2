"""The dev broker's answers about a group's committed offsets, per broker version (no state).

QUERY_CONSUMER_OFFSET for a queue the group never committed (docs/consuming.md 1.7):

* 4.9.4 (``ConsumerManageProcessor.queryConsumerOffset``): offset 0 with SUCCESS when the
  queue's minimum offset is 0 and offset 0 is not on disk (``!checkInDiskByConsumeOffset``,
  also true for an empty queue), else 22 QUERY_NOT_FOUND. Every message of the dev store
  is in memory, so: 0 unless the queue's oldest messages were dropped
  (:meth:`~producer.testing.DevCluster.drop_before`).
* 5.x: QUERY_NOT_FOUND when the request says ``setZeroIfNotFound=false``; otherwise 0 only
  when offset 0 is a message in memory (``checkInMemByConsumeOffset``): an empty queue is
  not found, as a real 5.2.0 broker answered (tests/golden/sessions/pop_5_2_0_offset_query).

GET_ALL_CONSUMER_OFFSET (``AdminBrokerProcessor.getAllConsumerOffset``) answers the whole
``ConsumerOffsetManager`` as fastjson encodes it: ``{"offsetTable":{"topic@group":{0:5}}}``,
integer keys bare (not JSON; the client reads both).
"""

from __future__ import annotations

from producer._remoting.command import RemotingCommand
from producer._remoting.request_codes import ZERO_IF_NOT_FOUND_VERSION
from producer._response_codes import ResponseCode
from producer.testing._consume_fields import Refused, group_queue, offset_answer
from producer.testing._groups import ConsumerOffsets
from producer.testing._store import BrokerStore

__all__ = ["all_offsets_answer", "query_offset_answer"]

_NOT_FOUND_4 = "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"
_NOT_FOUND_5 = "Not found, do not set to zero, maybe this group boot first"


def query_offset_answer(
    request: RemotingCommand, offsets: ConsumerOffsets, store: BrokerStore, version: int
) -> RemotingCommand:
    """QUERY_CONSUMER_OFFSET as a broker of ``version`` answers it."""
    group, topic, queue_id = group_queue(request)
    stored = offsets.query(group, topic, queue_id)
    if stored is not None:
        return offset_answer(request, stored)
    if version >= ZERO_IF_NOT_FOUND_VERSION:
        if request.field("setZeroIfNotFound") == "false":
            raise Refused(ResponseCode.QUERY_NOT_FOUND, _NOT_FOUND_5)
        # checkInMemByConsumeOffset(topic, queue, 0, 1): a message at offset 0, in memory
        zero = store.min_offset(topic, queue_id) <= 0 < store.max_offset(topic, queue_id)
    else:  # !checkInDiskByConsumeOffset(topic, queue, 0): true for an empty queue too
        zero = store.min_offset(topic, queue_id) <= 0
    if zero:
        return offset_answer(request, 0)
    raise Refused(ResponseCode.QUERY_NOT_FOUND, _NOT_FOUND_4)


def all_offsets_answer(request: RemotingCommand, offsets: ConsumerOffsets) -> RemotingCommand:
    """The broker's whole offset table, in fastjson's legacy encoding."""
    tables = ",".join(
        f'"{key}":{{' + ",".join(f"{q}:{o}" for q, o in sorted(table.items())) + "}"
        for key, table in offsets.snapshot().items()
    )
    body = ('{"offsetTable":{' + tables + "}}").encode()
    return request.make_response(ResponseCode.SUCCESS, body=body)
