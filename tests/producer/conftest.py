"""Producer tests run against the embedded dev cluster, on asyncio and on trio.

The cluster runs on its own thread (``DevClusterThread``) so the same fixture serves both
event loops; its control methods are synchronous and thread-safe.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from producer import Producer
from producer.testing import DevClusterThread

TOPIC = "T"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def cluster() -> Iterator[DevClusterThread]:
    with DevClusterThread(brokers=3, topics={TOPIC: 4}, seed=0) as c:
        yield c


def make_producer(cluster: DevClusterThread, **options: Any) -> Producer:
    """A producer with routing off and a seeded rng unless a test says otherwise."""
    options.setdefault("routing", "off")
    options.setdefault("rng", random.Random(1))
    return Producer("test-group", cluster.namesrv_addr, **options)


@pytest.fixture(params=[True, False], ids=["batching", "no-batching"])
def batching(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Run the requesting module's tests with transparent batching on and off: its
    ``make_producer`` makes producers with this ``batching`` unless a test says otherwise
    (use it as ``pytest.mark.usefixtures("batching")``)."""

    def make(cluster: DevClusterThread, **options: Any) -> Producer:
        return make_producer(cluster, **{"batching": request.param, **options})

    monkeypatch.setitem(request.module.__dict__, "make_producer", make)
    return bool(request.param)


@pytest.fixture
async def producer(cluster: DevClusterThread) -> AsyncIterator[Producer]:
    async with make_producer(cluster) as p:
        yield p
