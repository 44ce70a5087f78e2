"""A tiny asyncio client that speaks raw remoting frames (independent of producer._transport)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import struct
from collections.abc import Mapping

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_decoder import decode_frame
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.request_codes import RequestCode, SerializeType

_INT32 = struct.Struct(">i")
_opaques = itertools.count(1)


def split_addr(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    return host, int(port)


class RawClient:
    """One TCP connection: write frames, read whole frames in arrival order."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, addr: str) -> RawClient:
        reader, writer = await asyncio.open_connection(*split_addr(addr))
        return cls(reader, writer)

    async def __aenter__(self) -> RawClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self.writer.wait_closed()

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def send(self, command: RemotingCommand) -> None:
        await self.write(encode_frame(command))

    async def read_raw(self) -> bytes:
        prefix = await self.reader.readexactly(4)
        (length,) = _INT32.unpack(prefix)
        return prefix + await self.reader.readexactly(length)

    async def read(self) -> RemotingCommand:
        return decode_frame(await self.read_raw())

    async def request(self, command: RemotingCommand) -> RemotingCommand:
        await self.send(command)
        response = await self.read()
        assert response.opaque == command.opaque, (response, command)
        return response

    async def answer(self, command: RemotingCommand) -> RemotingCommand:
        """Like :meth:`request`, skipping the requests the server starts meanwhile (e.g.
        NOTIFY_CONSUMER_IDS_CHANGED after a heartbeat)."""
        await self.send(command)
        while True:
            response = await self.read()
            if response.is_response:
                assert response.opaque == command.opaque, (response, command)
                return response

    async def at_eof(self) -> bool:
        """True when the server closed the connection (reads what is left first)."""
        data = await self.reader.read()
        return data == b""


def make_request(
    code: int,
    ext_fields: Mapping[str, str] | None = None,
    *,
    body: bytes = b"",
    serialize_type: SerializeType = SerializeType.JSON,
    oneway: bool = False,
    version: int = 401,
) -> RemotingCommand:
    return RemotingCommand(
        code,
        opaque=next(_opaques),
        flag=2 if oneway else 0,
        ext_fields=dict(ext_fields) if ext_fields is not None else None,
        body=body,
        version=version,
        serialize_type=serialize_type,
    )


def send_fields(
    topic: str,
    queue_id: int = 0,
    *,
    properties: str = "UNIQ_KEY\x01ABC\x02WAIT\x01true",
    sys_flag: int = 0,
    batch: bool = False,
    group: str = "G",
    default_topic_queue_nums: int = 4,
) -> dict[str, str]:
    """SEND_MESSAGE_V2 ext fields as the Java client writes them."""
    return {
        "a": group,
        "b": topic,
        "c": "TBW102",
        "d": str(default_topic_queue_nums),
        "e": str(queue_id),
        "f": str(sys_flag),
        "g": "1795259977471",
        "h": "0",
        "i": properties,
        "j": "0",
        "k": "false",
        "m": "true" if batch else "false",
    }


def create_topic(topic: str, queues: int = 4, perm: int = 6) -> RemotingCommand:
    """UPDATE_AND_CREATE_TOPIC as `mqadmin updateTopic` sends it."""
    fields = {
        "topic": topic,
        "defaultTopic": "TBW102",
        "readQueueNums": str(queues),
        "writeQueueNums": str(queues),
        "perm": str(perm),
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": "0",
        "order": "false",
    }
    return make_request(RequestCode.UPDATE_AND_CREATE_TOPIC, fields)
