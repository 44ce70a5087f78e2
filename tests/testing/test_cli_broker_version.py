"""``python -m producer cluster --broker-version 5.x``: timed delivery can be tried from the
command line (issue 34: the CLI could start only 4.9.4 brokers)."""

from __future__ import annotations

import argparse
import asyncio
import io
import json

import anyio
import pytest

from producer import Message, Producer
from producer.cli.cluster import add_cluster_arguments, run_cluster
from producer.errors import TimedDeliveryUnsupportedError

pytestmark = pytest.mark.anyio


class Announced(io.StringIO):
    """The cluster's JSON line, once written."""

    def __init__(self) -> None:
        super().__init__()
        self.ready = asyncio.Event()

    def write(self, text: str) -> int:
        if text.strip():
            self.ready.set()
        return super().write(text)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # run_cluster runs on asyncio


@pytest.mark.parametrize("version", ["5.x", "4.9.4"])
async def test_the_cli_cluster_plays_the_broker_version_asked_for(version: str) -> None:
    argv = ["--namesrv-port", "0", "--topic", "Orders:1", "--json", "--broker-version", version]
    args = add_cluster_arguments(argparse.ArgumentParser()).parse_args(argv)
    out, stop = Announced(), asyncio.Event()
    task = asyncio.create_task(run_cluster(args, stop=stop, out=out))
    try:
        with anyio.fail_after(10):
            await out.ready.wait()
        info = json.loads(out.getvalue())
        assert info["broker_version"] == version
        async with Producer("pg", info["namesrv"]) as producer:
            timed = Message("Orders", b"later", delay_ms=60_000)
            if version == "5.x":
                assert (await producer.send(timed)).status.is_ok
            else:
                with pytest.raises(TimedDeliveryUnsupportedError):
                    await producer.send(timed)
    finally:
        stop.set()
        assert await task == 0
