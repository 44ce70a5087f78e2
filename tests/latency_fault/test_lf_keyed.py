"""F5: keyed and ordered sends, chosen by `choose_queue` as Java's `SelectMessageQueueByHash`.

The expected queues are written out by hand from Java's rule, `abs(hashCode % n)` over
the publish queues in route order, and from hash values printed by OpenJDK 17.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

import pytest
from lf_support import MQ, snapshot

from latency_fault import (
    ROUTER_NAMES,
    EmptySnapshotError,
    PublishSnapshot,
    choose_queue,
    java_string_hash,
    make_router,
)

pytestmark = pytest.mark.timeout(60)

LAYOUT = {"a": 2, "b": 2, "c": 2}  # route order: a0 a1 b0 b1 c0 c1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("TagA", 2598919),
        ("order-1", -1207111310),
        ("héllo", 103094734),
        ("订单", 1129459),
        ("😀", 1772899),  # outside the BMP: its two surrogate code units
        ("\ud800", 55296),  # a lone surrogate, which a tag or key may hold in Java
        ("a\udc00b", 1839235),
        ("polygenelubricants", -(2**31)),  # wraps to Integer.MIN_VALUE
    ],
)
def test_java_string_hash_matches_java(text: str, expected: int) -> None:
    # printed by OpenJDK 17's String.hashCode (UTF-16 code units, int32 overflow)
    assert java_string_hash(text) == expected


@pytest.mark.parametrize(
    ("layout", "key", "expected"),
    [
        # 97 % 6 = 1
        (LAYOUT, "a", ("a", 1)),
        # hash -1207111310: Java's % truncates, abs(-2) = 2; a floor modulo gives 4 (c0)
        (LAYOUT, "order-1", ("b", 0)),
        # 7 queues a0 a1 a2 b0 b1 c0 c1: abs(-1207111310 % 7) = 6; a floor modulo gives
        # 1 (a1), the unsigned hash 3087855986 % 7 gives 5 (c0)
        ({"a": 3, "b": 2, "c": 2}, "order-1", ("c", 1)),
        # 103094734 % 6 = 4
        (LAYOUT, "héllo", ("c", 0)),
        # 1772899 % 6 = 1
        (LAYOUT, "😀", ("a", 1)),
    ],
)
def test_f5_keyed_choice_is_abs_java_hash_mod_queue_count_in_route_order(
    layout: dict[str, int], key: str, expected: tuple[str, int]
) -> None:
    router = make_router("adaptive", random.Random(0))
    snap = snapshot(layout)
    got = choose_queue(router, snap, last_broker=None, now_ms=0, order_key=key)
    assert (got.broker_name, got.queue_id) == expected
    assert any(got is q for q in snap.queues)  # the snapshot's own object


def test_f5_keyed_choice_indexes_the_snapshot_as_given_not_resorted() -> None:
    # An orderTopicConf route ("b:2;a:2") keeps its own order; index 2 is a0 here.
    route = [MQ("T", "b", 0), MQ("T", "b", 1), MQ("T", "a", 0), MQ("T", "a", 1)]
    snap = PublishSnapshot(route, random.Random(1), topic="T")
    router = make_router("off", random.Random(0))
    # -1207111310: abs(-1207111310 % 4) = 2
    got = choose_queue(router, snap, last_broker=None, now_ms=0, order_key="order-1")
    assert got is route[2]


class _RouterThatMustNotBeAsked:
    """Fails the test if a keyed choice consults the router in any way."""

    name = "must_not_be_asked"

    def __getattr__(self, attr: str) -> object:
        raise AssertionError(f"a keyed choice touched router.{attr}")

    def select_queue(self, snapshot: object, last_broker: object, now_ms: int) -> MQ:
        raise AssertionError("a keyed choice asked the router")

    def record(self, *args: object, **kwargs: object) -> bool:
        raise AssertionError("a keyed choice recorded")

    def retain(self, broker_names: Iterable[str]) -> None:
        raise AssertionError("a keyed choice retained")


def test_f5_keyed_choice_never_asks_the_router_nor_moves_the_index() -> None:
    snap = snapshot(LAYOUT)
    before = snap.index.value
    router = _RouterThatMustNotBeAsked()
    for last in (None, "b", "a"):
        got = choose_queue(
            router,  # type: ignore[arg-type]
            snap,
            last_broker=last,
            now_ms=5,
            order_key="order-1",
        )
        assert (got.broker_name, got.queue_id) == ("b", 0)
    assert snap.index.value == before


def test_f5_keyed_choice_is_final_even_on_a_banned_last_broker() -> None:
    router = make_router("adaptive", random.Random(0))
    for _ in range(2):
        router.record("b", 5, isolation=True, now_ms=0)
    assert not router.is_available("b", 10)
    snap = snapshot(LAYOUT)
    before_index, before_state = snap.index.value, repr(router)
    for last in (None, "b", "b"):
        got = choose_queue(router, snap, last_broker=last, now_ms=10, order_key="order-1")
        assert (got.broker_name, got.queue_id) == ("b", 0)
    assert snap.index.value == before_index
    assert repr(router) == before_state


@pytest.mark.parametrize("name", ROUTER_NAMES)
def test_f5_a_keyed_choice_of_an_empty_snapshot_raises(name: str) -> None:
    empty: PublishSnapshot[MQ] = PublishSnapshot([], random.Random(0), topic="Orders")
    with pytest.raises(EmptySnapshotError, match="Orders"):
        choose_queue(
            make_router(name, random.Random(0)),
            empty,
            last_broker=None,
            now_ms=0,
            order_key="k",
        )


@pytest.mark.parametrize("name", ROUTER_NAMES)
def test_without_a_key_choose_queue_asks_the_router(name: str) -> None:
    router = make_router(name, random.Random(0))
    snap = snapshot({"a": 2, "b": 2})
    start = snap.index.value
    got = choose_queue(router, snap, last_broker=None, now_ms=0)
    assert got is snap.queues[(start + 1) % 4]
