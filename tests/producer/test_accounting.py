"""10,000 sends through random faults: every send is accounted for, nothing is lost.

Every send ends in a result or a typed error; every successful msg id is stored; a msg id
is stored more than once only where one of its attempts had an unknown fate (a timeout
after the write, whose request the broker still stored and answered late).
"""

from __future__ import annotations

from collections import Counter

import anyio
import anyio.lowlevel
import pytest

from producer import AttemptOutcome, Message, Producer, SendFuture, SendResult
from producer.errors import Fate, ProducerError
from producer.testing import DevClusterThread, FaultSpec
from tests.producer.conftest import TOPIC, make_producer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

SENDS = 10_000
WORKERS = 64


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_ten_thousand_sends_through_random_faults_are_all_accounted_for(
    cluster: DevClusterThread,
) -> None:
    cluster.set_fault("broker-a", FaultSpec(error_code=14, error_probability=0.05))
    cluster.set_fault("broker-b", FaultSpec(store_status=10, store_status_probability=0.05))
    # now and then an answer comes after the attempt's timeout: the fate-unknown case
    cluster.set_fault("broker-c", FaultSpec(latency_ms=300, latency_probability=0.01))
    futures: list[SendFuture | None] = [None] * SENDS
    outcomes: list[SendResult | ProducerError | None] = [None] * SENDS

    async def worker(first: int, p: Producer) -> None:
        for i in range(first, SENDS, WORKERS):
            future = futures[i] = p.send_async(Message(TOPIC, b"m%d" % i))
            try:
                outcomes[i] = await future
            except ProducerError as exc:
                outcomes[i] = exc

    producer = make_producer(cluster, routing="adaptive", send_timeout_ms=600)
    async with producer as p, anyio.create_task_group() as tg:
        for first in range(WORKERS):
            tg.start_soon(worker, first, p)
    # let late answers for timed-out attempts land before counting the store
    cluster.set_fault("broker-c", FaultSpec())

    results = [o for o in outcomes if isinstance(o, SendResult)]
    errors = [o for o in outcomes if isinstance(o, ProducerError)]
    assert len(results) + len(errors) == SENDS
    stored = Counter(m.uniq_key for m in cluster.messages(TOPIC))
    for result in results:
        assert stored[result.msg_id] >= 1, result
    duplicated = {key for key, n in stored.items() if n > 1}
    unknown = {
        r.msg_id
        for r in results
        if any(
            a.outcome in (AttemptOutcome.TIMEOUT, AttemptOutcome.CONNECTION_LOST)
            for a in r.attempts
        )
    }
    not_store_ok_retries = {r.msg_id for r in results if sum(a.code == 10 for a in r.attempts) > 1}
    assert duplicated <= unknown | not_store_ok_retries
    for future, outcome in zip(futures, outcomes, strict=True):
        assert future is not None
        if isinstance(outcome, ProducerError) and outcome.fate is Fate.NOT_STORED:
            assert stored[future.msg_id] == 0, outcome
    assert len(results) >= SENDS * 0.99
    print(
        f"\n{SENDS} sends: {len(results)} ok, {len(errors)} errors, "
        f"{len(duplicated)} duplicated ids, {len(unknown)} with unknown-fate attempts"
    )
