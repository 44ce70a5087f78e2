"""ACL end to end: a producer with credentials against a dev cluster that enforces ACL
as a 4.9.4 broker does; refusals are AclError at once, never retried (issue 14 item 1)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from producer import Credentials, Message, SendResult
from producer.errors import AclError, Fate
from producer.testing import Account, DevClusterThread
from tests.producer.conftest import TOPIC, make_producer

pytestmark = pytest.mark.anyio

DENIED = "Secret"
ACCOUNTS = [
    Account("writer", "writer-secret", topic_perms={DENIED: "DENY"}, default_topic_perm="PUB"),
]
SIGNED = Credentials("writer", "writer-secret")


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=3, topics={TOPIC: 4, DENIED: 4}, seed=0, acl=ACCOUNTS) as c:
        yield c


async def test_every_kind_of_send_is_signed_and_accepted(cluster: DevClusterThread) -> None:
    async with make_producer(cluster, credentials=SIGNED) as p:
        results: list[Any] = [await p.send(Message(TOPIC, b"sync"))]
        results.append(await p.send_async(Message(TOPIC, b"async")))
        await p.send_oneway(Message(TOPIC, b"oneway"))
        results.append(await p.send_batch([Message(TOPIC, b"b1"), Message(TOPIC, b"b2")]))
        results += [await f for f in [p.send_async(Message(TOPIC, b"auto")) for _ in range(5)]]
        results.append(await p.send(Message(TOPIC, b"keyed"), order_key="k"))
        with anyio.fail_after(5):
            # the oneway send has no answer to wait for, and the cluster's thread no event
            while cluster.message_count(TOPIC) < 11:  # noqa: ASYNC110
                await anyio.sleep(0.01)
    assert all(isinstance(r, SendResult) for r in results)
    assert cluster.message_count(TOPIC) == 11


async def test_heartbeats_are_signed_too(cluster: DevClusterThread) -> None:
    async with make_producer(cluster, credentials=SIGNED, heartbeat_interval_ms=50) as p:
        await p.send(Message(TOPIC, b"x"))
        with anyio.fail_after(5):
            # the first heartbeat is timer-driven, and the cluster's thread has no event
            while not any(p.client_id in cluster.clients(b) for b in cluster.broker_names):  # noqa: ASYNC110
                await anyio.sleep(0.01)


@pytest.mark.parametrize(
    ("credentials", "remark"),
    [
        (None, "No accessKey is configured"),
        (Credentials("stranger", "x"), "No acl config for stranger"),
        (Credentials("writer", "wrong-secret"), "Check signature failed for accessKey=writer"),
    ],
    ids=["unsigned", "unknown-key", "wrong-secret"],
)
async def test_a_refused_request_is_an_acl_error_after_one_attempt(
    cluster: DevClusterThread, credentials: Credentials | None, remark: str
) -> None:
    async with make_producer(cluster, credentials=credentials) as p:
        with pytest.raises(AclError) as info:
            await p.send(Message(TOPIC, b"x"))
    error = info.value
    assert remark in str(error) and "AclException" in str(error)
    assert error.code == 1 and error.fate is Fate.NOT_STORED
    assert len(error.attempts) == 1
    assert cluster.message_count(TOPIC) == 0


async def test_a_denied_topic_is_an_acl_error(cluster: DevClusterThread) -> None:
    async with make_producer(cluster, credentials=SIGNED) as p:
        with pytest.raises(AclError, match=f"No default permission for topic:{DENIED}") as info:
            await p.send(Message(DENIED, b"x"))
        future = p.send_async(Message(DENIED, b"y"))
        with pytest.raises(AclError):
            await future
    assert len(info.value.attempts) == 1
    assert len(future.exception().attempts) == 1  # type: ignore[union-attr]
    assert cluster.message_count(DENIED) == 0


async def test_a_4_9_4_broker_checks_no_topic_permission_on_batches(
    cluster: DevClusterThread,
) -> None:
    # SEND_BATCH_MESSAGE is not in 4.9.4's PlainAccessValidator list: signature only.
    async with make_producer(cluster, credentials=SIGNED) as p:
        result = await p.send_batch([Message(DENIED, b"1"), Message(DENIED, b"2")])
    assert len(result.msg_ids) == 2
    assert cluster.message_count(DENIED) == 2


def test_credentials_must_be_credentials() -> None:
    from producer import Producer
    from producer.errors import InvalidOptionError

    with pytest.raises(InvalidOptionError, match=r"producer\.Credentials"):
        Producer("g", "127.0.0.1:9876", credentials=("ak", "sk"))  # type: ignore[arg-type]
