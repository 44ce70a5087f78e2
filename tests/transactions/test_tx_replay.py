"""Replay of the recorded transaction session's producer frames (1-195) against the dev
cluster: the Java producers' broker frames (connections c4, c6, c8: scenarios S1-S8)
written byte for byte, one connection per captured one, on a clock that follows the
capture's, and every frame the broker sent on them compared with the dev broker's.

Compared:
* every response (half sends, heartbeats, UNREGISTER_CLIENT): code, flag, remark, body
  and ext fields; a send's ``queueOffset`` (the half queue's offset) exactly, its
  ``msgId`` by commit-log offset (shifted by where the dev broker's commit log stands
  at the first half; the store host differs);
* every CHECK_TRANSACTION_STATE, at the step where the real broker sent it and on the
  connection it used (S6's went to producer B): code, flag, the five header fields
  (``commitLogOffset`` and ``offsetMsgId`` by shifted offset), and the body decoded as
  a stored message - every field but the store time, store host and born host (the
  replay's own), the commit-log offset shifted; no check more, none fewer, none earlier
  than the real broker's (a check the capture lacks fails the connection's close);
* S5's discard after three checks: its record in ``TRANS_CHECK_MAX_TIME_TOPIC``.

Not compared: the name server's and the consumer's frames (c1-c3, c5, c7: routes, pulls,
offsets; the consumer session replay covers those answers), the probe frames 196-267
(``test_tx_golden``), the broker's opaques for its checks (its own counter), what the
consumer received, the END_TRANSACTIONs' effect beyond the checks that follow (S5's
discard aside; ``test_tx_golden`` compares the probes' answers).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import anyio
import pytest

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_decoder import decode_frame
from producer._remoting.request_codes import RequestCode
from producer._remoting.store_record import StoreRecord, decode_records
from producer.testing import DevCluster, TransactionConfig
from tests.testing.consumer_session import SessionReplay
from tests.transactions.tx_session import frames, offset_of, raw

pytestmark = pytest.mark.anyio

PRODUCER_CONNECTIONS = frozenset({4, 6, 8})  # main producer, orphan A, orphan B (broker)
LAST_JAVA_FRAME = 195
# The capture's check rounds came every 1001 ms (the service's 1000 ms wait plus the
# round's own millisecond), the first at 30.155 s past :00 (frame 62); the replay runs
# them 5 ms earlier (the drift stays under 10 ms), so each falls before the frame
# where the real broker's check was captured and after the half is 1000 ms old.
ROUND_MS = 1001
FIRST_ROUND_MS = 1_795_636_530_155 - 5
CONFIG = TransactionConfig(timeout_ms=1000, interval_ms=ROUND_MS, check_max=3)
S5_UNIQ_KEY = "C00002021A485FFD2B277FDF3F770004"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # DevCluster itself, on the test's loop


class Clock:
    """The brokers' clock: the capture's time, with a check round at every round time."""

    def __init__(self, first_frame_ms: int) -> None:
        behind = (FIRST_ROUND_MS - first_frame_ms) // ROUND_MS + 1
        self.ms = FIRST_ROUND_MS - behind * ROUND_MS  # a round time before everything
        self.next_round = self.ms + ROUND_MS  # as the dev broker schedules it

    def __call__(self) -> int:
        return self.ms

    def advance(self, cluster: DevCluster, to_ms: int) -> None:
        while self.next_round <= to_ms:  # every round time on the way, in turn
            self.ms = self.next_round
            self.next_round += ROUND_MS
            cluster.tick()
        self.ms = max(self.ms, to_ms)
        cluster.tick()


def comparable(record: StoreRecord, shift: int) -> dict[str, Any]:
    """The replay's own aside: the store time, the store host, the born host."""
    moved = dataclasses.replace(
        record,
        commit_log_offset=record.commit_log_offset + shift,
        store_timestamp=0,
        store_host="",
        born_host="",
    )
    return dataclasses.asdict(moved)


def same_answer(seq: int, ours: RemotingCommand, golden: RemotingCommand, shift: int) -> None:
    where = f"frame {seq}"
    assert (ours.code, ours.flag, ours.remark) == (golden.code, golden.flag, golden.remark), where
    mine, real = dict(ours.ext_fields or {}), dict(golden.ext_fields or {})
    for name in ("msgId", "commitLogOffset", "offsetMsgId"):
        if name not in real:
            continue
        if name == "msgId" and golden.code == RequestCode.CHECK_TRANSACTION_STATE:
            continue  # there it is the UNIQ_KEY, compared as it is
        value = mine.pop(name)
        theirs = real.pop(name)
        assert (offset_of(value) if name != "commitLogOffset" else int(value)) == (
            offset_of(theirs) if name != "commitLogOffset" else int(theirs)
        ) + shift, (where, name)
    assert mine == real, where
    if golden.code == RequestCode.CHECK_TRANSACTION_STATE:
        assert [comparable(r, 0) for r in decode_records(ours.body or b"")] == [
            comparable(r, shift) for r in decode_records(golden.body or b"")
        ], where
    else:
        assert (ours.body or b"") == (golden.body or b""), where


async def test_the_dev_broker_answers_and_checks_the_java_producers_as_the_real_one() -> None:
    captured = frames()
    order = [
        seq
        for seq in sorted(captured)
        if seq <= LAST_JAVA_FRAME and captured[seq]["conn"] in PRODUCER_CONNECTIONS
    ]
    clock = Clock(int(captured[order[0]]["t"] * 1000))
    async with DevCluster(
        brokers=1,
        cluster_name="DefaultCluster",
        topics={"TxTopic": 4},
        clock_ms=clock,
        transactions=CONFIG,
    ) as cluster:
        replay = SessionReplay(cluster, captured, order, (0, 0))
        shift: int | None = None
        checks = 0
        try:
            for seq in order:
                frame = captured[seq]
                clock.advance(cluster, int(frame["t"] * 1000))
                if frame["dir"] == "c2s":
                    await (await replay.connection(frame)).write(raw(frame))
                    await replay.processed(frame)  # read before the clock moves on
                else:
                    golden = decode_frame(raw(frame))
                    with anyio.fail_after(5):
                        ours = await replay.answer(frame, golden)
                    if shift is None and "msgId" in (golden.ext_fields or {}):
                        shift = offset_of(ours.ext_fields["msgId"])  # type: ignore[index]
                        shift -= offset_of(golden.ext_fields["msgId"])  # type: ignore[index]
                    same_answer(seq, ours, golden, shift or 0)
                    checks += golden.code == RequestCode.CHECK_TRANSACTION_STATE
                    replay.compared += 1
                await replay.close_finished(seq, frame["conn"])
        finally:
            await replay.aclose()
        dropped = cluster.messages("TRANS_CHECK_MAX_TIME_TOPIC")
    assert checks == 9 and replay.compared == 26  # every broker frame on c4, c6 and c8
    (s5,) = dropped  # S5, after its three checks; nothing else was given up on
    assert s5.uniq_key == S5_UNIQ_KEY and s5.sys_flag == 0
    assert {k: s5.properties[k] for k in ("TRANSACTION_CHECK_TIMES", "REAL_QID", "PGROUP")} == {
        "TRANSACTION_CHECK_TIMES": "3",
        "REAL_QID": "2",
        "PGROUP": "TxProducerGroup",
    }
