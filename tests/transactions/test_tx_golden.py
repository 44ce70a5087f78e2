"""The client's transaction frames against the recorded Java 4.9.4 frames, and the dev
broker's answers to the recorded END_TRANSACTION probes (frames 204-233).

Compared: the half send's V2 header fields (sysFlag 4, the properties map with TRAN_MSG and
PGROUP), every END_TRANSACTION field and value after a local transaction and after a check
(S1-S8), the remarks' prefixes, the parsing of every CHECK_TRANSACTION_STATE the broker sent;
the dev broker's code, flag, remark and ext fields for every probe (commit-log and queue
offsets shifted to where the dev broker stored the probe's halves), the unanswered state-0
probes, and the duplicates a repeated commit stores. Not compared: the Java client's own
session timing (check rounds' phase), property order inside frames (Java's HashMap order),
the broker's opaques. The dev broker's answers and CHECK_TRANSACTION_STATE frames against
the recorded ones at frames 1-195: :mod:`tests.transactions.test_tx_replay`.
"""

from __future__ import annotations

import pytest

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_decoder import decode_frame
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.producer_requests import SendRequestFactory, build_send_request
from producer._remoting.properties import decode_properties
from producer._remoting.request_codes import RequestCode
from producer._remoting.transaction import (
    CHECK_FAILED_REMARK,
    EXECUTE_FAILED_REMARK,
    end_after_check,
    end_after_send,
    end_transaction_request,
    half_message,
    parse_check_request,
)
from producer._response_codes import ResponseCode
from producer._types.message import Message, MessageQueue
from producer._types.transaction_state import TransactionState
from producer.testing import DevCluster, TransactionConfig
from tests.testing.rawclient import RawClient
from tests.transactions.tx_session import command, frames, offset_of, raw

# (half send, its answer, END after execute, [(CHECK, END after it)]) per scenario S1-S8
SCENARIOS = {
    "S1": (51, 52, 53, []),
    "S2": (56, 57, 58, []),
    "S3": (59, 60, 61, [(62, 63)]),
    "S4": (71, 72, 73, [(74, 75)]),
    "S5": (81, 82, 83, [(90, 91), (92, 93), (94, 95)]),
    "S7": (156, 157, 158, [(161, 162), (163, 164)]),
    "S8": (172, 173, 174, [(175, 176)]),
}


def java_half(seq: int) -> tuple[dict[str, str], dict[str, str], bytes]:
    request = command(seq)
    fields = dict(request.ext_fields or {})
    return fields, decode_properties(fields.pop("i")), request.body


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_half_send_is_javas(scenario: str) -> None:
    send, _, _, _ = SCENARIOS[scenario]
    fields, props, body = java_half(send)
    user = {k: v for k, v in props.items() if k not in {"KEYS", "TAGS", "UNIQ_KEY", "WAIT"}}
    user = {k: v for k, v in user.items() if k not in {"TRAN_MSG", "PGROUP"}}
    message = Message(fields["b"], body, tags=props["TAGS"], keys=props["KEYS"], properties=user)
    factory = SendRequestFactory(fields["a"])
    prepared = half_message(factory.prepare(message, props["UNIQ_KEY"]), fields["a"])
    queue = MessageQueue(fields["b"], "broker-a", int(fields["e"]))
    ours = build_send_request(prepared, queue, int(fields["g"])).to_command()
    our_fields = dict(ours.ext_fields or {})
    assert decode_properties(our_fields.pop("i")) == props  # TRAN_MSG=true, PGROUP=<group>
    assert our_fields == fields  # f (sysFlag) is "4": TRANSACTION_PREPARED_TYPE
    assert (ours.code, ours.body) == (RequestCode.SEND_MESSAGE_V2, body)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_end_transaction_after_execute_is_javas(scenario: str) -> None:
    send, answer, end_seq, _ = SCENARIOS[scenario]
    java = command(end_seq)
    fields = java.ext_fields or {}
    response = command(answer).ext_fields or {}
    end = end_after_send(
        fields["producerGroup"],
        TransactionState(int(fields["commitOrRollback"])),
        queue_offset=int(response["queueOffset"]),
        offset_msg_id=response["msgId"],
        msg_id=decode_properties(command(send).ext_fields["i"])["UNIQ_KEY"],  # type: ignore[index]
        transaction_id=response.get("transactionId"),
        remark=java.remark,
    )
    ours = end_transaction_request(end)
    assert list((ours.ext_fields or {}).items()) == list(fields.items())  # order included
    assert (ours.code, ours.remark, ours.body) == (java.code, java.remark, java.body)
    if scenario == "S8":  # execute threw: UNKNOWN with Java's remark
        assert (java.remark or "").startswith(EXECUTE_FAILED_REMARK)


@pytest.mark.parametrize(
    ("check_seq", "end_seq"), [c for s in SCENARIOS.values() for c in s[3]] + [(131, 132)]
)
def test_the_answer_to_a_check_is_javas(check_seq: int, end_seq: int) -> None:
    check = parse_check_request(command(check_seq))
    java = command(end_seq)
    fields = java.ext_fields or {}
    state = TransactionState(int(fields["commitOrRollback"]))
    ours = end_transaction_request(end_after_check(check, fields["producerGroup"], state))
    assert list((ours.ext_fields or {}).items()) == list(fields.items())
    assert check.producer_group == fields["producerGroup"]  # PGROUP picks the producer
    assert check.record.topic == "TxTopic"  # the real topic, not the half topic
    if java.remark is not None:  # S7's first check threw
        assert java.remark.startswith(CHECK_FAILED_REMARK)


# -- the dev broker's answers to the probes -------------------------------------------------

PROBE_HALVES = {204: 205, 226: 227, 230: 231}  # hand-made half sends and their answers
PROBE_ENDS = {206: 207, 208: 209, 210: 211, 212: 213, 214: 215, 216: 217, 218: 219}
PROBE_ENDS |= {220: 221, 222: 223, 224: 225, 228: 229, 232: None, 233: None}
FIRST_PROBE_HALF = 17
BARRIER = 9999  # a code no broker knows: answered in order, after what came before


def shifted(request: RemotingCommand, offset: tuple[int, int], queue: tuple[int, int]) -> bytes:
    """The probe with its commit-log and half-queue offsets moved to the dev broker's."""
    fields = dict(request.ext_fields or {})
    for name, (ours, theirs) in (("commitLogOffset", offset), ("tranStateTableOffset", queue)):
        if name in fields:
            fields[name] = str(int(fields[name]) - theirs + ours)
    copy = RemotingCommand(
        request.code,
        opaque=request.opaque,
        flag=request.flag,
        ext_fields=fields,
        remark=request.remark,
        language=request.language,
        version=request.version,
        serialize_type=request.serialize_type,
    )
    return encode_frame(copy)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_dev_broker_answers_the_probes_as_the_real_one(anyio_backend: str) -> None:
    captured = frames()
    # No check round runs during the probes (the capture's came after them).
    config = TransactionConfig(timeout_ms=600_000, interval_ms=600_000, check_max=3)
    async with DevCluster(brokers=1, topics={"TxTopic": 4}, transactions=config) as cluster:
        async with await RawClient.connect(cluster.broker_addr("broker-a")) as probe:
            for _ in range(FIRST_PROBE_HALF):  # the probe's H1 sat at half-queue offset 17:
                await probe.write(raw(captured[204]))  # an op record's body is that number,
                assert (await probe.read()).code == 0  # so its digits move what follows
            await replay_probes(probe, captured)
        copies = [m for m in cluster.messages("TxTopic") if m.queue_id == 0]
    # E6, E8 and E9 each stored a copy of H1: commit does not de-duplicate
    assert len(copies) == 3 and len({m.uniq_key for m in copies}) == 1
    assert {m.sys_flag for m in copies} == {8}


async def replay_probes(probe: RawClient, captured: dict[int, dict[str, object]]) -> None:
    base: tuple[int, int] | None = None  # (our H1 offset, our H1 queue offset)
    for seq in sorted({**PROBE_HALVES, **PROBE_ENDS}):
        request = decode_frame(raw(captured[seq]))
        golden = (
            None
            if (seq in PROBE_ENDS and PROBE_ENDS[seq] is None)
            else command(
                PROBE_HALVES.get(seq) or PROBE_ENDS[seq]  # type: ignore[arg-type]
            )
        )
        if seq in PROBE_HALVES:
            await probe.write(raw(captured[seq]))
            ours = await probe.read()
            assert golden is not None and (ours.code, ours.remark) == (golden.code, golden.remark)
            here, there = dict(ours.ext_fields or {}), dict(golden.ext_fields or {})
            if base is None:
                base = (offset_of(here["msgId"]), int(here["queueOffset"]))
            assert offset_of(here.pop("msgId")) - base[0] == offset_of(there.pop("msgId")) - 8925
            assert int(here.pop("queueOffset")) - base[1] == int(there.pop("queueOffset")) - 17
            assert here == there, seq
            continue
        assert base is not None
        await probe.write(shifted(request, (base[0], 8925), (base[1], 17)))
        await probe.send(RemotingCommand(BARRIER, opaque=1 << 30))
        ours = await probe.read()
        if golden is None:  # state 0 is never answered: the barrier's answer comes first
            assert ours.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED, seq
            continue
        assert (ours.code, ours.flag, ours.remark) == (golden.code, golden.flag, golden.remark), seq
        assert (ours.ext_fields or {}) == (golden.ext_fields or {}) and not ours.body, seq
        assert (await probe.read()).code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
