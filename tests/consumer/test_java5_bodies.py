"""LZ4 and zstd bodies from a 5.x Java producer, end to end on the dev cluster: decoded for
the listener; a body that does not decode is never handed to it, and its offset moves on
only once the message went the retry/DLQ way (README, *Consuming*)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from types import ModuleType

import pytest

from producer._remoting.codecs import BodyCodecs
from producer._remoting.codes import RequestCode
from producer._remoting.frame import decode_frame, encode_frame
from producer.consumer import ConsumeStatus, ReceivedMessage
from producer.testing import DevClusterThread
from tests.consumer.test_push_consumer import FAST_LEVELS, consumer, until
from tests.protocol.java5_vectors import (
    LZ4_BODY,
    LZ4_CONTENT,
    SYS_FLAG_LZ4,
    SYS_FLAG_ZSTD,
    ZSTD_BODY,
    ZSTD_CONTENT,
)
from tests.testing.rawclient import make_request, send_fields, split_addr

pytestmark = pytest.mark.anyio


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=1, topics={"Orders": 1}, delay_levels=FAST_LEVELS) as c:
        yield c


def java_send(cluster: DevClusterThread, uniq_key: str, body: bytes, sys_flag: int) -> None:
    """SEND_MESSAGE_V2 as the 5.x Java producer writes it: its bytes, its sysFlag."""
    properties = f"UNIQ_KEY\x01{uniq_key}\x02WAIT\x01true"
    fields = send_fields("Orders", properties=properties, sys_flag=sys_flag)
    request = make_request(RequestCode.SEND_MESSAGE_V2, fields, body=body)
    with socket.create_connection(split_addr(cluster.broker_addr("broker-a")), 5) as sock:
        sock.sendall(encode_frame(request))
        data = b""
        while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
            data += sock.recv(65536)
    assert decode_frame(data).code == 0


def without_lz4() -> BodyCodecs:
    """The codecs of an install without the ``[compression]`` extra's lz4."""

    def import_module(name: str) -> ModuleType:
        if name.startswith("lz4"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return __import__(name, fromlist=["_"])

    return BodyCodecs(import_module)


class Seen:
    def __init__(self) -> None:
        self.bodies: dict[str, bytes] = {}

    def __call__(self, messages: list[ReceivedMessage]) -> ConsumeStatus:
        for m in messages:
            self.bodies[m.msg_id] = m.body
        return ConsumeStatus.SUCCESS


def committed(cluster: DevClusterThread) -> int:
    return cluster.consumer_offsets("broker-a").get("Orders@cg", {}).get(0, 0)


async def test_lz4_and_zstd_bodies_arrive_decoded(cluster: DevClusterThread) -> None:
    java_send(cluster, "LZ4", LZ4_BODY, SYS_FLAG_LZ4)
    java_send(cluster, "ZSTD", ZSTD_BODY, SYS_FLAG_ZSTD)
    (stored_lz4, _) = cluster.messages("Orders")  # stored as sent
    assert (stored_lz4.wire_body, stored_lz4.sys_flag) == (LZ4_BODY, 257)
    seen = Seen()
    async with consumer(cluster, seen, consume_batch_size=2):
        await until(lambda: len(seen.bodies) == 2 and committed(cluster) == 2)
    assert seen.bodies == {"LZ4": LZ4_CONTENT, "ZSTD": ZSTD_CONTENT}


async def test_a_corrupt_lz4_body_is_dead_lettered_never_consumed(
    cluster: DevClusterThread,
) -> None:
    corrupt = LZ4_BODY[:-4]  # no end mark: a truncated frame
    java_send(cluster, "BAD", corrupt, SYS_FLAG_LZ4)
    java_send(cluster, "GOOD", LZ4_BODY, SYS_FLAG_LZ4)
    seen = Seen()
    async with consumer(cluster, seen, consume_batch_size=8):
        await until(lambda: committed(cluster) == 2 and bool(cluster.messages("%DLQ%cg")))
    assert seen.bodies == {"GOOD": LZ4_CONTENT}  # the corrupt one never reached it
    (dead,) = cluster.messages("%DLQ%cg")  # at once: no retry can mend a corrupt frame
    assert (dead.uniq_key, dead.reconsume_times) == ("BAD", 1)
    assert (dead.wire_body, dead.sys_flag) == (corrupt, SYS_FLAG_LZ4)  # kept as stored
    assert not cluster.messages("%RETRY%cg")


async def test_without_lz4_an_lz4_body_is_retried_then_dead_lettered(
    cluster: DevClusterThread,
) -> None:
    java_send(cluster, "LZ4", LZ4_BODY, SYS_FLAG_LZ4)
    seen = Seen()
    options = {"body_codecs": without_lz4(), "max_reconsume_times": 1}
    async with consumer(cluster, seen, **options):
        await until(lambda: bool(cluster.messages("%DLQ%cg")))
    assert seen.bodies == {}  # never the raw LZ4 bytes as if they were the message
    assert [m.uniq_key for m in cluster.messages("%RETRY%cg")] == ["LZ4"]  # retried first
    (dead,) = cluster.messages("%DLQ%cg")
    assert (dead.wire_body, dead.sys_flag) == (LZ4_BODY, SYS_FLAG_LZ4)
    assert committed(cluster) == 1
