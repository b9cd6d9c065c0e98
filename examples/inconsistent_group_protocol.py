"""INCONSISTENT_GROUP_PROTOCOL: a member whose assignors share nothing with the group's.

Consumer A (kafka-python) joins with partition.assignment.strategy=[range] only; the group now
supports exactly {range}. Consumer B joins with [roundrobin] only. A group can pick one
protocol that every member supports; there is none, so the coordinator refuses B's JoinGroup
with INCONSISTENT_GROUP_PROTOCOL (B is never added, and A's generation does not change), and
kafka-python raises it from B's poll() as a fatal error.
"""

import re

from recipe import ClientLog, NotReproduced, client, join, make_topic, result, run, settle, unique


def recipe(broker) -> None:
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.errors import InconsistentGroupProtocolError, KafkaError

    logs = ClientLog()
    topic, group = unique("audit"), unique("mixed-assignors")
    make_topic(broker.bootstrap, topic, partitions=2)
    common = dict(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False)
    a = KafkaConsumer(client_id="A", partition_assignment_strategy=[RangePartitionAssignor], **common)
    b = KafkaConsumer(client_id="B", partition_assignment_strategy=[RoundRobinPartitionAssignor], **common)
    try:
        before = join(a, topic, "A")
        client(f"A (assignors: range) is in generation {before.generation_id} with partitions "
               f"{sorted(p.partition for p in a.assignment())}")

        b.partitions_for_topic(topic)
        b.subscribe([topic])
        try:
            b.poll(timeout_ms=5000)
        except InconsistentGroupProtocolError as e:
            client(f"B (assignors: roundrobin) poll() raised {e!r}")
        except KafkaError as e:
            raise NotReproduced(f"B's poll() raised {e!r} instead") from e
        else:
            raise NotReproduced(f"B's poll() did not raise; B holds {b.assignment()}")
        answer = logs.find(r"Received JoinGroup response: .*error_code=23\b", "B")
        if not answer:
            raise NotReproduced("B's error did not come from a JoinGroup answered with error code 23")
        client(f"B's log: {answer[0][:200]}")
        after = settle(a, timeout=5)
        if after is None or after.generation_id != before.generation_id:
            raise NotReproduced(f"A's generation changed: {before} -> {after}")
        client(f"A is still in generation {after.generation_id}: B never became a member")
        broker.show(group, "INCONSISTENT_GROUP_PROTOCOL",
                    expect=rf"group {re.escape(group)}: .* answered INCONSISTENT_GROUP_PROTOCOL")
        result("INCONSISTENT_GROUP_PROTOCOL",
               f"B's JoinGroup was refused; the group stays in generation {after.generation_id} "
               "with A alone",
               "every member of a classic group must support at least one protocol (assignor name) "
               "in common with the members already in it, and the same protocol type ('consumer'); "
               "B offered only roundrobin to a group whose members speak only range.",
               "list a common assignor in every member's partition.assignment.strategy; to migrate "
               "assignors, first roll out [new, old] everywhere, then drop the old one (each member "
               "must always share one with the rest). Clients name the same strategy alike "
               "('range', 'roundrobin', 'cooperative-sticky'), so mixed clients can share a group.")
    finally:
        b.close()
        a.close()


if __name__ == "__main__":
    run(recipe, __doc__.splitlines()[0])
