"""``python -m producer cluster`` (in process and as a subprocess) and sink mode."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import subprocess
import sys

import anyio
import pytest

from producer._remoting.frame_decoder import decode_frame
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.producer_requests import (
    SendRequestFactory,
    build_send_request,
    max_offset_request,
)
from producer._remoting.request_codes import RequestCode, SerializeType
from producer._remoting.send_header import parse_send_response
from producer._response_codes import ResponseCode
from producer._types.message import Message, MessageQueue
from producer._types.send_status import SendStatus
from producer.cli.cluster import add_cluster_arguments, run_cluster, run_cluster_cli
from producer.testing import DevCluster, FaultSpec
from tests.helpers.cluster_cli import Output
from tests.testing.rawclient import RawClient, make_request, send_fields

pytestmark = pytest.mark.anyio


def parse(argv: list[str]) -> argparse.Namespace:
    return add_cluster_arguments(argparse.ArgumentParser()).parse_args(argv)


async def test_cli_prints_addresses_and_stops_on_request() -> None:
    out, stop = Output(), asyncio.Event()
    args = parse(
        ["--brokers", "3", "--namesrv-port", "0", "--topic", "Orders:4", "--http-port", "0"]
    )
    task = asyncio.create_task(run_cluster(args, stop=stop, out=out))
    with anyio.fail_after(5):
        await out.ready.wait()
    lines = out.getvalue().splitlines()
    assert [line.split()[0] for line in lines] == [
        "namesrv", "broker-a", "broker-b", "broker-c", "http", "ready",
    ]  # fmt: skip
    namesrv = lines[0].split()[1]
    async with await RawClient.connect(namesrv) as client:
        route = make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Orders"})
        assert (await client.request(route)).code == ResponseCode.SUCCESS
    stop.set()
    assert await task == 0


def test_cli_subprocess_json_output_and_clean_sigterm() -> None:
    command = [
        sys.executable,
        "-m",
        "producer",
        "cluster",
        "--namesrv-port",
        "0",
        "--json",
        "--sink",
    ]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None
        info = json.loads(proc.stdout.readline())
        keys = {"namesrv", "brokers", "http", "delay_levels_ms", "broker_version", "slaves"}
        assert set(info) == keys
        assert info["slaves"] == {}
        assert list(info["brokers"]) == ["broker-a", "broker-b", "broker-c"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0


def test_cli_rejects_bad_topics(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run_cluster_cli(["--namesrv-port", "0", "--topic", "Orders"])
    assert exit_info.value.code == 2
    assert "NAME:QUEUES" in capsys.readouterr().err


def test_cli_reports_a_busy_port(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert run_cluster_cli(["--namesrv-port", str(port)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "cannot start" in line and "already in use" in line
    assert "or 0 for any free port" in line


# -- sink -------------------------------------------------------------------------------


@pytest.mark.parametrize("serialize_type", list(SerializeType))
async def test_sink_answers_sends_and_counts_them(serialize_type: SerializeType) -> None:
    factory = SendRequestFactory("Bench")
    single = factory.prepare(Message("Orders", b"x"), "A" * 32)
    batch = factory.prepare_batch([Message("Orders", b"y")] * 5, [f"{i:032X}" for i in range(5)])
    async with DevCluster(brokers=1, topics={"Orders": 4}, sink=True) as cluster:
        async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
            for opaque, prepared in enumerate([single, batch, single], start=100_000):
                request = build_send_request(
                    prepared, MessageQueue("Orders", "broker-a", 1), 1
                ).to_command()
                request.opaque, request.serialize_type = opaque, serialize_type
                response = await client.request(request)
                status, header = parse_send_response(response)
                assert status is SendStatus.SEND_OK and response.serialize_type == serialize_type
                port = cluster.broker_addr("broker-a").rsplit(":", 1)[1]
                assert header.msg_id.startswith(f"{int(port):08X}", 8)
            oneway = build_send_request(
                single, MessageQueue("Orders", "b", 0), 1, oneway=True
            ).to_command()
            oneway.serialize_type = serialize_type
            await client.send(oneway)
            probe = max_offset_request("Orders", 0)
            probe.opaque, probe.serialize_type = 7, serialize_type
            answer = await client.request(probe)
            assert (answer.code, (answer.ext_fields or {}).get("offset")) == (0, "0")
        assert cluster.message_count() == 1 + 5 + 1 + 1
        assert cluster.message_count("Orders") == 8 and cluster.messages() == []
        assert cluster.broker_status("broker-a")["topics"] == {"Orders": 8}


async def test_sink_applies_faults() -> None:
    async with DevCluster(brokers=1, sink=True) as cluster:
        async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
            request = make_request(RequestCode.SEND_MESSAGE_V2, send_fields("T"), body=b"z")
            await cluster.set_fault("broker-a", FaultSpec(error_code=14))
            refused = await client.request(request)
            assert refused.code == 14 and refused.ext_fields == {
                "MSG_REGION": "DefaultRegion",
                "TRACE_ON": "true",
            }
            await cluster.set_fault("broker-a", FaultSpec(store_status=11))
            flushed = await client.request(request)
            assert flushed.code == 11 and "msgId" in (flushed.ext_fields or {})
        assert cluster.message_count() == 1


async def test_sink_answers_a_pipelined_burst() -> None:
    """5000 sends written at once come back as 5000 answers (coalesced writes)."""
    factory = SendRequestFactory("Bench")
    prepared = factory.prepare(Message("Orders", b"x" * 100), "A" * 32)
    frames = []
    for opaque in range(5000):
        request = build_send_request(
            prepared, MessageQueue("Orders", "broker-a", 0), 1
        ).to_command()
        request.opaque = opaque
        frames.append(request)
    data = b"".join(encode_frame(f) for f in frames)
    async with DevCluster(brokers=1, sink=True) as cluster:
        async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
            await client.write(data)
            opaques = [decode_frame(await client.read_raw()).opaque for _ in frames]
        assert sorted(opaques) == list(range(5000))
        assert cluster.message_count() == 5000
