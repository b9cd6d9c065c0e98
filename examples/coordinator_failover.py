"""Coordinator failover mid-rebalance: the group's coordinator moves to another broker while a
rebalance waits for its members.

On a 3-node groupbroker cluster, consumer A (kafka-python) is Stable in generation N. Consumer B
joins: the coordinator moves the group to PreparingRebalance and parks B's JoinGroup until A
rejoins. Before A does, the group's coordinator moves to another node (as when its broker
fails and another takes over the __consumer_offsets partition). B's parked JoinGroup is answered
NOT_COORDINATOR; both clients mark the coordinator dead, ask FindCoordinator again, connect to the
new node (COORDINATOR_LOAD_IN_PROGRESS while it replays the group's log) and rejoin there. The
group completes the rebalance on the new coordinator in generation N+1, with the offsets
committed before the move.
"""

from recipe import (ClientLog, NotReproduced, Polling, client, coordinator, join, make_topic, result, run,
                    unique, wait_until)

DEAD = r"Marking the coordinator dead"           # kafka-python, on NOT_COORDINATOR or a lost connection
FOUND = r"Discovered coordinator"


def recipe(broker) -> None:
    from kafka import KafkaConsumer, TopicPartition

    logs = ClientLog()
    topic, group = unique("events"), unique("failover")
    make_topic(broker.bootstrap, topic, partitions=4)
    common = dict(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False,
                  session_timeout_ms=6000, heartbeat_interval_ms=300, max_poll_interval_ms=8000)
    a = KafkaConsumer(client_id="A", **common)
    b = None
    try:
        before = join(a, topic, "A")
        a.commit({TopicPartition(topic, p): _offset(7) for p in range(4)})
        old = coordinator(broker.bootstrap, group)
        old_node = broker.node_of(old)
        client(f"A is Stable in generation {before.generation_id}; it committed offset 7 on each "
               f"partition; the coordinator is node {old_node} ({old})")

        b = Polling(topic, client_id="B", **common)
        rebalancing = wait_until(lambda: broker.log(rf"group {group}: Stable -> PreparingRebalance .*adding member B-"),
                                 10)
        if not rebalancing:
            raise NotReproduced("B's JoinGroup never started a rebalance")
        client("B joined: the group is PreparingRebalance, B's JoinGroup waits for A to rejoin")
        new_node = (old_node + 1) % 3
        client(f"the coordinator moves to node {new_node}: "
               + broker.faults.move_coordinator(group=group, node=new_node))

        after = wait_until(lambda: a.poll(timeout_ms=300) is not None and a.assignment()
                           and b.generation() is not None
                           and a.group_metadata().generation_id > before.generation_id
                           and a.group_metadata(), 20)
        if not after:
            raise NotReproduced("the group did not complete its rebalance on the new coordinator")
        new = coordinator(broker.bootstrap, group)
        if broker.node_of(new) != new_node:
            raise NotReproduced(f"FindCoordinator still names {new}")
        for who in ("A", "B"):
            for line in logs.find(rf"{DEAD}|{FOUND}|NotCoordinator|CoordinatorLoadInProgress", who)[:4]:
                client(f"{who}: {line}")
        committed = a.committed(TopicPartition(topic, 0))
        client(f"A and B are Stable in generation {after.generation_id} (B: {b.generation()}) on node "
               f"{new_node} ({new}); A reads the committed offset of partition 0 back: {committed}")
        broker.show(group, "JoinGroup|->|loaded|NOT_COORDINATOR")
        for line in broker.log(r"fault injection|shard \d+: (log moved|loaded after)"):
            print(f"  broker| {line}", flush=True)
        if not logs.find(DEAD, "B") or committed != 7:
            raise NotReproduced("B never marked its coordinator dead, or the offsets were lost")
        result("NOT_COORDINATOR",
               f"B's parked JoinGroup in generation {before.generation_id}'s rebalance was answered "
               f"NOT_COORDINATOR; the group completed the rebalance on node {new_node} in generation "
               f"{after.generation_id} with its committed offsets",
               "a coordinator that moves (its broker failed, or leadership of the group's "
               "__consumer_offsets partition moved) unloads the group: requests parked there are "
               "answered NOT_COORDINATOR, and the new coordinator rebuilds the group from its log, "
               "where only completed generations and committed offsets are. A rebalance in "
               "progress starts over there, and a member id that was never part of a completed "
               "generation (B's) is unknown: B is told UNKNOWN_MEMBER_ID and joins afresh.",
               "nothing to fix in the application: clients find the new coordinator and rejoin. "
               "Commit before a rebalance completes (on_partitions_revoked) so nothing committed is "
               "lost, and keep session.timeout.ms long enough to ride out the failover.")
    finally:
        if b is not None:
            b.stop()
        a.close()


def _offset(n: int):
    from kafka.structs import OffsetAndMetadata
    return OffsetAndMetadata(n, "", -1)


if __name__ == "__main__":
    run(recipe, __doc__.splitlines()[0], nodes=3)
