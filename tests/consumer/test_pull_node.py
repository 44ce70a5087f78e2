"""The pure choice of which replica a queue is read from (producer/_consume/pull_node.py),
against Java 4.9.4's ``findBrokerAddressInSubscribe`` and ``pullFromWhichNodeTable``."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from producer._consume.pull_node import Node, PullNodes, find_in_subscribe
from producer._remoting.route import (
    BrokerData,
    TopicRouteData,
    master_addresses,
    replica_addresses,
)
from producer._types.message import MessageQueue

Q = MessageQueue("T", "broker-a", 0)
MASTER, SLAVE = "10.0.0.1:10911", "10.0.0.2:10911"
GROUP = {0: MASTER, 1: SLAVE}

replica_maps = st.dictionaries(
    st.integers(0, 4), st.sampled_from(["a:1", "b:1", "c:1", "d:1", "e:1"]), max_size=5
)


def test_the_route_keeps_every_replica_and_producers_still_see_masters_only() -> None:
    route = TopicRouteData(
        broker_datas=[
            BrokerData("C", "broker-a", {1: SLAVE, 0: MASTER}),
            BrokerData("C", "broker-b", {1: "10.0.0.4:1"}),  # its master is gone
            BrokerData("C", "broker-a", {0: "dup:1"}),  # a later duplicate: ignored
        ]
    )
    assert replica_addresses(route) == {"broker-a": GROUP, "broker-b": {1: "10.0.0.4:1"}}
    assert master_addresses(route) == {"broker-a": MASTER}


def test_java_rules_wanted_then_next_slave_then_lowest_id() -> None:
    assert find_in_subscribe(GROUP, 0) == Node(0, MASTER)
    assert find_in_subscribe(GROUP, 1) == Node(1, SLAVE)
    assert find_in_subscribe({0: MASTER, 2: "s2"}, 1) == Node(2, "s2")  # brokerId + 1
    assert find_in_subscribe({1: SLAVE}, 0) == Node(1, SLAVE)  # no master: the first
    assert find_in_subscribe({0: MASTER}, 3) == Node(0, MASTER)
    assert find_in_subscribe({}, 0) is None


@given(replica_maps, st.integers(0, 5))
def test_a_choice_is_always_a_replica_and_the_wanted_one_when_present(
    replicas: dict[int, str], wanted: int
) -> None:
    node = find_in_subscribe(replicas, wanted)
    if not replicas:
        assert node is None
        return
    assert node is not None and replicas[node.broker_id] == node.addr
    if wanted in replicas:
        assert node.broker_id == wanted


def test_a_master_that_fails_is_passed_over_until_its_mark_lapses() -> None:
    nodes = PullNodes(down_ms=10_000.0)
    assert nodes.choose(Q, GROUP, 0.0) == Node(0, MASTER)
    nodes.failed(MASTER, 100.0)
    assert nodes.can_retry_at_once(Q, GROUP, MASTER, 100.0)
    assert nodes.choose(Q, GROUP, 100.0) == Node(1, SLAVE)
    assert nodes.choose(Q, GROUP, 10_099.0) == Node(1, SLAVE)
    assert nodes.choose(Q, GROUP, 10_100.0) == Node(0, MASTER)  # tried again


def test_a_master_gone_from_the_route_is_read_from_its_slave_and_back_on_return() -> None:
    nodes = PullNodes()
    assert nodes.choose(Q, {1: SLAVE}, 0.0) == Node(1, SLAVE)
    nodes.suggest(Q, 0)  # a 4.x slave always suggests the master
    assert nodes.choose(Q, {1: SLAVE}, 1.0) == Node(1, SLAVE)
    assert nodes.choose(Q, GROUP, 2.0) == Node(0, MASTER)  # the master is back


def test_a_suggestion_is_followed_both_ways() -> None:
    nodes = PullNodes()
    nodes.suggest(Q, 1)  # a master under memory pressure: whichBrokerWhenConsumeSlowly
    assert nodes.choose(Q, GROUP, 0.0) == Node(1, SLAVE)
    nodes.suggest(Q, 0)
    assert nodes.choose(Q, GROUP, 0.0) == Node(0, MASTER)
    nodes.suggest(Q, 1)
    nodes.failed(SLAVE, 0.0)  # the suggested slave is down: the master serves
    assert nodes.choose(Q, GROUP, 1.0) == Node(0, MASTER)


def test_every_replica_down_falls_back_to_the_route_alone() -> None:
    nodes = PullNodes()
    nodes.failed(MASTER, 0.0)
    nodes.failed(SLAVE, 0.0)
    assert nodes.choose(Q, GROUP, 1.0) == Node(0, MASTER)
    assert not nodes.can_retry_at_once(Q, GROUP, MASTER, 1.0)


def test_offsets_go_to_the_master_else_the_first_live_replica() -> None:
    nodes = PullNodes()
    nodes.suggest(Q, 1)  # a pull's suggestion does not move offsets
    assert nodes.for_offsets(GROUP, 0.0) == Node(0, MASTER)
    assert nodes.for_offsets({1: SLAVE, 2: "s2"}, 0.0) == Node(1, SLAVE)
    nodes.failed(MASTER, 0.0)
    assert nodes.for_offsets(GROUP, 1.0) == Node(1, SLAVE)


def test_the_route_is_asked_every_recheck_while_degraded_else_every_route_period() -> None:
    nodes = PullNodes(down_ms=10_000.0, recheck_ms=2_000.0, route_ms=3_000.0)
    nodes.choose(Q, GROUP, 0.0)
    nodes.routed("T", 0.0)
    assert not nodes.degraded(0.0) and not nodes.route_due("T", 2_999.0)
    nodes.failed(MASTER, 0.0)
    assert nodes.route_due("T", 0.0)  # at once after a failure
    assert not nodes.route_due("T", 1_999.0)
    nodes.recheck_now("T")  # the ask counted did not happen
    assert nodes.route_due("T", 1_999.0)
    nodes.choose(Q, {1: SLAVE}, 3_000.0)
    assert nodes.route_due("T", 4_000.0)
    nodes.choose(Q, GROUP, 12_000.0)  # the master back and no longer down
    assert not nodes.degraded(12_000.0) and nodes.route_due("T", 12_000.0)
    assert not nodes.route_due("T", 14_999.0) and nodes.route_due("T", 15_000.0)


def test_a_watch_sleeps_until_the_route_is_due_at_most_a_tick() -> None:
    nodes = PullNodes(route_ms=3_000.0)
    assert nodes.wait_ms("T", 0.0) == 0.0  # never read: due now
    nodes.routed("T", 0.0)
    assert nodes.wait_ms("T", 2_800.0) == 200.0
    assert 0.0 < nodes.wait_ms("T", 0.0) < 3_000.0  # a tick: others' reads show sooner
    assert nodes.wait_ms("T", 9_000.0) == 0.0


def test_a_pull_is_abandoned_only_when_the_route_stops_naming_its_address() -> None:
    master = Node(0, MASTER)
    assert not PullNodes.gone(master, GROUP)
    assert PullNodes.gone(master, {1: SLAVE})  # dropped: read from the slave now
    assert PullNodes.gone(master, {0: "10.0.0.3:10911", 1: SLAVE})  # promoted elsewhere
    assert not PullNodes.gone(Node(1, SLAVE), {0: SLAVE})  # same address, new role
    assert not PullNodes.gone(master, {})  # nothing else to read: wait it out


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["fail", "suggest", "time"]),
            st.sampled_from([MASTER, SLAVE]),
            st.integers(0, 2),
            st.floats(0, 20_000),
        ),
        max_size=30,
    )
)
def test_a_live_replica_is_always_preferred_to_a_down_one(
    steps: list[tuple[str, str, int, float]],
) -> None:
    nodes = PullNodes(down_ms=10_000.0)
    now = 0.0
    for kind, addr, broker_id, dt in steps:
        if kind == "fail":
            nodes.failed(addr, now)
        elif kind == "suggest":
            nodes.suggest(Q, broker_id)
        else:
            now += dt
        node = nodes.choose(Q, GROUP, now)
        assert node is not None
        other = SLAVE if node.addr == MASTER else MASTER
        if nodes.is_down(node.addr, now):
            assert nodes.is_down(other, now)


def test_a_queue_let_go_no_longer_keeps_the_reader_degraded() -> None:
    nodes = PullNodes()
    nodes.choose(Q, {1: SLAVE}, 0.0)
    assert nodes.degraded(0.0)
    nodes.routed("T", 0.0)
    nodes.forget(Q)
    assert not nodes.degraded(0.0) and not nodes.route_due("T", 2_000.0)
