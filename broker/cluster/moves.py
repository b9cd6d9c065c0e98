"""The cluster's changes on a running broker: a coordinator or a partition leader moves, a node
stops or starts, and ``clear`` puts everything back. Each is a change of the topology followed
by what it means for the parts that serve it: a coordinator shard whose owner changed moves
(unload, reopen in its new home, replay: ``ShardRunner.move``), and so does a transaction-state
partition (``TransactionService.move``), fetches parked on a partition
whose leader changed wake (and are answered as ``DataPlane.led`` orders it: FENCED_LEADER_EPOCH
for the old epoch on a node still holding a replica), a stopped node's listeners
close and its connections drop, a started one listens again. A change that cannot be made
raises TopologyError and changes nothing."""

from __future__ import annotations

import logging

from broker.cluster.topology import GROUP_TOPIC, TXN_TOPIC, Topology, TopologyError

log = logging.getLogger("groupbroker.cluster")


class ClusterMoves:
    """``data``: the data plane (its partitions); ``runners``: the coordinator shards;
    ``transactions``: the transaction coordinator (``txn_partitions`` partitions); ``nodes``:
    the nodes' listeners (a node that stops stops listening)."""

    def __init__(self, topology: Topology, data, runners: list, transactions, txn_partitions: int, nodes):
        self.topology, self.data, self.runners = topology, data, runners
        self.transactions, self.txn_partitions, self.nodes = transactions, txn_partitions, nodes

    def move_coordinator(self, partition: int, node: int, topic: str = GROUP_TOPIC) -> str:
        """The coordinator of a group shard (or, with ``topic`` __transaction_state, of a
        transaction-state partition) moves to ``node``."""
        what = f"shard {partition}" if topic == GROUP_TOPIC else f"{topic}-{partition}"
        return self._change(f"coordinator of {what} moved to node {node}",
                            lambda: self.topology.move(topic, partition, node))

    def move_leader(self, topic: str, partition: int, node: int) -> str:
        if not self.data.has_partition(topic, partition):
            raise TopologyError(f"there is no partition {topic}-{partition}")
        return self._change(f"leader of {topic}-{partition} moved to node {node}",
                            lambda: self.topology.move(topic, partition, node))

    def stop_node(self, node: int) -> str:
        outcome = self._change(f"node {node} stopped", lambda: self.topology.stop(node, self._partitions()))
        dropped = self.nodes.stop_listening(node)
        return f"{outcome}; {dropped} connection(s) dropped"

    async def start_node(self, node: int) -> str:
        outcome = self._change(f"node {node} started", lambda: self.topology.start(node, self._partitions()))
        await self.nodes.listen_again(node)
        return outcome

    async def reset(self) -> str:
        """Every node running again, every partition and coordinator where it started."""
        stopped = [n for n in self.topology.node_ids if n not in self.topology.live]
        for node in stopped:
            await self.nodes.listen_again(node)
        return self._change(f"placement reset (nodes started: {stopped or 'none'})", self.topology.reset)

    def _partitions(self) -> list[tuple[str, int]]:
        data = [(t.name, p) for t in self.data.store.topics() for p in range(len(t.partitions))]
        return [*((GROUP_TOPIC, s) for s in range(len(self.runners))),
                *((TXN_TOPIC, p) for p in range(self.txn_partitions)), *data]

    def _change(self, what: str, change) -> str:
        """Apply a topology change and follow it: shards whose coordinator changed move, a topic
        partition whose leader changed starts a leader epoch."""
        partitions = self._partitions()
        before = {tp: self.topology.leader(*tp) for tp in partitions}
        change()                                  # TopologyError: nothing changed
        changed = [tp for tp in partitions if self.topology.leader(*tp) != before[tp]]
        for topic, p in changed:
            if topic == GROUP_TOPIC:
                self.runners[p].move()
            elif topic == TXN_TOPIC:
                self.transactions.move(p)
            else:
                self.data.leader_changed(topic, p)
        shards = sorted(p for t, p in changed if t == GROUP_TOPIC)
        txns = sorted(p for t, p in changed if t == TXN_TOPIC)
        others = len(changed) - len(shards) - len(txns)
        summary = f"{what}: coordinator shards moved: {shards or 'none'}; transaction coordinators " \
                  f"moved: {txns or 'none'}; other partition leaders changed: {others}"
        log.warning("fault injection: %s", summary)
        return summary
