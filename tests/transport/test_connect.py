"""Opening connections: refusal, timeouts, bad addresses, misuse."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import anyio
import pytest

from producer._transport import Connector
from producer.errors import ConnectError, LocalProtocolError

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_stray_tasks")]


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port bound but not listening: connecting to it is refused (RST) at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


async def test_refused_connect_fails_fast(connector: Connector, closed_port: int) -> None:
    address = f"127.0.0.1:{closed_port}"
    started = anyio.current_time()
    with pytest.raises(ConnectError) as info:
        await connector.connect(address, 10_000)
    assert anyio.current_time() - started < 2.0
    assert address in str(info.value)
    assert isinstance(info.value.__cause__, OSError)
    assert info.value.definitely_not_stored


async def test_zero_connect_timeout_times_out(connector: Connector) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        with pytest.raises(ConnectError, match="timed out after 0 ms") as info:
            await connector.connect(address, 0)
    assert address in str(info.value)


async def test_connect_timeout_against_a_full_backlog(connector: Connector) -> None:
    """The kernel drops SYNs once a listener's backlog is full, so connect hangs.

    Whether it does depends on the kernel (syncookies and backlog rounding differ), so
    this skips rather than flakes when the trick does not hold here.
    """
    with socket.create_server(("127.0.0.1", 0), backlog=0) as listener:
        port = listener.getsockname()[1]
        fillers: list[socket.socket] = []
        try:
            while len(fillers) < 4 and (filler := _try_fill(port)) is not None:
                fillers.append(filler)
            if len(fillers) == 4:
                pytest.skip("backlog never filled: connects complete at once here")
            started = anyio.current_time()
            with pytest.raises(ConnectError, match="timed out after 200 ms"):
                await connector.connect(f"127.0.0.1:{port}", 200)
            assert 0.19 <= anyio.current_time() - started < 2.0
        finally:
            for filler in fillers:
                filler.close()


def _try_fill(port: int) -> socket.socket | None:
    """A socket connected to ``port``, or None if the connect did not complete in 0.2 s.

    (A SYN-ACK on loopback takes microseconds; a dropped SYN gets none for a second.)
    """
    sock = socket.socket()
    sock.settimeout(0.2)
    if sock.connect_ex(("127.0.0.1", port)) == 0:
        return sock
    sock.close()
    return None


async def test_unresolvable_host_is_a_connect_error(connector: Connector) -> None:
    # Either DNS says no at once, or the lookup outlives the budget: both ConnectError.
    with pytest.raises(ConnectError, match=r"no-such-host\.invalid:9876"):
        await connector.connect("no-such-host.invalid:9876", 3000)


@pytest.mark.parametrize("address", ["nohost", "host:", ":9876", "host:0", "host:99999", "h:x"])
async def test_bad_address_is_a_local_error(connector: Connector, address: str) -> None:
    with pytest.raises(LocalProtocolError, match="address"):
        await connector.connect(address, 1000)


async def test_connect_needs_an_entered_connector(
    make_connector: Callable[[], Connector],
) -> None:
    with pytest.raises(LocalProtocolError, match="async with"):
        await make_connector().connect("127.0.0.1:9876", 1000)
