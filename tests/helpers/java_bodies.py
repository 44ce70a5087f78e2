"""Compressed bodies as a Java producer sends them (raw SEND_MESSAGE_V2 to ``Orders`` on
broker-a), and a consumer install without the lz4 library."""

from __future__ import annotations

import dataclasses
import socket
from types import ModuleType

from producer._remoting.codecs import BodyCodecs
from producer._remoting.frame_decoder import decode_frame
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.request_codes import RequestCode
from producer.consumer import ConsumeStatus, PushConsumer, ReceivedMessage
from producer.testing import DevClusterThread
from tests.helpers.push import consumer
from tests.testing.rawclient import make_request, send_fields, split_addr


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


def without_lz4_consumer(
    cluster: DevClusterThread, listener: object, **options: object
) -> PushConsumer:
    """A consumer reading as an install without lz4 would: ``body_codecs`` is a seam of
    its options, not a constructor option, so it is set before the consumer starts."""
    c = consumer(cluster, listener, **options)
    c.options = dataclasses.replace(c.options, body_codecs=without_lz4())
    return c


class Seen:
    """A listener that records each message's body by msg id, and succeeds."""

    def __init__(self) -> None:
        self.bodies: dict[str, bytes] = {}

    def __call__(self, messages: list[ReceivedMessage]) -> ConsumeStatus:
        for m in messages:
            self.bodies[m.msg_id] = m.body
        return ConsumeStatus.SUCCESS


def committed(cluster: DevClusterThread) -> int:
    """Group ``cg``'s committed offset of ``Orders`` queue 0 on broker-a (0 if none)."""
    return cluster.consumer_offsets("broker-a").get("Orders@cg", {}).get(0, 0)
