"""The admin probes replayed against the dev cluster, each answer held to the one a real
4.9.4 / 5.2.0 broker and name server gave (``tests/golden/admin/``, recorded by its
``record.py``; README there).

Values a real broker fills in later or from its disk are compared by shape: its
consume-queue reput trails a send by a few ms, so the recorded stats of the just-sent
queue say ``maxOffset`` 0 where the dev store (always up to date) says 1.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from producer._remoting.admin import parse_queue_table
from producer._remoting.command import RemotingCommand
from producer._remoting.frame_decoder import decode_frame
from producer._remoting.request_codes import RequestCode
from producer._remoting.route import quote_legacy_keys
from producer._remoting.store_record import decode_records
from producer._types.message import MessageQueue
from producer.testing import DevCluster
from tests.golden.admin.probes import Probe, probes
from tests.testing.rawclient import RawClient

pytestmark = pytest.mark.anyio

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "admin"
# the first master the recorder spoke to, per recording
RECORDED_BROKER = {
    "4_9_4": ("broker-a", "127.0.0.1:10911"),
    "5_2_0": ("broker5-a", "127.0.0.1:20911"),
}
CLUSTER = {"4_9_4": "DefaultCluster", "5_2_0": "Cluster5"}
# fastjson's exception text (with its own source line numbers) is not reproduced
APPROXIMATE_REMARKS = {"sub_group_bad_body": "com.alibaba.fastjson.JSONException"}


@dataclass
class Exchange:
    probe: Probe
    golden: RemotingCommand
    dev: RemotingCommand
    golden_body: str
    dev_body: str


async def _replay(run: str) -> dict[str, Exchange]:
    v5 = run == "5_2_0"
    cluster = DevCluster(
        brokers=1 if v5 else 2,
        cluster_name=CLUSTER[run],
        broker_version="5.x" if v5 else "4.9.4",
    )
    recorded_name, recorded_addr = RECORDED_BROKER[run]
    exchanges = {}
    async with cluster:
        addr = cluster.broker_addr("broker-a")
        namesrv = await RawClient.connect(cluster.namesrv_addr)
        broker = await RawClient.connect(addr)
        context = {"cluster": CLUSTER[run], "broker_name": "broker-a", "broker_addr": addr}
        try:
            for number, probe in enumerate(probes(v5=v5), 1):
                request = probe.command(context)
                request.opaque = number
                dev = await (namesrv if probe.target == "namesrv" else broker).answer(request)
                probe.learn(dev, context)
                raw = (GOLDEN / run / f"{number:02d}_{probe.name}.response.bin").read_bytes()
                golden = decode_frame(raw)
                text = golden.body.decode("utf-8", "replace")
                text = text.replace(recorded_addr, addr).replace(recorded_name, "broker-a")
                exchanges[probe.name] = Exchange(
                    probe, golden, dev, text, dev.body.decode("utf-8", "replace")
                )
        finally:
            await namesrv.close()
            await broker.close()
    return exchanges


@pytest.fixture(scope="module", params=["4_9_4", "5_2_0"])
def run(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def exchanges(run: str) -> dict[str, Exchange]:
    return await _replay(run)


def _json(text: str) -> Any:
    return json.loads(quote_legacy_keys(text.encode()))


async def test_every_probe_gets_the_recorded_code_and_remark(
    exchanges: dict[str, Exchange],
) -> None:
    for name, ex in exchanges.items():
        if ex.probe.code in (RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.SEND_MESSAGE_V2):
            continue  # not admin requests; held to the recordings by test_golden_replay
        if name in APPROXIMATE_REMARKS:
            assert ex.dev.code == ex.golden.code, name
            assert ex.golden.remark and ex.golden.remark.startswith(APPROXIMATE_REMARKS[name])
            continue
        assert (ex.dev.code, ex.dev.remark) == (ex.golden.code, ex.golden.remark), name


async def test_the_order_conf_is_kept_as_the_real_name_server_keeps_it(
    exchanges: dict[str, Exchange],
) -> None:
    got = exchanges["kv_get"]
    assert got.dev.ext_fields == got.golden.ext_fields == {"value": "b:4"}


async def test_cluster_info_is_the_real_body_without_the_slaves(
    exchanges: dict[str, Exchange],
) -> None:
    ex = exchanges["cluster_info"]
    # the recording's groups have a slave (id 1) each; the dev cluster has masters only
    expected = re.sub(r',1:"[0-9.:]+"', "", ex.golden_body)
    assert _addresses_out(ex.dev_body) == _addresses_out(expected)


def _addresses_out(text: str) -> str:
    return re.sub(r"127\.0\.0\.1:\d+", "ADDR", text)


async def test_topic_lists_are_fastjson_topic_lists(exchanges: dict[str, Exchange]) -> None:
    for name in ("topic_list", "topics_by_cluster"):
        ex = exchanges[name]
        assert list(_json(ex.dev_body)) == list(_json(ex.golden_body)) == ["topicList"]
        assert "AdminProbeTopic" in _json(ex.dev_body)["topicList"]


async def test_topic_stats_are_the_real_table(exchanges: dict[str, Exchange], run: str) -> None:
    ex = exchanges["topic_stats"]
    dev, real = parse_queue_table(ex.dev_body.encode()), parse_queue_table(ex.golden_body.encode())
    if run == "4_9_4":  # same broker name: the HashMap order must be the real one
        assert [q for q, _ in dev] == [q for q, _ in real]
    assert sorted(q.queue_id for q, _ in dev) == sorted(q.queue_id for q, _ in real)
    for (queue, line), (_, real_line) in zip(_by_queue(dev), _by_queue(real), strict=True):
        assert list(line) == list(real_line)
        if queue.queue_id == 1:  # the probe's message; the real reput had not caught up
            assert line["maxOffset"] == 1 and line["lastUpdateTimestamp"] > 0
        else:
            assert line == real_line


async def test_consume_stats_are_the_real_table(exchanges: dict[str, Exchange], run: str) -> None:
    for name in ("consume_stats", "consume_stats_any_topic"):
        ex = exchanges[name]
        dev_json, real_json = _json(_queue_keys(ex.dev_body)), _json(_queue_keys(ex.golden_body))
        assert list(dev_json) == list(real_json) == ["consumeTps", "offsetTable"]
        dev, real = (
            parse_queue_table(ex.dev_body.encode()),
            parse_queue_table(ex.golden_body.encode()),
        )
        if run == "4_9_4":
            assert [q for q, _ in dev] == [q for q, _ in real]
        for (queue, line), (_, real_line) in zip(_by_queue(dev), _by_queue(real), strict=True):
            assert list(line) == list(real_line), name  # 5.x adds pullOffset
            assert line["consumerOffset"] == real_line["consumerOffset"]
            assert (line["lastTimestamp"] > 0) == (queue.queue_id == 1)


def _by_queue(table: list[tuple[MessageQueue, dict[str, Any]]]) -> list[tuple[MessageQueue, Any]]:
    return sorted(table, key=lambda pair: pair[0].queue_id)


def _queue_keys(text: str) -> str:
    return re.sub(r'\{"brokerName[^}]*\}:', '"Q":', text)


async def test_the_connection_list_echoes_the_heartbeat(exchanges: dict[str, Exchange]) -> None:
    ex = exchanges["connections"]
    dev = re.sub(r'"clientAddr":"[^"]*"', '"clientAddr":"A"', ex.dev_body)
    assert dev == re.sub(r'"clientAddr":"[^"]*"', '"clientAddr":"A"', ex.golden_body)


async def test_runtime_info_has_the_real_keys_clusterlist_reads(
    exchanges: dict[str, Exchange], run: str
) -> None:
    dev = _json(exchanges["runtime_info"].dev_body)["table"]
    real = _json(exchanges["runtime_info"].golden_body)["table"]
    assert set(dev) <= set(real)
    read_by_cluster_list = {"putTps", "sendThreadPoolQueueSize", "pullThreadPoolQueueSize"}
    read_by_cluster_list |= {"brokerVersionDesc", "earliestMessageTimeStamp", "commitLogDiskRatio"}
    read_by_cluster_list |= {"getTransferedTps" if run == "4_9_4" else "getTransferredTps"}
    assert read_by_cluster_list <= set(dev)
    assert dev["brokerVersionDesc"] == ("V4_9_4" if run == "4_9_4" else "V5_3_3")
    assert dev["msgPutTotalTodayNow"] == "1"


async def test_view_by_id_answers_the_stored_record(exchanges: dict[str, Exchange]) -> None:
    ex = exchanges["view_by_id"]
    [dev] = decode_records(ex.dev.body)
    [real] = decode_records(ex.golden.body)
    assert (dev.topic, dev.queue_id, dev.queue_offset, dev.body) == (
        real.topic,
        real.queue_id,
        real.queue_offset,
        real.body,
    )
    assert {k: real.properties[k] for k in ("KEYS", "UNIQ_KEY", "CLUSTER")} == {
        k: dev.properties[k] for k in ("KEYS", "UNIQ_KEY", "CLUSTER")
    }


async def test_assignments_are_the_real_ones(exchanges: dict[str, Exchange], run: str) -> None:
    if run != "5_2_0":
        for name, ex in exchanges.items():  # a 4.9.4 broker does not know them
            assert ex.probe.code not in (RequestCode.QUERY_ASSIGNMENT, 401), name
        return
    for name in ("assignment_default", "assignment_pop"):
        dev = _json(exchanges[name].dev_body)["messageQueueAssignments"]
        real = _json(exchanges[name].golden_body)["messageQueueAssignments"]
        key = json.dumps
        assert sorted(map(key, dev)) == sorted(map(key, real)), name
