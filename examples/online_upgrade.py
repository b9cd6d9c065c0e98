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
import threading
from collections import Counter

from recipe import (NotReproduced, client, connect, coordinator, make_topic, produce, result, run,
                    say, unique, wait_until)

from protocol import REQUESTS
from protocol.api_keys import ApiKey

PARTITIONS = 6
BATCH = 300          # records produced before each step


class Ledger:
    """Who owns which partition, by the members' own callbacks; every record delivered, by
    whom; and every violation: a partition assigned while another member owns it, a record
    delivered to a member that does not own its partition."""

    def __init__(self):
        self.lock = threading.Lock()
        self.owner: dict[int, str] = {}
        self.delivered: Counter = Counter()          # (partition, offset) -> deliveries
        self.violations: list[str] = []

    def assigned(self, name: str, partitions) -> None:
        with self.lock:
            for p in partitions:
                other = self.owner.get(p)
                if other not in (None, name):
                    self.violations.append(f"partition {p} assigned to {name} while {other} owns it")
                self.owner[p] = name

    def released(self, name: str, partitions) -> None:
        with self.lock:
            for p in partitions:
                if self.owner.get(p) == name:
                    del self.owner[p]

    def consumed(self, name: str, partition: int, offset: int) -> bool:
        with self.lock:
            if self.owner.get(partition) != name:
                self.violations.append(f"{name} got record {partition}@{offset} without owning it")
                return False
            self.delivered[(partition, offset)] += 1
            return True

    def of(self, name: str) -> list[int]:
        with self.lock:
            return sorted(p for p, n in self.owner.items() if n == name)

    def owners(self) -> dict[str, list[int]]:
        with self.lock:
            mine: dict[str, list[int]] = {}
            for p, n in sorted(self.owner.items()):
                mine.setdefault(n, []).append(p)
            return mine


class Member(threading.Thread):
    """A consumer polled on its own thread (every client call stays on it) until stop()."""

    protocol = ""

    def __init__(self, name: str, ledger: Ledger):
        super().__init__(daemon=True, name=name)
        self.ledger = ledger
        self.error: BaseException | None = None
        self._halt = threading.Event()
        self.start()

    def run(self) -> None:
        try:
            self.open()
            while not self._halt.is_set():
                self.poll()
        except BaseException as e:             # reported by the recipe
            self.error = e
        finally:
            try:
                self.close()                   # its revocation callback runs, then it leaves
            except BaseException as e:
                self.error = self.error or e

    def stop(self) -> None:
        self._halt.set()
        self.join(20)


class ClassicMember(Member):
    """kafka-python: the classic protocol, eager rebalances (range, roundrobin)."""

    protocol = "classic"

    def __init__(self, name, ledger, bootstrap, group, topic):
        self.config = dict(client_id=name, bootstrap_servers=bootstrap, group_id=group,
                           enable_auto_commit=False, auto_offset_reset="earliest",
                           session_timeout_ms=6000, heartbeat_interval_ms=300)
        self.topic = topic
        super().__init__(name, ledger)

    def open(self) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer

        ledger, name = self.ledger, self.name

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                ledger.released(name, [tp.partition for tp in revoked])

            def on_partitions_assigned(self, assigned):
                ledger.assigned(name, [tp.partition for tp in assigned])

            def on_partitions_lost(self, lost):
                ledger.released(name, [tp.partition for tp in lost])

        self.consumer = KafkaConsumer(**self.config)
        self.consumer.partitions_for_topic(self.topic)
        self.consumer.subscribe([self.topic], listener=Listener())

    def poll(self) -> None:
        batch = self.consumer.poll(timeout_ms=500)
        for tp, records in batch.items():
            for record in records:
                self.ledger.consumed(self.name, tp.partition, record.offset)
        if batch:
            self.consumer.commit()             # the positions of what this poll returned

    def close(self) -> None:
        if hasattr(self, "consumer"):
            self.consumer.close()


class ConsumerMember(Member):
    """confluent-kafka with group.protocol=consumer: KIP-848, incremental callbacks. A commit
    that fails (e.g. STALE_MEMBER_EPOCH, which librdkafka does not retry) stays pending and goes
    out again with the next one, or from the revocation callback."""

    protocol = "consumer"

    def __init__(self, name, ledger, bootstrap, group, topic):
        self.config = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
                       "group.protocol": "consumer", "auto.offset.reset": "earliest",
                       "enable.auto.commit": False, "fetch.wait.max.ms": 100}
        self.topic = topic
        self.pending: dict[int, int] = {}
        super().__init__(name, ledger)

    def open(self) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer(self.config)
        self.consumer.subscribe([self.topic], on_assign=self._assigned, on_revoke=self._revoked,
                                on_lost=self._lost)

    def _assigned(self, _consumer, partitions) -> None:
        self.ledger.assigned(self.name, [tp.partition for tp in partitions])

    def _revoked(self, _consumer, partitions) -> None:
        self._commit()
        for tp in partitions:
            self.pending.pop(tp.partition, None)
        self.ledger.released(self.name, [tp.partition for tp in partitions])

    def _lost(self, _consumer, partitions) -> None:
        for tp in partitions:
            self.pending.pop(tp.partition, None)
        self.ledger.released(self.name, [tp.partition for tp in partitions])

    def poll(self) -> None:
        from confluent_kafka import KafkaException

        for m in self.consumer.consume(500, 0.2):
            if m.error():
                raise KafkaException(m.error())
            if self.ledger.consumed(self.name, m.partition(), m.offset()):
                self.pending[m.partition()] = m.offset() + 1
        self._commit()

    def _commit(self) -> None:
        from confluent_kafka import KafkaException, TopicPartition

        todo = dict(self.pending)
        if not todo:
            return
        try:
            answer = self.consumer.commit(offsets=[TopicPartition(self.topic, p, o) for p, o in todo.items()],
                                          asynchronous=False)
            failed = {tp.partition for tp in answer if tp.error is not None}
        except KafkaException:
            failed = set(todo)
        for p, o in todo.items():
            if p not in failed and self.pending.get(p) == o:
                del self.pending[p]

    def close(self) -> None:
        if hasattr(self, "consumer"):
            self.consumer.close()


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
