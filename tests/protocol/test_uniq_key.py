"""UNIQ_KEY: Java's layout, and uniqueness beyond what Java guarantees."""

from __future__ import annotations

import datetime
import ipaddress
import threading

import pytest

from producer._client.host import local_ipv4, new_uniq_key_generator, shared_uniq_key_generator
from producer._remoting.frame_decoder import decode_frame
from producer._remoting.properties import UNIQ_KEY, decode_properties
from producer._remoting.uniq_key import UniqKeyGenerator, month_bounds, parse_uniq_key
from producer.errors import LocalProtocolError

from .golden import all_frames, frame

# The golden capture's client: 192.0.2.2, pid 0x5977 (json run), class-loader hash 5FFD2B27.
GOLDEN_G = 1795259977471  # bornTimestamp of java-json/06, the run's first send


def _utc_ms(*args: int) -> int:
    moment = datetime.datetime(*args, tzinfo=datetime.timezone.utc)  # type: ignore[misc]
    return int(moment.timestamp() * 1000)


def test_first_golden_id_is_reproduced_exactly() -> None:
    generator = UniqKeyGenerator("192.0.2.2", 0x5977, 0x5FFD2B27)
    assert generator.next_id(GOLDEN_G) == "C000020259775FFD2B27696D66FF0000"
    java = decode_frame(frame("java-json/06_send_sync_keys_tags_property.request").raw)
    assert decode_properties(java.ext_fields["i"])[UNIQ_KEY] == "C000020259775FFD2B27696D66FF0000"  # type: ignore[index]
    rmq = UniqKeyGenerator("192.0.2.2", 0x59E1, 0x5FFD2B27)
    assert rmq.next_id(1795259986307) == "C000020259E15FFD2B27696D89830000"


def _golden_ids(run: str) -> list[str]:
    ids: list[str] = []
    for golden in all_frames():
        if golden.run == run and golden.name.endswith(".request"):
            properties = golden.info.get("extFields_i_properties_parsed", {})
            batch = golden.info.get("body_batch_decoded", [])
            ids += [properties[UNIQ_KEY]] if UNIQ_KEY in properties else []
            ids += [m["properties"][UNIQ_KEY] for m in batch]
    return ids


@pytest.mark.parametrize("run", ["java-json", "java-rocketmq"])
def test_a_whole_golden_run_is_reproduced_from_its_times(run: str) -> None:
    ids = _golden_ids(run)
    assert len(ids) == 12  # counters 0..12; the send that used 11 is not in the selection
    first = parse_uniq_key(ids[0])
    assert (first.ip, first.instance_hash) == ("192.0.2.2", 0x5FFD2B27)
    generator = UniqKeyGenerator(first.ip, first.pid, first.instance_hash)
    month_start, _ = month_bounds(GOLDEN_G)
    for expected in ids:
        wall_ms = month_start + parse_uniq_key(expected).time_part
        produced = generator.next_id(wall_ms)
        if parse_uniq_key(produced).counter == 11:  # the uncaptured send
            produced = generator.next_id(wall_ms)
        assert produced == expected


def test_ids_are_unique_and_increasing_past_the_16_bit_counter_in_one_ms() -> None:
    generator = UniqKeyGenerator("10.0.0.1", 1, 2)
    ids = [generator.next_id(GOLDEN_G) for _ in range(200_000)]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)
    assert all(len(i) == 32 and i == i.upper() for i in ids[::10_000])
    # After 65536 ids the counter wraps and the time part borrows the next millisecond.
    assert parse_uniq_key(ids[65535]).counter == 0xFFFF
    wrapped = parse_uniq_key(ids[65536])
    assert (wrapped.counter, wrapped.time_part) == (0, parse_uniq_key(ids[0]).time_part + 1)
    # Once the clock catches up, ids keep increasing without repeating.
    later = generator.next_id(GOLDEN_G + 2)
    assert later > ids[-1]


def test_a_clock_stepping_back_does_not_repeat_ids() -> None:
    generator = UniqKeyGenerator("10.0.0.1", 1, 2)
    ids = [generator.next_id(t) for t in (GOLDEN_G, GOLDEN_G - 5000, GOLDEN_G - 1, GOLDEN_G)]
    assert ids == sorted(ids)
    assert len(set(ids)) == 4
    assert {parse_uniq_key(i).time_part for i in ids} == {parse_uniq_key(ids[0]).time_part}


def test_time_part_counts_from_the_utc_month_start_and_restarts_each_month() -> None:
    generator = UniqKeyGenerator("10.0.0.1", 1, 2)
    late = _utc_ms(2026, 12, 31, 23, 59, 59) + 999
    assert month_bounds(late) == (_utc_ms(2026, 12, 1), _utc_ms(2027, 1, 1))
    late_id = parse_uniq_key(generator.next_id(late))
    assert late_id.time_part == late - _utc_ms(2026, 12, 1)  # > 2**31: Java's int wraps
    assert late_id.time_part > 2**31
    january = parse_uniq_key(generator.next_id(_utc_ms(2027, 1, 1) + 7))
    assert (january.time_part, january.counter) == (7, 1)


def test_generators_of_different_processes_differ() -> None:
    one = UniqKeyGenerator("10.0.0.1", 100, 7).next_id(GOLDEN_G)
    two = UniqKeyGenerator("10.0.0.1", 101, 7).next_id(GOLDEN_G)
    three = UniqKeyGenerator("10.0.0.1", 100, 8).next_id(GOLDEN_G)
    assert len({one, two, three}) == 3
    assert parse_uniq_key(two).pid == 101
    assert UniqKeyGenerator("10.0.0.1", 0x12345, 7).prefix == "0A000001" + "2345" + "00000007"


def test_bad_inputs() -> None:
    with pytest.raises(LocalProtocolError):
        UniqKeyGenerator("::1", 1, 1)
    for bad in ("", "C0" * 15, "G" * 32, "C000020259775FFD2B27696D66FF000 "):
        with pytest.raises(LocalProtocolError):
            parse_uniq_key(bad)


def test_ipv6_ids_parse() -> None:
    raw = ipaddress.IPv6Address("fe80::1").packed + bytes.fromhex("000100000002000000030004")
    parts = parse_uniq_key(raw.hex().upper())
    assert parts == ("fe80::1", 1, 2, 3, 4)


# -- the host helpers -------------------------------------------------------------------------


def test_local_address_is_ipv4() -> None:
    ipaddress.IPv4Address(local_ipv4())


def test_shared_generator_is_per_thread_and_fresh_ones_differ() -> None:
    mine = shared_uniq_key_generator()
    assert shared_uniq_key_generator() is mine
    theirs: list[UniqKeyGenerator] = []
    thread = threading.Thread(target=lambda: theirs.append(shared_uniq_key_generator()))
    thread.start()
    thread.join()
    assert theirs[0] is not mine
    assert new_uniq_key_generator("10.1.2.3").prefix.startswith("0A010203")
