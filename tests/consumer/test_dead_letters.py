"""The library's dead-letter queue (``DeadLetterQueue``), without the CLI in front: a
letter goes back to its topic once unless asked again, and every letter of a re-drive is
checked before the first is sent (issue 33 item 6: the CLI had its own copy of the rule,
so breaking the library's failed no test)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from producer import Producer
from producer.consumer import DeadLetterQueue
from producer.errors import LocalProtocolError
from producer.testing import DevClusterThread
from tests.helpers.dead_letters import dead_letters

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=1, topics={"Orders": 1}) as c:
        yield c


async def test_a_letter_is_re_driven_once_unless_asked_again(cluster: DevClusterThread) -> None:
    first, second = await dead_letters(cluster, [b"one", b"two"])
    namesrv = cluster.namesrv_addr
    async with DeadLetterQueue("cg", namesrv) as dlq, Producer("pg", namesrv) as producer:
        await dlq.redrive(await dlq.find([first]), producer)
        sent = len(cluster.messages("Orders")), len(cluster.messages("%DLQ%cg"))
        letters = await dlq.find([second, first])  # the re-driven one last
        assert [letter.redriven for letter in letters] == [False, True]
        with pytest.raises(LocalProtocolError, match=f"already re-driven: {first};.*again"):
            await dlq.redrive(letters, producer)
        # refused before anything was sent: not even the letter not re-driven yet
        assert (len(cluster.messages("Orders")), len(cluster.messages("%DLQ%cg"))) == sent
        results = await dlq.redrive(letters, producer, again=True)
    assert [r.msg_id for r in results] == [second, first]
    copies = [m.uniq_key for m in cluster.messages("Orders")]
    assert copies.count(first) == 1 + 2 and copies.count(second) == 1 + 1  # sent, re-driven
