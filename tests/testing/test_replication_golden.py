"""The dev cluster's slave replays ``tests/golden/ha_slave_494``: the same raw requests
(``ha_probe.py``) get the answers a real 4.9.4 slave gave, with its master alive and after
a SIGKILL of the master (codes, remarks, ext fields; pulled records by queue offset,
commit-log offset difference and store host; the route's broker ids)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from producer.testing import DevCluster
from tests.testing import ha_probe

pytestmark = pytest.mark.anyio

GOLDEN = Path(__file__).parents[1] / "golden" / "ha_slave_494"
TOPIC = "HaSlave"  # the recording's: its length is in every commit-log size


def recorded(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (GOLDEN / name).read_text().splitlines()]


def broker_a_ids(route_answer: dict[str, Any]) -> list[str]:
    brokers = json.loads(route_answer["body"])["brokerDatas"]
    return sorted(next(b for b in brokers if b["brokerName"] == "broker-a")["brokerAddrs"])


def shape(answers: list[dict[str, Any]], master: str) -> list[Any]:
    """What must match: addresses by role, commit-log offsets by difference."""
    shaped: list[Any] = []
    for answer in answers:
        ext = dict(answer["ext"])
        if "msgId" in ext:
            ext["msgId"] = int(ext["msgId"][-16:], 16)
        item = [answer["label"], answer["code"], answer["remark"], ext]
        if answer["label"] == "route":
            item.append(broker_a_ids(answer))
        records = answer.get("records", [])
        if records:
            first = records[0][1]
            item.append([(q, c - first, host == master) for q, c, host in records])
        shaped.append(item)
    sends = [s for s in shaped if s[0] == "send-master"]
    for send in sends[::-1]:  # msg ids by difference from the first
        send[3]["msgId"] -= sends[0][3]["msgId"]
    return shaped


def master_of(answers: list[dict[str, Any]]) -> str:
    brokers = json.loads(answers[0]["body"])["brokerDatas"]
    return next(b for b in brokers if b["brokerName"] == "broker-a")["brokerAddrs"]["0"]


async def test_the_slave_answers_as_a_real_4_9_4_slave() -> None:
    sent, alive, dead = (recorded(f"{n}.jsonl") for n in ("send", "master_alive", "master_dead"))
    real_master = master_of(sent)
    async with DevCluster(brokers=2, topics={TOPIC: 2}, slaves=1) as cluster:
        master = cluster.broker_addr("broker-a")
        ours = await ha_probe.send(cluster.namesrv_addr, TOPIC)
        cluster.tick()
        assert shape(ours, master) == shape(sent, real_master)
        ours = await ha_probe.probe(cluster.namesrv_addr, TOPIC)
        assert shape(ours, master) == shape(alive, real_master)
        await cluster.kill_master("broker-a")
        ours = await ha_probe.probe(cluster.namesrv_addr, TOPIC)
        assert shape(ours, master) == shape(dead, real_master)
