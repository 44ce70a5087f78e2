"""TLS to name servers and brokers, against a dev cluster serving TLS with a certificate
made at start (issue 14 item 2). Refusals are prompt, typed TlsErrors, never hangs."""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator

import pytest
import trustme

from producer import Message, Producer, SendResult
from producer.errors import ConnectError, InvalidOptionError, ProducerError, TlsError
from producer.testing import DevClusterThread
from tests.producer.conftest import TOPIC, make_producer

pytestmark = pytest.mark.anyio

BUDGET_MS = 2000


@pytest.fixture(scope="module")
def tls_cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=2, topics={TOPIC: 4}, seed=0, tls=True) as c:
        yield c


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:  # plaintext, for the mismatch cases
    with DevClusterThread(brokers=2, topics={TOPIC: 4}, seed=0) as c:
        yield c


async def test_sends_over_tls(tls_cluster: DevClusterThread) -> None:
    async with make_producer(tls_cluster, ssl=tls_cluster.client_ssl_context()) as p:
        results = [await p.send(Message(TOPIC, b"tls")) for _ in range(4)]
        results += [await f for f in [p.send_async(Message(TOPIC, b"a")) for _ in range(8)]]
    assert all(isinstance(r, SendResult) for r in results)
    assert {r.queue.broker_name for r in results} == {"broker-a", "broker-b"}


async def _failure(p: Producer) -> tuple[ProducerError, float]:
    started = time.monotonic()
    with pytest.raises(ProducerError) as info:
        await p.send(Message(TOPIC, b"x"), timeout_ms=BUDGET_MS)
    return info.value, (time.monotonic() - started) * 1000


async def test_a_certificate_from_an_unknown_ca_is_a_prompt_tls_error(
    tls_cluster: DevClusterThread,
) -> None:
    stranger = ssl.create_default_context()
    trustme.CA().configure_trust(stranger)  # trusts some other CA only
    async with make_producer(tls_cluster, ssl=stranger) as p:
        error, elapsed_ms = await _failure(p)
    assert isinstance(error, ConnectError)  # the name server lookup: NameServerError
    assert "certificate" in str(error) and "trusts the server's CA" in str(error)
    assert elapsed_ms < BUDGET_MS / 2


async def test_ssl_true_verifies_the_certificate_against_the_system_cas(
    tls_cluster: DevClusterThread,
) -> None:
    """``ssl=True`` is the system's trusted CAs with hostnames checked: the dev cluster's
    throwaway CA is not among them, so the handshake is refused, never waved through."""
    stored = len(tls_cluster.unique_msg_ids(TOPIC))
    async with make_producer(tls_cluster, ssl=True) as p:
        error, elapsed_ms = await _failure(p)
    assert isinstance(error, ConnectError)  # the name server lookup: NameServerError
    assert isinstance(error.__cause__, TlsError)  # the handshake itself failed
    assert "certificate was refused (unable to get local issuer" in str(error)
    assert len(tls_cluster.unique_msg_ids(TOPIC)) == stored  # nothing got through
    assert elapsed_ms < BUDGET_MS / 2


async def test_a_certificate_for_another_name_is_a_tls_error() -> None:
    ca = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("other.example").configure_cert(server)
    client = ssl.create_default_context()
    ca.configure_trust(client)  # the CA is trusted: only the name is wrong
    with DevClusterThread(brokers=1, topics={TOPIC: 4}, tls=server) as elsewhere:
        async with make_producer(elsewhere, ssl=client) as p:
            error, elapsed_ms = await _failure(p)
    assert isinstance(error, ConnectError)
    assert "certificate" in str(error) and "mismatch" in str(error)
    assert elapsed_ms < BUDGET_MS / 2


async def test_tls_against_a_plaintext_server_fails_clearly_within_the_budget(
    cluster: DevClusterThread,
) -> None:
    async with make_producer(cluster, ssl=True, connect_timeout_ms=500) as p:
        error, elapsed_ms = await _failure(p)
    text = str(error)
    assert "does the server speak TLS" in text or "TLS handshake included" in text
    assert elapsed_ms < BUDGET_MS + 200


async def test_plaintext_against_a_tls_server_fails_within_the_budget(
    tls_cluster: DevClusterThread,
) -> None:
    async with make_producer(tls_cluster) as p:
        error, elapsed_ms = await _failure(p)
    assert isinstance(error, (ConnectError, TimeoutError))
    assert elapsed_ms < BUDGET_MS + 200


@pytest.mark.parametrize("bad", ["yes", 1, object()])
def test_ssl_accepts_only_bools_and_contexts(bad: object) -> None:
    with pytest.raises(InvalidOptionError, match="ssl must be None, False, True or an ssl"):
        Producer("g", "127.0.0.1:9876", ssl=bad)  # type: ignore[arg-type]


def test_a_tls_error_is_a_connect_error() -> None:
    assert issubclass(TlsError, ConnectError)
