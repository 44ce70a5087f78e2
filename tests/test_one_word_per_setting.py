"""One setting, the words a user brings (issue 34): where a consumer starts is
``earliest``/``latest`` or Java's ``first``/``last`` on both consumers; ``compress_type``
takes Java's ``LZ4``/``ZSTD``/``ZLIB``; a transactional producer sends ordinary messages,
as Java's ``TransactionMQProducer.send`` does. Against the dev cluster."""

from __future__ import annotations

import anyio
import lz4.frame
import pytest

from producer import Message, Producer, TransactionProducer, TransactionState
from producer.consumer import ConsumeStatus, PullConsumer, PushConsumer, ReceivedMessage
from producer.errors import InvalidOptionError
from producer.testing import DevClusterThread

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]
BODY = b'{"order": 1, "lines": []} ' * 400  # over compress_over (4096)


async def _send(cluster: DevClusterThread, bodies: list[bytes]) -> None:
    async with Producer("pg", cluster.namesrv_addr) as producer:
        for body in bodies:
            await producer.send(Message("Orders", body))


@pytest.mark.parametrize("word", ["first", "earliest"])
async def test_pull_consumer_starts_at_the_beginning_in_either_word(word: str) -> None:
    with DevClusterThread(brokers=1, topics={"Orders": 1}) as cluster:
        await _send(cluster, [b"old-1", b"old-2"])
        async with PullConsumer("g", cluster.namesrv_addr, auto_offset_reset=word) as consumer:  # type: ignore[arg-type]
            consumer.assign(await consumer.queues("Orders"))
            got = await consumer.getmany(timeout_ms=5000)
    assert [m.body for batch in got.values() for m in batch] == [b"old-1", b"old-2"]


@pytest.mark.parametrize("word", ["first", "earliest"])
async def test_push_consumer_starts_at_the_beginning_in_either_word(word: str) -> None:
    got: list[bytes] = []
    both = anyio.Event()

    async def listener(messages: list[ReceivedMessage]) -> ConsumeStatus:
        got.extend(m.body for m in messages)
        if len(got) == 2:
            both.set()
        return ConsumeStatus.SUCCESS

    with DevClusterThread(brokers=1, topics={"Orders": 1}) as cluster:
        await _send(cluster, [b"old-1", b"old-2"])
        consumer = PushConsumer("cg", cluster.namesrv_addr, listener=listener, consume_from=word)
        consumer.subscribe("Orders")
        async with consumer:
            with anyio.fail_after(30):  # a hang guard
                await both.wait()
    assert got == [b"old-1", b"old-2"]


def test_an_unknown_start_names_both_vocabularies() -> None:
    for make in (
        lambda: PushConsumer("g", "127.0.0.1:9876", consume_from="beginning"),
        lambda: PullConsumer("g", "127.0.0.1:9876", auto_offset_reset="beginning"),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidOptionError, match=r"'earliest' \(or 'first'\), 'latest'"):
            make()


@pytest.mark.parametrize("spelling", ["LZ4", "Lz4"])
async def test_compress_type_takes_the_java_spelling(spelling: str) -> None:
    with DevClusterThread(brokers=1, topics={"Orders": 1}, broker_version="5.x") as cluster:
        async with Producer("pg", cluster.namesrv_addr, compress_type=spelling) as p:  # type: ignore[arg-type]
            assert p.options.compress_type == "lz4"  # one spelling kept
            await p.send(Message("Orders", BODY))
        (stored,) = cluster.messages("Orders")
    assert stored.sys_flag == 257 and stored.wire_body is not None  # LZ4, as Java 5.3 flags it
    assert lz4.frame.decompress(stored.wire_body) == BODY


def test_compress_type_still_refuses_what_is_no_codec() -> None:
    with pytest.raises(InvalidOptionError, match=r"any case"):
        Producer("pg", "127.0.0.1:9876", compress_type="snappy")  # type: ignore[arg-type]


async def test_a_transactional_producer_sends_an_ordinary_message() -> None:
    def check(message: ReceivedMessage) -> TransactionState:
        return TransactionState.COMMIT

    with DevClusterThread(brokers=1, topics={"Orders": 1}) as cluster:
        async with TransactionProducer(Producer("txg", cluster.namesrv_addr), check=check) as tx:
            result = await tx.send(Message("Orders", b"plain"))
        (stored,) = cluster.messages("Orders")
        assert cluster.open_transactions() == set()  # not a half message
    assert stored.body == b"plain" and stored.properties.get("TRAN_MSG") is None
    assert result.msg_id == stored.properties["UNIQ_KEY"]
