"""Whether a group has a committed offset on a queue, from the broker's answers (no I/O).

QUERY_CONSUMER_OFFSET cannot always say (docs/consuming.md 1.7). For a queue the group
never committed, a 4.9.4 broker answers offset **0** (SUCCESS) while the queue's first
message is still in memory, and 22 QUERY_NOT_FOUND otherwise; so an answer of 0 from it
means "committed 0" or "never committed". A 5.x broker (version 5.0.0 on) asked with
``setZeroIfNotFound=false`` answers QUERY_NOT_FOUND for every queue without an offset, so
its 0 is a committed 0. The response's version field says which broker answered.

The 4.9.4 broker has one request that tells the two apart: GET_ALL_CONSUMER_OFFSET answers
its whole ``ConsumerOffsetManager`` table (``{"offsetTable":{"topic@group":{0:5}}}``,
fastjson with bare integer keys), in which a committed queue has an entry and a never
committed one has none.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from producer._remoting.command import RemotingCommand
from producer._remoting.consumer_requests import parse_offset_response
from producer._remoting.request_codes import ZERO_IF_NOT_FOUND_VERSION, RequestCode
from producer._remoting.route import quote_legacy_keys
from producer._response_codes import ResponseCode
from producer._types.message import MessageQueue
from producer.errors import BrokerError, RemoteProtocolError

__all__ = ["QueriedOffset", "all_offsets_request", "committed_in_table", "read_query_offset"]


@dataclass(frozen=True, slots=True)
class QueriedOffset:
    """A QUERY_CONSUMER_OFFSET answer: ``offset`` (``None``: the group has none) and
    whether it is certain (``False``: a 4.x broker's 0, which may mean "none")."""

    offset: int | None
    certain: bool = True


def read_query_offset(response: RemotingCommand) -> QueriedOffset:
    """What a QUERY_CONSUMER_OFFSET response says (other errors raise ``BrokerError``)."""
    if response.code == ResponseCode.QUERY_NOT_FOUND:
        return QueriedOffset(None)
    offset = parse_offset_response(response)
    ambiguous = offset == 0 and response.version < ZERO_IF_NOT_FOUND_VERSION
    return QueriedOffset(offset, certain=not ambiguous)


def all_offsets_request() -> RemotingCommand:
    """GET_ALL_CONSUMER_OFFSET (no header): the broker's whole offset table."""
    return RemotingCommand(RequestCode.GET_ALL_CONSUMER_OFFSET)


class _OffsetTable(msgspec.Struct):
    offsetTable: dict[str, dict[int, int]] = {}  # noqa: N815 - wire name


_table_decoder = msgspec.json.Decoder(_OffsetTable)


def committed_in_table(response: RemotingCommand, group: str, queue: MessageQueue) -> int | None:
    """The group's committed offset of ``queue`` in a GET_ALL_CONSUMER_OFFSET answer, or
    ``None`` when the table has no entry for it."""
    if response.code != ResponseCode.SUCCESS:
        raise BrokerError.for_code(response.code, response.remark)
    body = bytes(response.body)
    try:
        table = _table_decoder.decode(body)
    except msgspec.DecodeError:
        try:
            table = _table_decoder.decode(quote_legacy_keys(body))
        except msgspec.DecodeError as exc:
            raise RemoteProtocolError(f"offset table is not (fastjson) JSON: {exc}") from None
    return table.offsetTable.get(f"{queue.topic}@{group}", {}).get(queue.queue_id)
