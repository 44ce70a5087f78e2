"""Compressed bodies from Java producers (zlib as 4.x and 5.x flag it, LZ4 and zstd from
5.x), end to end on the dev cluster playing either broker version: stored as sent, decoded
for the listener; a body that does not decode is never handed to it, and its offset moves
on only once the message went the retry/DLQ way (README, *Consuming*)."""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import anyio
import pytest

from producer.consumer import ConsumeRetryPolicy, ConsumeStatus, ReceivedMessage
from producer.errors import UndecodableBodyError
from producer.testing import DevClusterThread
from tests.helpers.java_bodies import Seen, committed, java_send, without_lz4_consumer
from tests.helpers.push import FAST_LEVELS, consumer, until
from tests.protocol.java5_vectors import (
    LZ4_BODY,
    LZ4_CONTENT,
    SYS_FLAG_LZ4,
    SYS_FLAG_ZSTD,
    ZSTD_BODY,
    ZSTD_CONTENT,
)

pytestmark = pytest.mark.anyio


ZLIB_CONTENT = LZ4_CONTENT
ZLIB_BODY = zlib.compress(ZLIB_CONTENT, 5)  # java.util.zip.Deflater at compressLevel 5
SYS_FLAG_ZLIB_4X = 0x1  # a 4.x producer: compressed, type bits 0
SYS_FLAG_ZLIB_5X = 0x1 | 0x300  # 769: 5.x names zlib's type
SENT = {  # UNIQ_KEY -> (body as the producer sends it, its sysFlag, the original)
    "ZLIB4": (ZLIB_BODY, SYS_FLAG_ZLIB_4X, ZLIB_CONTENT),
    "ZLIB5": (ZLIB_BODY, SYS_FLAG_ZLIB_5X, ZLIB_CONTENT),
    "LZ4": (LZ4_BODY, SYS_FLAG_LZ4, LZ4_CONTENT),
    "ZSTD": (ZSTD_BODY, SYS_FLAG_ZSTD, ZSTD_CONTENT),
}


@pytest.fixture(params=["4.9.4", "5.x"])
def cluster(request: pytest.FixtureRequest) -> Iterator[DevClusterThread]:
    """The rules hold whichever version the broker plays: neither looks inside a body."""
    with DevClusterThread(
        brokers=1, topics={"Orders": 1}, delay_levels=FAST_LEVELS, broker_version=request.param
    ) as c:
        yield c


async def test_zlib_lz4_and_zstd_bodies_are_stored_as_sent_and_arrive_decoded(
    cluster: DevClusterThread,
) -> None:
    for key, (body, flag, _) in SENT.items():
        java_send(cluster, key, body, flag)
    stored = {m.uniq_key: (m.wire_body, m.sys_flag) for m in cluster.messages("Orders")}
    assert stored == {key: (body, flag) for key, (body, flag, _) in SENT.items()}
    seen = Seen()
    async with consumer(cluster, seen, consume_batch_size=4):
        await until(lambda: len(seen.bodies) == 4 and committed(cluster) == 4)
    assert seen.bodies == {key: content for key, (_, _, content) in SENT.items()}


async def test_corrupt_bodies_are_dead_lettered_never_consumed(
    cluster: DevClusterThread,
) -> None:
    corrupt = {  # no end mark: truncated frames / streams
        "BAD_LZ4": (LZ4_BODY[:-4], SYS_FLAG_LZ4),
        "BAD_ZLIB": (ZLIB_BODY[:-4], SYS_FLAG_ZLIB_4X),
    }
    for key, (body, flag) in corrupt.items():
        java_send(cluster, key, body, flag)
    java_send(cluster, "GOOD", LZ4_BODY, SYS_FLAG_LZ4)
    seen = Seen()
    async with consumer(cluster, seen, consume_batch_size=8):
        await until(lambda: committed(cluster) == 3 and len(cluster.messages("%DLQ%cg")) == 2)
    assert seen.bodies == {"GOOD": LZ4_CONTENT}  # the corrupt ones never reached it
    dead = cluster.messages("%DLQ%cg")  # at once: no retry can mend a corrupt frame
    assert {m.uniq_key: m.reconsume_times for m in dead} == {"BAD_LZ4": 1, "BAD_ZLIB": 1}
    assert {m.uniq_key: (m.wire_body, m.sys_flag) for m in dead} == corrupt  # kept as stored
    assert not cluster.messages("%RETRY%cg")


async def test_without_lz4_an_lz4_body_is_retried_then_dead_lettered(
    cluster: DevClusterThread,
) -> None:
    java_send(cluster, "LZ4", LZ4_BODY, SYS_FLAG_LZ4)
    seen = Seen()
    async with without_lz4_consumer(cluster, seen, max_reconsume_times=1):
        await until(lambda: bool(cluster.messages("%DLQ%cg")))
    assert seen.bodies == {}  # never the raw LZ4 bytes as if they were the message
    assert [m.uniq_key for m in cluster.messages("%RETRY%cg")] == ["LZ4"]  # retried first
    (dead,) = cluster.messages("%DLQ%cg")
    assert (dead.wire_body, dead.sys_flag) == (LZ4_BODY, SYS_FLAG_LZ4)
    assert committed(cluster) == 1


ORDERLY = {"orderly": True, "suspend_current_queue_time_ms": 10}


def refusals(caplog: pytest.LogCaptureFixture) -> int:
    """Deliveries refused for an undecodable body (each logged at ERROR)."""
    return sum("not consumed" in r.getMessage() for r in caplog.records)


async def test_orderly_dead_letters_corrupt_at_once_and_a_missing_codec_at_its_maximum(
    cluster: DevClusterThread, caplog: pytest.LogCaptureFixture
) -> None:
    """As any orderly failure (docs/consuming.md 2.9): retried in place, the queue held,
    until ``max_reconsume_times``; a corrupt body at once, as concurrently."""
    java_send(cluster, "BAD", ZLIB_BODY[:-4], SYS_FLAG_ZLIB_4X)  # corrupt, and known so
    java_send(cluster, "LZ4", LZ4_BODY, SYS_FLAG_LZ4)
    java_send(cluster, "NEXT", ZLIB_BODY, SYS_FLAG_ZLIB_4X)
    refused_before_next: list[int] = []

    def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        refused_before_next.append(refusals(caplog))
        return ConsumeStatus.SUCCESS

    async with without_lz4_consumer(cluster, listener, **ORDERLY, max_reconsume_times=2):
        await until(lambda: committed(cluster) == 3)
    await until(lambda: len(cluster.messages("%DLQ%cg")) == 2)  # after DELAY = 3 + count
    assert refused_before_next == [1 + 3]  # BAD once; LZ4 delivered, then retried twice
    dead = {m.uniq_key: m for m in cluster.messages("%DLQ%cg")}
    assert {key: m.reconsume_times for key, m in dead.items()} == {"BAD": 0, "LZ4": 2}
    assert (dead["LZ4"].wire_body, dead["LZ4"].sys_flag) == (LZ4_BODY, SYS_FLAG_LZ4)


async def test_orderly_holds_the_queue_by_default_until_a_consumer_with_the_codec(
    cluster: DevClusterThread, caplog: pytest.LogCaptureFixture
) -> None:
    """Orderly's maximum is unbounded by default (Java's Integer.MAX_VALUE): the message
    and those after it wait, in order, for a consumer that can read it."""
    java_send(cluster, "LZ4", LZ4_BODY, SYS_FLAG_LZ4)
    java_send(cluster, "NEXT", ZLIB_BODY, SYS_FLAG_ZLIB_4X)
    seen = Seen()
    patient = {"close_timeout_ms": 60_000.0}  # waiting for the retries would take a minute
    with anyio.fail_after(10):  # closing does not wait for the held queue's next retry
        async with without_lz4_consumer(cluster, seen, **ORDERLY, **patient):
            await until(lambda: refusals(caplog) >= 5)
    assert seen.bodies == {} and committed(cluster) == 0
    assert not cluster.messages("%DLQ%cg") and not cluster.messages("%RETRY%cg")
    async with consumer(cluster, seen, **ORDERLY):  # redeployed with [compression]
        await until(lambda: committed(cluster) == 2)
    assert list(seen.bodies.items()) == [("LZ4", LZ4_CONTENT), ("NEXT", ZLIB_CONTENT)]


@pytest.mark.parametrize("orderly", [False, True])
async def test_dead_letter_on_undecodable_sends_a_missing_codec_to_the_dlq_at_once(
    cluster: DevClusterThread, caplog: pytest.LogCaptureFixture, orderly: bool
) -> None:
    """The README's way out of a blocked orderly queue, the same for concurrent."""
    java_send(cluster, "LZ4", LZ4_BODY, SYS_FLAG_LZ4)
    policy = ConsumeRetryPolicy(dead_letter_on=(UndecodableBodyError,))
    options = {**ORDERLY, "orderly": orderly, "retry_policy": policy}
    async with without_lz4_consumer(cluster, Seen(), **options):
        await until(lambda: bool(cluster.messages("%DLQ%cg")) and committed(cluster) == 1)
    assert refusals(caplog) == 1 and not cluster.messages("%RETRY%cg")
    (dead,) = cluster.messages("%DLQ%cg")
    assert (dead.uniq_key, dead.wire_body, dead.sys_flag) == ("LZ4", LZ4_BODY, SYS_FLAG_LZ4)
