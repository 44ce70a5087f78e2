"""parse_address: what a RocketMQ address may look like, and clear errors otherwise."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from producer._transport import parse_address
from producer.errors import LocalProtocolError


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("127.0.0.1:9876", ("127.0.0.1", 9876)),
        ("broker-a.example:10911", ("broker-a.example", 10911)),
        (" localhost:1 ", ("localhost", 1)),
        ("[::1]:9876", ("::1", 9876)),
        ("::1:9876", ("::1", 9876)),  # Java takes the port after the last colon too
        ("host:65535", ("host", 65535)),
    ],
)
def test_valid_addresses(address: str, expected: tuple[str, int]) -> None:
    assert parse_address(address) == expected


@pytest.mark.parametrize(
    "address",
    [
        "",
        "host",
        "host:",
        ":9876",
        "host:0",
        "host:65536",
        "host:-1",
        "host:port",
        "host:٣",
        "[::1:9876",
        "a b:1",
        "host:98 76",
    ],
)
def test_invalid_addresses(address: str) -> None:
    with pytest.raises(LocalProtocolError, match="address"):
        parse_address(address)


def test_non_string_is_rejected() -> None:
    with pytest.raises(LocalProtocolError, match="host:port"):
        parse_address(("127.0.0.1", 9876))  # type: ignore[arg-type]


@given(
    st.from_regex(r"[a-z0-9][a-z0-9.-]{0,30}", fullmatch=True),
    st.integers(1, 65535),
)
def test_round_trip(host: str, port: int) -> None:
    assert parse_address(f"{host}:{port}") == (host, port)
