"""The cluster's placement bookkeeping (broker/cluster/topology.py): replicas, leaders, epochs."""

from __future__ import annotations

import pytest

from broker.cluster.topology import GROUP_TOPIC, NO_LEADER, Node, Topology, TopologyError


def cluster(n: int = 3, replication: int = 3) -> Topology:
    t = Topology([Node(i, "127.0.0.1", 9092 + i) for i in range(n)])
    t.replication = lambda topic: replication
    return t


def test_partitions_are_striped_over_the_nodes_with_three_replicas():
    t = cluster(5)
    leaders = [t.leader("orders", p) for p in range(10)]
    assert sorted(set(leaders)) == [0, 1, 2, 3, 4]
    for p in range(10):
        lead = t.of("orders", p)
        assert len(lead.replicas) == 3 and lead.replicas[0] == lead.leader and lead.epoch == 0
        assert lead.replicas == tuple((lead.leader + i) % 5 for i in range(3))
    assert cluster(1).of("orders", 3).replicas == (0,)
    assert cluster(2).of("orders", 3).replicas in ((0, 1), (1, 0))        # at most the node count
    single = cluster(3, replication=1)
    assert [len(single.of("orders", p).replicas) for p in range(3)] == [1, 1, 1]
    assert sorted(single.leader("orders", p) for p in range(3)) == [0, 1, 2]


def test_a_move_makes_the_node_preferred_leader_and_bumps_the_epoch():
    t = cluster()
    before = t.of("orders", 0)
    target = next(n for n in range(3) if n != before.leader)
    moved = t.move("orders", 0, target)
    assert (moved.leader, moved.replicas[0], moved.epoch) == (target, target, 1)
    assert sorted(moved.replicas) == sorted(before.replicas)
    with pytest.raises(TopologyError, match="already leads"):
        t.move("orders", 0, target)
    with pytest.raises(TopologyError, match="no node 9"):
        t.move("orders", 0, 9)


def test_stopping_a_node_hands_its_leaderships_to_the_next_live_replica():
    t = cluster()
    partitions = [(GROUP_TOPIC, s) for s in range(50)]
    led = [tp for tp in partitions if t.leader(*tp) == 1]
    assert t.stop(1, partitions) == led
    assert 1 not in t.live and all(t.leader(*tp) != 1 for tp in partitions)
    assert all(t.of(*tp).epoch == 1 for tp in led)
    assert all(1 not in t.isr(t.of(*tp)) for tp in partitions)
    with pytest.raises(TopologyError, match="is stopped"):
        t.stop(1, partitions)
    t.stop(2, partitions)
    with pytest.raises(TopologyError, match="last one running"):
        t.stop(0, partitions)
    assert t.controller() == 0


def test_a_started_node_takes_back_only_what_had_no_leader():
    t = cluster(2)
    partitions = [("orders", p) for p in range(4)]
    t.stop(1, partitions)
    leaders = {tp: t.leader(*tp) for tp in partitions}
    assert set(leaders.values()) == {0}
    assert t.start(1, partitions) == []
    assert {tp: t.leader(*tp) for tp in partitions} == leaders       # nothing moves back by itself
    with pytest.raises(TopologyError, match="is running"):
        t.start(1, partitions)


def test_reset_restores_the_initial_placement_with_newer_epochs():
    t = cluster()
    initial = {p: t.leader("orders", p) for p in range(3)}
    t.move("orders", 0, (initial[0] + 1) % 3)
    t.stop(2, [("orders", p) for p in range(3)])
    t.reset()
    assert {p: t.leader("orders", p) for p in range(3)} == initial and t.live == {0, 1, 2}
    assert t.of("orders", 0).epoch == 2                  # epochs never go back


def test_a_partition_whose_replicas_all_stopped_has_no_leader_until_one_starts():
    t = cluster(4)
    partitions = [("orders", p) for p in range(4)]
    orphan = next(tp for tp in partitions if 3 not in t.of(*tp).replicas)
    for node in (0, 1, 2):
        t.stop(node, partitions)
    assert t.leader(*orphan) == NO_LEADER and t.isr(t.of(*orphan)) == ()
    assert orphan in t.start(1, partitions)
    assert t.leader(*orphan) == 1
