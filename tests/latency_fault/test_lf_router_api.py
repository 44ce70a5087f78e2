"""The producer-facing surface: snapshot, factory, Router protocol (keyed sends: test_lf_keyed)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from lf_support import MQ, queues, snapshot

import latency_fault
from latency_fault import (
    ROUTER_NAMES,
    AdaptiveRouter,
    Classic5Router,
    Classic49Router,
    EmptySnapshotError,
    OffRouter,
    PublishSnapshot,
    Router,
    make_router,
)

pytestmark = pytest.mark.timeout(60)

PACKAGE = Path(latency_fault.__file__).parent


def test_all_names_exist() -> None:
    for name in latency_fault.__all__:
        assert hasattr(latency_fault, name), name
    assert (PACKAGE / "py.typed").is_file()


def test_make_router_builds_each_named_strategy() -> None:
    assert ROUTER_NAMES == ("off", "classic_4_9", "classic_5", "adaptive")
    kinds = {name: type(make_router(name, random.Random(0))) for name in ROUTER_NAMES}
    assert kinds == {
        "off": OffRouter,
        "classic_4_9": Classic49Router,
        "classic_5": Classic5Router,
        "adaptive": AdaptiveRouter,
    }
    for name in ROUTER_NAMES:
        assert make_router(name, random.Random(0)).name == name


def test_make_router_rejects_unknown_names_listing_valid_ones() -> None:
    with pytest.raises(ValueError, match="unknown routing 'fastest'") as info:
        make_router("fastest", random.Random(0))
    for name in ROUTER_NAMES:
        assert repr(name) in str(info.value)


@pytest.mark.parametrize("name", ROUTER_NAMES)
def test_every_router_rejects_an_empty_snapshot_clearly(name: str) -> None:
    router: Router = make_router(name, random.Random(0))
    empty: PublishSnapshot[MQ] = PublishSnapshot([], random.Random(0), topic="Orders")
    assert empty.is_empty()
    with pytest.raises(EmptySnapshotError, match="Orders") as info:
        router.select_queue(empty, None, 0)
    assert isinstance(info.value, LookupError)
    assert info.value.topic == "Orders"


@pytest.mark.parametrize("name", ROUTER_NAMES)
def test_every_router_returns_the_snapshots_own_queue_objects(name: str) -> None:
    router = make_router(name, random.Random(0))
    snap = snapshot({"a": 2, "b": 3})
    for attempt in range(20):
        last = None if attempt % 2 == 0 else "a"
        picked = router.select_queue(snap, last, attempt)
        assert any(picked is q for q in snap.queues)
        router.record(picked.broker_name, 20, isolation=False, now_ms=attempt)
    router.retain(["a", "b"])
    router.forget("a")
    assert router.due_probes(100) == []
    assert router.is_available("b", 100)
    assert router.banned(100) == {}
    assert router.ban_count == 0
    assert type(router).__name__ in repr(router)


def test_snapshot_views() -> None:
    snap = snapshot({"b": 2, "a": 3}, topic="Orders")
    assert snap.brokers == ("a", "b")
    assert snap.write_queue_nums("a") == 3
    assert snap.write_queue_nums("zz") == 0
    assert snap.broker_queue("a", 7) == MQ("Orders", "a", 1)
    assert len(snap) == 5
    assert "Orders" in repr(snap)
    assert "'a': 3" in repr(snap)
    assert f"index={snap.index.value}" in repr(snap)


def test_snapshot_index_starts_from_the_injected_rng() -> None:
    a = PublishSnapshot(queues({"a": 4}), random.Random(42))
    b = PublishSnapshot(queues({"a": 4}), random.Random(42))
    assert a.index.value == b.index.value
    assert 0 <= a.index.value <= 0x7FFF_FFFF


# -- record() answers whether it banned the broker ------------------------------------------


def test_off_record_never_bans() -> None:
    router = OffRouter()
    assert router.record("a", 20_000, isolation=True, now_ms=0) is False
    assert router.record("a", 20_000, isolation=True, now_ms=1) is False


def test_classic_4_9_record_says_when_it_bans() -> None:
    router = Classic49Router(random.Random(1))
    assert router.record("a", 20, isolation=False, now_ms=0) is False  # fast: no window
    assert router.record("a", 600, isolation=False, now_ms=0) is True  # 550 ms+: 30 s
    assert router.record("a", 5, isolation=True, now_ms=100) is False  # rewritten, not new
    assert router.record("a", 20, isolation=False, now_ms=200) is False  # lifts the ban
    assert router.is_available("a", 200)
    assert router.record("a", 5, isolation=True, now_ms=300) is True
    assert router.ban_count == 2


def test_classic_5_record_says_when_it_bans() -> None:
    router = Classic5Router(random.Random(1))
    assert router.record("a", 5, isolation=True, now_ms=0) is True  # 10 s
    assert router.record("a", 5, isolation=True, now_ms=1000) is False  # extended to 11 s
    assert router.record("a", 20, isolation=False, now_ms=2000) is False  # does not lift it
    assert not router.is_available("a", 2000)
    assert router.record("a", 600, isolation=False, now_ms=11_000) is True  # over; 2 s
    assert router.ban_count == 2


def test_adaptive_record_says_when_it_bans() -> None:
    router = AdaptiveRouter(random.Random(1))
    assert router.record("a", 5, isolation=True, now_ms=0) is False  # one error: no ban
    assert router.record("a", 5, isolation=True, now_ms=10) is True  # two in a row
    assert router.record("a", 5, isolation=True, now_ms=20) is False  # a straggler
    assert router.record("a", 5, isolation=False, now_ms=30) is False  # probe: half-open
    assert router.is_available("a", 30)
    assert router.record("a", 5, isolation=True, now_ms=40) is True  # the trial failed
    assert router.ban_count == 2


# Purity (no I/O, clock or global random) is checked for the whole core in
# tests/test_architecture.py.


def test_modules_stay_small() -> None:
    for path in PACKAGE.glob("*.py"):
        assert len(path.read_text().splitlines()) < 400, path.name
