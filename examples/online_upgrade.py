"""Online upgrade: a live classic group becomes a KIP-848 consumer group, one member at a time.

Two kafka-python consumers (the classic protocol: JoinGroup/SyncGroup/Heartbeat) form group G
and consume a 6-partition topic. Then a confluent-kafka consumer with group.protocol=consumer
joins G: under Kafka's default group.consumer.migration.policy (bidirectional) the coordinator
converts the classic group into a consumer group on the spot (Kafka's
GroupMetadataManager.convertToConsumerGroup): the classic members keep their partitions and
their generation (now their member epoch), and from now on their JoinGroup/Heartbeat are
answered from the consumer group's state. The server-side assignor moves two partitions to the
newcomer; the classic members are told REBALANCE_IN_PROGRESS, rejoin, and give them up before
the newcomer gets them. Then each classic member is replaced by a consumer-protocol member (a
rolling upgrade) until the group has consumer-protocol members only.

Every member tracks what it owns from its own rebalance callbacks, commits after each batch,
and the recipe checks that no partition was ever owned by two members at once and that every
record was consumed. Note: Kafka cannot convert a classic group still in its first rebalance
(it answers UNKNOWN_SERVER_ERROR, which librdkafka treats as fatal), so the first
consumer-protocol member starts only once the classic members hold their assignment.
"""

import re

from mixed_members import ClassicMember, ConsumerMember, Ledger, Member
from recipe import (NotReproduced, client, connect, coordinator, make_topic, produce, result, run,
                    say, unique, wait_until)

from protocol import REQUESTS
from protocol.api_keys import ApiKey

PARTITIONS = 6
BATCH = 300          # records produced before each step


def group_listing(bootstrap: str, group: str) -> tuple[str, str] | None:
    """(type, state) of ``group`` as ListGroups v5 lists it (what `groupbroker groups list` and
    AdminClient.list_consumer_groups show)."""
    conn = connect(coordinator(bootstrap, group))
    try:
        answer = conn.call(ApiKey.LIST_GROUPS, 5, REQUESTS[ApiKey.LIST_GROUPS].cls())
    finally:
        conn.close()
    return next(((g.group_type, g.group_state) for g in answer.groups if g.group_id == group), None)


def described_members(bootstrap: str, group: str) -> list[str] | None:
    """The client ids of the members ConsumerGroupDescribe lists, None if it is not a consumer group."""
    conn = connect(coordinator(bootstrap, group))
    try:
        answer = conn.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, REQUESTS[ApiKey.CONSUMER_GROUP_DESCRIBE].cls(
            group_ids=(group,), include_authorized_operations=False))
    finally:
        conn.close()
    described = answer.groups[0]
    return None if described.error_code else sorted(m.client_id for m in described.members)


def recipe(broker) -> None:
    topic, group = unique("telemetry"), unique("upgrade")
    make_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    ledger = Ledger()
    members: dict[str, Member] = {}
    produced = 0

    def start(cls, name: str) -> Member:
        members[name] = cls(name, ledger, broker.bootstrap, group, topic)
        return members[name]

    def more_records() -> None:
        nonlocal produced
        produce(broker.bootstrap, topic, PARTITIONS, BATCH)
        produced += BATCH

    def settled(names: list[str], what: str, timeout: float = 20.0) -> dict[str, list[int]]:
        """Wait until exactly ``names`` own all the partitions, evenly, and everything produced
        so far is consumed."""
        def check():
            for m in members.values():
                if m.error is not None:
                    raise NotReproduced(f"{m.name} failed: {m.error!r}")
            owners = ledger.owners()
            counts = sorted(len(ps) for ps in owners.values())
            if sorted(owners) != sorted(names) or sum(counts) != PARTITIONS or counts[-1] - counts[0] > 1:
                return None
            return owners if len(ledger.delivered) >= produced else None
        owners = wait_until(check, timeout, 0.1)
        if owners is None:
            raise NotReproduced(f"{what}: the members never settled (owners {ledger.owners()}, "
                                f"{len(ledger.delivered)}/{produced} records consumed)")
        return owners

    def show(step: str) -> tuple[str, str] | None:
        listed = group_listing(broker.bootstrap, group)
        kind = f"type {listed[0]!r}, state {listed[1]}" if listed else "not listed"
        owners = ", ".join(f"{n} ({members[n].protocol}) {ps}" for n, ps in ledger.owners().items())
        client(f"{step}: ListGroups v5 says {kind}; owners by their callbacks: {owners}; "
               f"{len(ledger.delivered)}/{produced} records consumed")
        return listed

    try:
        more_records()
        start(ClassicMember, "K1")
        start(ClassicMember, "K2")
        settled(["K1", "K2"], "the classic group")
        before = show("1. two kafka-python members")

        more_records()
        start(ConsumerMember, "C1")
        settled(["K1", "K2", "C1"], "after C1 joined")
        after = show("2. confluent-kafka C1 (group.protocol=consumer) joined")

        say("3. the rolling upgrade: each classic member is replaced by a consumer-protocol member")
        for old, new in (("K1", "C2"), ("K2", "C3")):
            members[old].stop()
            more_records()
            start(ConsumerMember, new)
            remaining = [n for n, m in members.items() if m.is_alive()]
            settled(remaining, f"after {old} was replaced by {new}")
            show(f"   {old} closed, {new} joined")
        final = group_listing(broker.bootstrap, group)
        described = described_members(broker.bootstrap, group)
        client(f"ConsumerGroupDescribe lists the members {described}")
    finally:
        for m in members.values():
            m.stop()

    if before is None or before[0] != "classic":
        raise NotReproduced(f"the kafka-python members' group was listed as {before}, not classic")
    if after is None or after[0] != "consumer":
        raise NotReproduced(f"after C1 joined the group was listed as {after}, not consumer")
    if final is None or final[0] != "consumer" or described != ["C1", "C2", "C3"]:
        raise NotReproduced(f"at the end the group was {final} with members {described}")
    if ledger.violations:
        raise NotReproduced(f"ownership violated: {ledger.violations[:5]}")
    missing = produced - len(ledger.delivered)
    twice = sum(1 for n in ledger.delivered.values() if n > 1)
    if missing:
        raise NotReproduced(f"{missing} of {produced} records were never consumed")
    broker.show(group, "classic group|consumer group|becomes",
                expect=rf"group {re.escape(group)}: the classic group .* becomes a consumer group")
    result("online upgrade",
           f"group type {before[0]} -> {after[0]} when C1 joined; after the rolling upgrade "
           f"{final[0]} with members {described}; {produced} records consumed "
           f"({twice} twice), no partition ever owned by two members",
           "KIP-848 lets a classic group and consumer-protocol members meet: the first "
           "consumer-protocol heartbeat converts the live classic group (its members keep their "
           "partitions and their generation as member epoch), classic members go on with "
           "JoinGroup/SyncGroup/Heartbeat answered from the consumer group's server-side "
           "assignment, and a partition moves only after its owner revoked it (a classic member "
           "rejoins when its heartbeat says REBALANCE_IN_PROGRESS, revoking first).",
           "upgrade consumers one by one (group.protocol=consumer in librdkafka/Java); start the "
           "first one only once the classic group is Stable (a group in its first rebalance "
           "cannot be converted); keep group.consumer.migration.policy at bidirectional (or "
           "upgrade) on the brokers; commit in the revocation callback so each new owner starts "
           "where the last one stopped. Rolling back works the same way: when the last "
           "consumer-protocol member leaves, the group becomes a classic group again.")


if __name__ == "__main__":
    run(recipe, __doc__.splitlines()[0])
