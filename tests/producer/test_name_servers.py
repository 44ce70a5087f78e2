"""Name server mistakes say what is wrong: a bad address at construction, a port that is
not a name server as a ConnectError, a lookup out of budget as a SendTimeout."""

from __future__ import annotations

import anyio
import pytest

from producer import Message, Producer
from producer.errors import (
    ConnectError,
    InvalidOptionError,
    NameServerError,
    RequestTimeout,
    SendTimeout,
)
from producer.testing import DevClusterThread, FaultSpec
from tests.helpers.ports import closed_port
from tests.producer.conftest import TOPIC, make_producer

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "namesrv", ["127.0.0.1", "http://127.0.0.1:9876", "127.0.0.1:0", "host:port", ";", ""]
)
def test_a_bad_address_is_refused_at_construction(namesrv: str) -> None:
    with pytest.raises(InvalidOptionError) as info:
        Producer("g", namesrv)
    assert isinstance(info.value, ValueError)
    assert "namesrv" in str(info.value)


def test_the_bad_address_is_named_among_good_ones() -> None:
    with pytest.raises(InvalidOptionError, match=r"'127\.0\.0\.1' is not 'host:port'"):
        Producer("g", ["127.0.0.1:9876", "127.0.0.1"])


async def test_nothing_listening_is_a_name_server_error() -> None:
    addr = f"127.0.0.1:{closed_port()}"
    async with Producer("g", addr, routing="off") as p:
        with pytest.raises(NameServerError, match="no name server answered") as info:
            await p.send(Message(TOPIC, b"x"))
    assert isinstance(info.value, ConnectError)
    assert addr in str(info.value)


async def test_a_broker_port_is_not_taken_for_a_name_server(cluster: DevClusterThread) -> None:
    broker = cluster.broker_addr("broker-a")
    async with Producer("g", broker, routing="off") as p:
        with pytest.raises(NameServerError, match="REQUEST_CODE_NOT_SUPPORTED") as info:
            await p.send(Message(TOPIC, b"x"))
    assert broker in str(info.value)


async def test_running_out_of_budget_in_the_lookup_is_a_send_timeout(
    cluster: DevClusterThread,
) -> None:
    cluster.set_namesrv_fault(FaultSpec(blackhole=True))
    errors: list[BaseException] = []

    async def send(p: Producer) -> None:
        try:
            await p.send(Message(TOPIC, b"x"), timeout_ms=300)
        except SendTimeout as exc:
            errors.append(exc)

    async with make_producer(cluster) as p, anyio.create_task_group() as tg:
        tg.start_soon(send, p)
        tg.start_soon(send, p)  # waits on the same lookup
    assert len(errors) == 2 and all(isinstance(e, TimeoutError) for e in errors)
    assert errors[0] is not errors[1]
    assert any(isinstance(e.last_error, RequestTimeout) for e in errors)  # type: ignore[attr-defined]
