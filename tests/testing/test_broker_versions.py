"""``DevCluster(broker_version=...)``: the version code in every answer, and 5.x's timer on
single sends (ignored inside batches), on the cluster's injectable clock."""

from __future__ import annotations

import pytest

from producer._remoting.message_codec import BatchItem, encode_batch
from producer._remoting.request_codes import RequestCode
from producer.testing import DevCluster
from tests.testing.rawclient import RawClient, make_request, send_fields

pytestmark = pytest.mark.anyio
NOW = 1_800_000_000_000


def timed_send(properties: str) -> object:
    return make_request(
        RequestCode.SEND_MESSAGE_V2,
        send_fields("Orders", properties=f"UNIQ_KEY\x01K\x02{properties}"),
        body=b"t",
    )


@pytest.mark.parametrize(("version", "code"), [("4.9.4", 401), ("5.x", 479)])
async def test_every_answer_carries_the_broker_version(version: str, code: int) -> None:
    async with DevCluster(brokers=1, topics={"Orders": 1}, broker_version=version) as cluster:
        async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
            sent = await client.request(timed_send("TIMER_DELAY_MS\x011000"))
            probe = await client.request(
                make_request(RequestCode.GET_MAX_OFFSET, {"topic": "Orders", "queueId": "0"})
            )
        assert sent.version == probe.version == code
        # 4.9.4 has no timer: stored for delivery at once; 5.x holds it.
        assert cluster.message_count("Orders") == (1 if version == "4.9.4" else 0)


async def test_5x_timer_single_sends_wait_batches_do_not() -> None:
    now = [NOW]
    async with DevCluster(
        brokers=1, topics={"Orders": 1}, broker_version="5.x", clock_ms=lambda: now[0]
    ) as cluster:
        async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
            for props in ("TIMER_DELAY_SEC\x012", f"TIMER_DELIVER_MS\x01{NOW + 1000}"):
                assert (await client.request(timed_send(props))).code == 0
            too_far = await client.request(timed_send(f"TIMER_DELAY_SEC\x01{3 * 86400 + 1}"))
            assert too_far.code == 13 and "timer message illegal" in (too_far.remark or "")
            body = encode_batch([BatchItem(0, b"b", "UNIQ_KEY\x01B\x02TIMER_DELAY_SEC\x0160")])
            fields = send_fields("Orders", batch=True, properties="WAIT\x01true")
            batch = make_request(RequestCode.SEND_BATCH_MESSAGE, fields, body=body)
            assert (await client.request(batch)).code == 0
        assert [m.uniq_key for m in cluster.messages("Orders")] == ["B"]  # batch: at once
        now[0] = NOW + 1000
        cluster.tick()
        assert [m.body for m in cluster.messages("Orders")] == [b"b", b"t"]
        now[0] = NOW + 1999
        cluster.tick()
        assert len(cluster.messages("Orders")) == 2
        now[0] = NOW + 2000
        cluster.tick()
        delivered = cluster.messages("Orders")[2]
        assert delivered.properties["TIMER_OUT_MS"] == str(NOW + 2000)
        assert "REAL_TOPIC" not in delivered.properties


@pytest.mark.parametrize("version", ["4.9.4", "5.x"])
async def test_timer_properties_inside_a_batch_are_stored_for_now(version: str) -> None:
    """5.x's timer looks at single sends only (``HookUtils.handleScheduleMessage`` skips
    batches); 4.9.4 has no timer at all: either way the batch is deliverable at once."""
    properties = ("TIMER_DELAY_SEC\x0160", f"TIMER_DELIVER_MS\x01{NOW + 60_000}")
    items = [BatchItem(0, b"b%d" % i, f"UNIQ_KEY\x01B{i}\x02{p}") for i, p in enumerate(properties)]
    fields = send_fields("Orders", batch=True, properties="WAIT\x01true")
    batch = make_request(RequestCode.SEND_BATCH_MESSAGE, fields, body=encode_batch(items))
    async with DevCluster(
        brokers=1, topics={"Orders": 1}, broker_version=version, clock_ms=lambda: NOW
    ) as cluster:
        async with await RawClient.connect(cluster.broker_addr("broker-a")) as client:
            assert (await client.request(batch)).code == 0
        assert [m.uniq_key for m in cluster.messages("Orders")] == ["B0", "B1"]
        assert cluster.messages() == cluster.messages("Orders")  # nothing in a timer topic
