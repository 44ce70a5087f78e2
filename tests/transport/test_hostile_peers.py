"""A peer that answers with hostile bytes (issue 14 item 3).

Each bad answer fails only the requests of its own connection, with a typed error, and
closes that connection; a second connection to the same peer keeps working, and a frame
that announces more than 16 MiB is refused from its length prefix, before any of it is
buffered. Harmless oddities (an answer for an unknown opaque, a byte-by-byte drip, an
unknown response code) leave the connection open.
"""

from __future__ import annotations

import struct
import tracemalloc
from collections.abc import Callable

import pytest

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.request_codes import RequestCode
from producer._transport import Connector
from producer.errors import ConnectionLostError, RemoteProtocolError

from .fake_broker import GARBAGE, FakeBroker, echo_response

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_stray_tasks")]

LONG_MS = 30_000  # a timeout no test waits for
EVIL = "evil"


def request(echo: str) -> RemotingCommand:
    return RemotingCommand(RequestCode.SEND_MESSAGE_V2, ext_fields={"echo": echo})


def _frame(header: bytes, serialize_type: int = 0) -> bytes:
    return struct.pack(">ii", 4 + len(header), (serialize_type << 24) | len(header)) + header


def _json_header(opaque: int, code: object = 0) -> bytes:
    return b'{"code":%s,"flag":1,"opaque":%d,"language":"JAVA","version":401}' % (
        str(code).encode() if isinstance(code, int) else b'"%s"' % str(code).encode(),
        opaque,
    )


BreakingAnswer = Callable[[RemotingCommand], list[bytes]]

BREAKING: dict[str, BreakingAnswer] = {
    "length over 16 MiB": lambda r: [struct.pack(">i", 16 * 1024 * 1024 + 1) + b"\0" * 64],
    "negative length": lambda r: [struct.pack(">i", -5) + b"\0" * 8],
    "length below the minimum": lambda r: [GARBAGE],
    "header length beyond the frame": lambda r: [struct.pack(">ii", 8, 100) + b"abcd"],
    "invalid JSON header": lambda r: [_frame(b"{not json")],
    "wrong type in a header field": lambda r: [_frame(_json_header(r.opaque, code="abc"))],
    "unknown serialize type": lambda r: [_frame(b"{}", serialize_type=5)],
    "bad binary header": lambda r: [_frame(b"\x00\x01", serialize_type=1)],
}


def _only_evil(answer: BreakingAnswer) -> Callable[[RemotingCommand], list[bytes]]:
    def hostile(request: RemotingCommand) -> list[bytes]:
        if request.field("echo") == EVIL:
            return answer(request)
        return [encode_frame(echo_response(request))]

    return hostile


@pytest.mark.parametrize("case", sorted(BREAKING))
async def test_a_bad_answer_fails_its_connection_only(
    broker: FakeBroker, connector: Connector, case: str
) -> None:
    broker.hostile = _only_evil(BREAKING[case])
    victim = await connector.connect(broker.address, 2000)
    bystander = await connector.connect(broker.address, 2000)
    assert (await bystander.request(request("before"), LONG_MS)).field("echo") == "before"
    tracemalloc.start()
    try:
        with pytest.raises(ConnectionLostError) as info:
            await victim.request(request(EVIL), LONG_MS)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024, f"{peak} bytes buffered for a refused frame"
    assert isinstance(info.value.__cause__, RemoteProtocolError)
    assert info.value.written is True
    assert victim.is_closed
    assert (await bystander.request(request("after"), LONG_MS)).field("echo") == "after"
    replacement = await connector.connect(broker.address, 2000)
    assert (await replacement.request(request("again"), LONG_MS)).field("echo") == "again"
    for connection in (bystander, replacement):
        await connection.aclose()


async def test_a_reset_mid_frame_fails_the_request_as_lost(
    broker: FakeBroker, connector: Connector
) -> None:
    broker.hostile = lambda r: [encode_frame(echo_response(r))[:10]]
    broker.reset_after_hostile = True
    connection = await connector.connect(broker.address, 2000)
    with pytest.raises(ConnectionLostError) as info:
        await connection.request(request("cut"), LONG_MS)
    assert info.value.written is True
    assert connection.is_closed


async def test_an_answer_for_an_unknown_opaque_is_ignored(
    broker: FakeBroker, connector: Connector
) -> None:
    def stray_then_real(r: RemotingCommand) -> list[bytes]:
        stray = RemotingCommand(0, opaque=r.opaque + 1000, flag=1)
        return [encode_frame(stray), encode_frame(echo_response(r))]

    broker.hostile = stray_then_real
    connection = await connector.connect(broker.address, 2000)
    assert (await connection.request(request("real"), LONG_MS)).field("echo") == "real"
    assert not connection.is_closed
    await connection.aclose()


async def test_a_byte_by_byte_drip_still_delivers(broker: FakeBroker, connector: Connector) -> None:
    broker.hostile = lambda r: [bytes([b]) for b in encode_frame(echo_response(r))]
    connection = await connector.connect(broker.address, 2000)
    for n in range(3):
        answer = await connection.request(request(f"drip-{n}"), LONG_MS)
        assert answer.field("echo") == f"drip-{n}"
    await connection.aclose()


async def test_an_unknown_response_code_reaches_the_caller_unjudged(
    broker: FakeBroker, connector: Connector
) -> None:
    broker.hostile = lambda r: [encode_frame(r.make_response(9999, remark="what"))]
    connection = await connector.connect(broker.address, 2000)
    answer = await connection.request(request("odd"), LONG_MS)
    assert (answer.code, answer.remark) == (9999, "what")
    assert not connection.is_closed
    await connection.aclose()
