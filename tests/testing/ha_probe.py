"""Raw requests to broker-a's master and slave of a replicated cluster, each answer as one
JSON-ready dict: the recorder of ``tests/golden/ha_slave_494`` (run against a real 4.9.4,
see its README) and the replay ``test_replication_golden.py`` runs on the dev cluster.

``python -m tests.testing.ha_probe NAMESRV TOPIC send|probe`` prints JSON lines.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from producer._remoting.command import RemotingCommand
from producer._remoting.request_codes import RequestCode as Code
from producer._remoting.store_record import decode_records
from tests.testing.rawclient import RawClient, make_request, send_fields

FLAG_COMMIT, FLAG_SUBSCRIPTION = 1, 4


def answer(label: str, response: RemotingCommand) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "label": label,
        "code": response.code,
        "remark": response.remark,
        "ext": dict(response.ext_fields or {}),
    }
    if response.body and label.startswith("pull"):
        found = decode_records(response.body)
        shown["records"] = [[r.queue_offset, r.commit_log_offset, r.store_host] for r in found]
    elif response.body:
        shown["body"] = response.body.decode(errors="replace")
    return shown


def pull(
    topic: str, offset: int, flag: int = FLAG_SUBSCRIPTION, commit: int = 0
) -> RemotingCommand:
    fields = {
        "consumerGroup": f"{topic}G",
        "topic": topic,
        "queueId": "0",
        "queueOffset": str(offset),
        "maxMsgNums": "32",
        "sysFlag": str(flag),
        "commitOffset": str(commit),
        "suspendTimeoutMillis": "0",
        "subscription": "*",
        "subVersion": "0",
        "expressionType": "TAG",
    }
    return make_request(Code.PULL_MESSAGE, fields)


async def route_of(namesrv: str, topic: str) -> tuple[dict[str, Any], dict[str, str]]:
    async with await RawClient.connect(namesrv) as client:
        response = await client.request(make_request(Code.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}))
    route = json.loads(response.body)
    addrs = next(b["brokerAddrs"] for b in route["brokerDatas"] if b["brokerName"] == "broker-a")
    return answer("route", response), addrs


async def send(namesrv: str, topic: str) -> list[dict[str, Any]]:
    """Three messages to broker-a's master, queue 0."""
    shown, addrs = await route_of(namesrv, topic)
    out = [shown]
    async with await RawClient.connect(addrs["0"]) as master:
        for n in range(3):
            props = f"UNIQ_KEY\x01HAPROBE{n:04d}\x02WAIT\x01true"
            command = make_request(
                Code.SEND_MESSAGE_V2, send_fields(topic, 0, properties=props), body=b"hello%d" % n
            )
            out.append(answer("send-master", await master.request(command)))
    return out


async def probe(namesrv: str, topic: str) -> list[dict[str, Any]]:
    """What broker-a's slave answers (and its master, when the route names one)."""
    shown, addrs = await route_of(namesrv, topic)
    out = [shown]
    queue = {"consumerGroup": f"{topic}G", "topic": topic, "queueId": "0"}
    end = {"producerGroup": "G", "tranStateTableOffset": "0", "commitLogOffset": "0"}
    end |= {"commitOrRollback": "8", "fromTransactionCheck": "false", "msgId": "X"}
    back = {"offset": "0", "group": f"{topic}G", "delayLevel": "0", "originMsgId": "X"}
    back |= {"originTopic": topic, "unitMode": "false", "maxReconsumeTimes": "16"}
    steps = [
        ("pull-slave-0", pull(topic, 0)),
        ("pull-slave-max", pull(topic, 3)),
        ("pull-slave-beyond", pull(topic, 10)),
        ("maxoffset-slave", make_request(Code.GET_MAX_OFFSET, {"topic": topic, "queueId": "0"})),
        ("pull-slave-commit", pull(topic, 0, FLAG_SUBSCRIPTION | FLAG_COMMIT, 2)),
        ("query-slave-after-pullcommit", make_request(Code.QUERY_CONSUMER_OFFSET, queue)),
        ("update-slave", make_request(Code.UPDATE_CONSUMER_OFFSET, {**queue, "commitOffset": "1"})),
        ("query-slave", make_request(Code.QUERY_CONSUMER_OFFSET, queue)),
        ("send-slave", make_request(Code.SEND_MESSAGE_V2, send_fields(topic, 0), body=b"x")),
        ("end-tx-slave", make_request(Code.END_TRANSACTION, end)),
        ("sendback-slave", make_request(Code.CONSUMER_SEND_MSG_BACK, back)),
    ]
    async with await RawClient.connect(addrs["1"]) as slave:
        for label, command in steps:
            out.append(answer(label, await slave.request(command)))
    if "0" in addrs:
        async with await RawClient.connect(addrs["0"]) as master:
            out.append(answer("pull-master-0", await master.request(pull(topic, 0))))
            out.append(answer("pull-master-beyond", await master.request(pull(topic, 10))))
    return out


def main(argv: list[str]) -> None:
    namesrv, topic, step = argv
    run = send if step == "send" else probe
    for line in asyncio.run(run(namesrv, topic)):
        print(json.dumps(line))


if __name__ == "__main__":
    main(sys.argv[1:])
