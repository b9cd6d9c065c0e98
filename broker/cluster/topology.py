"""A cluster of nodes: their endpoints and racks, which are running, and where everything lives:
each partition's replicas, leader and leader epoch, and so each coordinator shard's owner (the leader of its ``__consumer_offsets`` or
``__transaction_state`` partition, as in Kafka).

A partition's replicas are a declared placement, Kafka's striped one: its topic's replication
factor (at most the node count) of consecutive nodes from ``abs(javaHashCode(topic)) +
partition``; its leader is the first live replica. Data lives with the leader (the nodes share one store), so a
leader change moves no bytes. Every change of leader bumps the partition's leader epoch, which
clients compare to tell newer metadata from older. Pure bookkeeping: no I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from coordinator.routing import java_string_hash, kafka_abs

GROUP_TOPIC = "__consumer_offsets"
TXN_TOPIC = "__transaction_state"
NO_LEADER = -1


class TopologyError(ValueError):
    """A move that cannot be made (an unknown or stopped node, nothing to move)."""


@dataclass(frozen=True, slots=True)
class Leadership:
    """One partition's replicas (preferred leader first), leader and leader epoch."""
    replicas: tuple[int, ...]
    leader: int
    epoch: int


@dataclass(frozen=True, slots=True)
class Node:
    node_id: int
    host: str
    port: int
    rack: str | None = None


class Topology:
    """``nodes`` are the cluster's nodes (their advertised endpoints); all of them start live.
    With several listeners, ``by_listener`` gives each listener's endpoints (Kafka tells a client
    the endpoints of the listener its request came to); ``nodes`` are the first listener's."""

    def __init__(self, nodes: list[Node], by_listener: dict[str, list[Node]] | None = None):
        self.nodes = {n.node_id: n for n in nodes}
        self._by_listener = {name: {n.node_id: n for n in listed} for name, listed in (by_listener or {}).items()}
        self.node_ids = [n.node_id for n in nodes]
        self.live = set(self.node_ids)
        self.single = len(nodes) == 1
        self._moved: dict[tuple[str, int], Leadership] = {}   # partitions not where they start
        #: a topic's replication factor (the broker sets it: topics keep theirs)
        self.replication: Callable[[str], int] = lambda topic: 1

    def live_nodes(self, listener: str = "") -> list[Node]:
        nodes = self._by_listener.get(listener, self.nodes)
        return [nodes[n] for n in self.node_ids if n in self.live]

    def node(self, node_id: int, listener: str = "") -> Node:
        """A node's endpoint on ``listener`` (the first listener's if it is not one of ours)."""
        return self._by_listener.get(listener, self.nodes)[node_id]

    def controller(self) -> int:
        """The controller clients are told of: Kafka in KRaft mode names a live broker."""
        return min(self.live)

    def of(self, topic: str, partition: int) -> Leadership:
        found = self._moved.get((topic, partition))
        return found if found is not None else self._initial(topic, partition)

    def _initial(self, topic: str, partition: int) -> Leadership:
        ids = self.node_ids
        start = _topic_hash(topic) + partition
        replicas = tuple(ids[(start + i) % len(ids)] for i in range(min(self.replication(topic), len(ids))))
        return Leadership(replicas, self._first_live(replicas), 0)

    def _first_live(self, replicas) -> int:
        return next((n for n in replicas if n in self.live), NO_LEADER)

    def leader(self, topic: str, partition: int) -> int:
        return self.of(topic, partition).leader

    def isr(self, lead: Leadership) -> tuple[int, ...]:
        """A partition's in-sync replicas: its live ones (a stopped node drops out, as Kafka
        shrinks the ISR)."""
        return tuple(n for n in lead.replicas if n in self.live)

    def coordinator(self, shard: int) -> int:
        return self.leader(GROUP_TOPIC, shard)

    def transaction_coordinator(self, partition: int) -> int:
        return self.leader(TXN_TOPIC, partition)

    # --- changes ------------------------------------------------------------------------------
    def move(self, topic: str, partition: int, node: int) -> Leadership:
        """Make ``node`` the leader (and preferred replica) of one partition."""
        self._check_live(node)
        now = self.of(topic, partition)
        if now.leader == node:
            raise TopologyError(f"node {node} already leads {topic}-{partition}")
        others = [n for n in now.replicas if n != node]
        replicas = (node, *others[:len(now.replicas) - 1]) if node not in now.replicas else (node, *others)
        self._moved[topic, partition] = moved = Leadership(replicas, node, now.epoch + 1)
        return moved

    def stop(self, node: int, partitions) -> list[tuple[str, int]]:
        """Take ``node`` out; each of ``partitions`` (topic, p) it led goes to its next live replica."""
        self._check_live(node)
        if len(self.live) == 1:
            raise TopologyError(f"node {node} is the last one running")
        led = [tp for tp in partitions if self.leader(*tp) == node]
        self.live.discard(node)
        for tp in led:
            before = self.of(*tp)
            self._moved[tp] = Leadership(before.replicas, self._first_live(before.replicas), before.epoch + 1)
        return led

    def start(self, node: int, partitions) -> list[tuple[str, int]]:
        """Bring ``node`` back; partitions with no live replica until now get it as leader, the
        others keep theirs (leadership never moves back by itself here)."""
        if node not in self.node_ids:
            raise TopologyError(f"there is no node {node} (nodes: {self.node_ids})")
        if node in self.live:
            raise TopologyError(f"node {node} is running")
        before = {tp: self.of(*tp) for tp in partitions}
        self.live.add(node)
        orphans = []
        for tp, lead in before.items():
            if lead.leader == NO_LEADER:
                self._moved[tp] = Leadership(lead.replicas, self._first_live(lead.replicas), lead.epoch + 1)
                orphans.append(tp)
            elif self.leader(*tp) != lead.leader:
                self._moved[tp] = lead
        return orphans

    def reset(self) -> None:
        """Every node live, every partition back with its initial replicas and leader; leader
        epochs still only grow (Kafka never reuses one)."""
        epochs = {tp: lead.epoch + 1 for tp, lead in self._moved.items()}
        self.live = set(self.node_ids)
        self._moved = {}
        for tp, epoch in epochs.items():
            initial = self._initial(*tp)
            self._moved[tp] = Leadership(initial.replicas, initial.leader, epoch)

    def _check_live(self, node: int) -> None:
        if node not in self.node_ids:
            raise TopologyError(f"there is no node {node} (nodes: {self.node_ids})")
        if node not in self.live:
            raise TopologyError(f"node {node} is stopped")


@lru_cache(maxsize=4096)
def _topic_hash(topic: str) -> int:
    return kafka_abs(java_string_hash(topic))
