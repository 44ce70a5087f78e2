"""A failing listener's log names the message and what happens next (issue 46 item 3,
docs/consuming.md 2.6): one line per message per attempt - a WARNING while a retry is to
come, an ERROR when the message moves to ``%DLQ%<group>`` - and the traceback once. The
"what next" is the broker's rule (:func:`sent_back_fate`), worked out in one place."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from producer import Message, Producer
from producer._consume.decisions import DeliveryFate, NextStep, sent_back_fate
from producer.consumer import ReceivedMessage
from producer.testing import DevClusterThread
from tests.helpers.push import FAST_LEVELS, consumer, orderly_consumer, until

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.mark.parametrize(
    ("count", "level", "most", "resent", "said"),
    [
        (0, 0, 16, False, "retried in 10 s at delay level 3 (attempt 1 of 17)"),
        (1, 0, 16, False, "retried in 30 s at delay level 4 (attempt 2 of 17)"),
        (15, 0, 16, False, "retried in 7200 s at delay level 18 (attempt 16 of 17)"),
        (16, 0, 16, False, "moved to %DLQ%g (attempt 17 of 17)"),
        (0, 1, 16, False, "retried in 1 s at delay level 1 (attempt 1 of 17)"),
        (0, 40, 16, False, "retried in 7200 s at delay level 18 (attempt 1 of 17)"),  # clamped
        (2, -1, 16, False, "moved to %DLQ%g (attempt 3 of 17)"),  # the listener asked
        (0, 1, 1, False, "retried in 1 s at delay level 1 (attempt 1 of 2)"),
        (0, 1, 1, True, "moved to %DLQ%g (attempt 1 of 2)"),  # the fallback counts one more
        (0, -1, 5, True, "retried in 10 s at delay level 3 (attempt 1 of 6)"),  # level ignored
    ],
)
def test_the_fate_of_a_sent_back_message_is_the_brokers_rule(
    count: int, level: int, most: int, resent: bool, said: str
) -> None:
    assert sent_back_fate(count, level, most, resent=resent).describe("g") == said


def test_local_and_final_fates_say_so() -> None:
    again = DeliveryFate(NextStep.AGAIN_HERE, 3, None, delay_ms=1000)
    assert again.describe("g") == "consumed again here in 1000 ms (attempt 3)"
    assert "broadcasting never retries" in DeliveryFate(NextStep.DROPPED, 1, None).describe("g")


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=1, topics={"Orders": 1}, delay_levels=FAST_LEVELS) as c:
        yield c


def failures(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage().startswith("listener failed on")]


async def fail_until_dead(
    cluster: DevClusterThread, caplog: pytest.LogCaptureFixture, *, orderly: bool
) -> str:
    """One message with key ``order-7`` whose listener always raises, consumed until it
    reaches the DLQ; its msg id."""
    async with Producer("pg", namesrv=cluster.namesrv_addr) as producer:
        sent = await producer.send(Message("Orders", b"x", keys="order-7"))

    def listener(messages: list[ReceivedMessage]) -> None:
        raise ValueError(f"bad order {messages[0].keys[0]}")

    make = orderly_consumer if orderly else consumer
    dlq = "%DLQ%og" if orderly else "%DLQ%cg"
    with caplog.at_level(logging.WARNING, logger="producer.consumer"):
        async with make(cluster, listener, max_reconsume_times=1):
            await until(lambda: bool(cluster.messages(dlq)) and len(failures(caplog)) >= 2)
    return sent.msg_id


@pytest.mark.parametrize("orderly", [False, True], ids=["concurrent", "orderly"])
async def test_each_attempt_says_which_message_and_what_next(
    cluster: DevClusterThread, caplog: pytest.LogCaptureFixture, orderly: bool
) -> None:
    msg_id = await fail_until_dead(cluster, caplog, orderly=orderly)
    first, last = failures(caplog)
    for record, count in ((first, 0), (last, 1)):
        said = record.getMessage()
        assert msg_id in said and "keys order-7" in said, said
        assert f"reconsume_times {count}" in said and "ValueError: bad order order-7" in said
    assert first.levelno == logging.WARNING and last.levelno == logging.ERROR
    group = "og" if orderly else "cg"
    next_time = "consumed again here in 50 ms" if orderly else "retried in 10 s at delay level 3"
    assert first.getMessage().endswith(f"{next_time} (attempt 1 of 2)")
    assert last.getMessage().endswith(f"moved to %DLQ%{group} (attempt 2 of 2)")
    assert first.exc_info is not None and last.exc_info is None  # the traceback once
    assert not [r for r in caplog.records if "listener raised" in r.getMessage()]
