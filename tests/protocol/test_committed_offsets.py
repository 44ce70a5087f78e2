"""Reading a group's committed offsets from broker answers (no I/O, docs/consuming.md 1.8):
which QUERY_CONSUMER_OFFSET answers are certain, and GET_ALL_CONSUMER_OFFSET's table in
fastjson's legacy encoding (bare integer keys) or standard JSON."""

from __future__ import annotations

import pytest

from producer._remoting.command import RemotingCommand
from producer._remoting.committed_offsets import (
    QueriedOffset,
    committed_in_table,
    read_query_offset,
)
from producer._remoting.request_codes import V4_9_4, V5_0_0
from producer._response_codes import ResponseCode
from producer._types.message import MessageQueue
from producer.errors import BrokerError, RemoteProtocolError

QUEUE = MessageQueue("Orders", "broker-a", 3)


def answer(code: int, offset: str | None, version: int) -> RemotingCommand:
    fields = {} if offset is None else {"offset": offset}
    return RemotingCommand(code, flag=1, ext_fields=fields, version=version)


@pytest.mark.parametrize(
    ("code", "offset", "version", "expected"),
    [
        (ResponseCode.QUERY_NOT_FOUND, None, V4_9_4, QueriedOffset(None)),
        (ResponseCode.QUERY_NOT_FOUND, None, V5_0_0, QueriedOffset(None)),
        (ResponseCode.SUCCESS, "0", V4_9_4, QueriedOffset(0, certain=False)),  # maybe none
        (ResponseCode.SUCCESS, "0", V5_0_0, QueriedOffset(0)),  # setZeroIfNotFound honoured
        (ResponseCode.SUCCESS, "7", V4_9_4, QueriedOffset(7)),
    ],
)
def test_which_answers_are_certain(
    code: int, offset: str | None, version: int, expected: QueriedOffset
) -> None:
    assert read_query_offset(answer(code, offset, version)) == expected


def table(body: bytes, code: int = ResponseCode.SUCCESS) -> RemotingCommand:
    return RemotingCommand(code, flag=1, body=body, remark=None if code == 0 else "no")


@pytest.mark.parametrize(
    "body",
    [
        b'{"offsetTable":{"Orders@g":{0:4,3:0},"Orders@h":{3:9}}}',  # fastjson, 4.9.4
        b'{"offsetTable":{"Orders@g":{"0":4,"3":0},"Orders@h":{"3":9}}}',  # standard JSON
        b'{"dataVersion":{"counter":2},"offsetTable":{"Orders@g":{3:0},"Orders@h":{3:9}}}',
    ],
)
def test_the_table_has_an_entry_only_for_what_was_committed(body: bytes) -> None:
    assert committed_in_table(table(body), "g", QUEUE) == 0
    assert committed_in_table(table(body), "h", QUEUE) == 9
    assert committed_in_table(table(body), "new", QUEUE) is None
    assert committed_in_table(table(body), "g", MessageQueue("Other", "broker-a", 3)) is None


def test_a_bad_table_or_a_refusal_raises() -> None:
    with pytest.raises(RemoteProtocolError, match="offset table"):
        committed_in_table(table(b'{"offsetTable":[1,2]'), "g", QUEUE)
    with pytest.raises(RemoteProtocolError, match="offset table"):
        committed_in_table(table(b'{"offsetTable":{"Orders@g":{"x":1}}}'), "g", QUEUE)
    with pytest.raises(BrokerError):
        committed_in_table(table(b"", ResponseCode.SYSTEM_ERROR), "g", QUEUE)
