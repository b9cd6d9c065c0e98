"""Groups mixing both protocols (KIP-848 interoperability) with real clients against
``groupbroker serve`` (TEST_DEFAULTS: consumer-protocol heartbeats every 500 ms, sessions of
10 s), under Kafka's default ``group.consumer.migration.policy`` (bidirectional).

* :func:`test_mixed_group_ends_as_consumer_group` — the acceptance case: kafka-python (classic)
  and confluent-kafka (``group.protocol=consumer``) members in one group, in both orders: the
  classic members first (the live classic group is upgraded when the first consumer-protocol
  member joins) and the consumer members first (classic members join a consumer group). Every
  record is consumed exactly once, no partition is ever held by two members at once, and once
  the classic members have left the group is a consumer group with only the consumer members,
  as ListGroups v5 and ConsumerGroupDescribe show it (AdminClient.list_consumer_groups and
  describe_consumer_groups).
* :func:`test_describe_tells_classic_members_apart` — ConsumerGroupDescribe v1 (KIP-1099) gives
  each member of a mixed group its MemberType: 0 for a classic member, 1 for a consumer one.
* :func:`test_last_consumer_member_leaves_downgrade` — two classic members and one
  consumer-protocol member (either first); when that member leaves the group becomes a classic
  group again (Kafka's convertToClassicGroup) and the classic members rejoin it and keep
  consuming.

Every member runs on its own thread (each client object stays on its thread) and reports what it
owns from its own rebalance callbacks: kafka-python's ConsumerRebalanceListener (eager: it gives
up everything before it rejoins), confluent-kafka's incremental on_assign/on_revoke/on_lost.
A callback that releases a partition runs before the member tells the coordinator (the classic
member's JoinGroup or LeaveGroup, the consumer member's next heartbeat), and a callback that
takes one runs after the coordinator handed it over, so one table of owners across the threads
sees any partition the coordinator handed to two members at once. Each member commits what it
consumed after each batch (and, for confluent-kafka, retries in on_revoke what failed), so a
partition's next owner starts where the last one stopped.
"""

from __future__ import annotations

import sys

import pytest

from kafka_client.blocking import BlockingClient
from broker.testing.launcher import TEST_DEFAULTS
from protocol import REQUESTS
from protocol.api_keys import ApiKey
from tests.support.processes import REPO, import_client, wait_until

ck = import_client("confluent_kafka")
kafka = import_client("kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

sys.path.insert(0, str(REPO / "examples"))
from mixed_members import ClassicMember, ConsumerMember, Ledger, Member  # noqa: E402

ConsumerGroupType = ck.ConsumerGroupType

PARTITIONS = 6
RECORDS = 600            # produced at each step


@pytest.fixture
def broker(start_broker):
    """``groupbroker serve`` with the test defaults; the migration policy is Kafka's default."""
    return start_broker(TEST_DEFAULTS)


# --- the group as the broker shows it ----------------------------------------------------------

class Scenario:
    def __init__(self, broker, group: str, topic: str):
        self.bootstrap, self.group, self.topic = broker.bootstrap, group, topic
        self.ledger = Ledger()
        self.members: dict[str, Member] = {}
        self.produced: set[tuple[int, int]] = set()
        self.admin = AdminClient({"bootstrap.servers": self.bootstrap})

    def start(self, cls, *names: str) -> None:
        """Start members; kafka-python ones one at a time, each once the one before holds
        partitions: kafka-python 3.0.12 members joining in the same instant sometimes leave
        one of them stuck after its SyncGroup until its session expires (a client bug, seen
        with classic groups alone)."""
        for name in names:
            if cls is ClassicMember and any(isinstance(m, ClassicMember) for m in self.members.values()):
                previous = [n for n, m in self.members.items() if isinstance(m, ClassicMember)]
                wait_until(lambda: all(self.ledger.owners().get(n) for n in previous), 30,
                           f"{previous} holding partitions")
            self.members[name] = cls(name, self.ledger, self.bootstrap, self.group, self.topic)

    def stop(self, *names: str) -> None:
        for name in names:
            self.members[name].stop()
            self.check_members()

    def running(self) -> list[str]:
        return sorted(n for n, m in self.members.items() if m.is_alive())

    def check_members(self) -> None:
        failed = {n: repr(m.error) for n, m in self.members.items() if m.error is not None}
        assert not failed, f"members failed: {failed}\n{self.story()}"

    def produce(self, count: int = RECORDS) -> None:
        failed = []

        def report(err, msg):
            if err is not None:
                failed.append(err)
            else:
                self.produced.add((msg.partition(), msg.offset()))

        producer = ck.Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})
        for i in range(count):
            producer.produce(self.topic, value=b"v%d" % i, partition=i % PARTITIONS, on_delivery=report)
            producer.poll(0)
        assert producer.flush(15) == 0 and not failed, failed[:3]

    def settle(self, names: list[str], timeout: float = 30.0) -> dict[str, list[int]]:
        """Wait until exactly ``names`` hold every partition, evenly, by their callbacks, and
        every record produced so far was delivered; who holds what."""
        def settled():
            self.check_members()
            owners = self.ledger.owners()
            counts = sorted(len(ps) for ps in owners.values())
            if sorted(owners) != sorted(names) or sum(counts) != PARTITIONS or counts[-1] - counts[0] > 1:
                return None
            return owners if self.produced <= set(self.ledger.delivered) else None
        try:
            return wait_until(settled, timeout, f"{names} holding the {PARTITIONS} partitions")
        except AssertionError:
            raise AssertionError(f"{names} never settled: owners {self.ledger.owners()}, "
                                 f"{len(set(self.ledger.delivered) & self.produced)}/{len(self.produced)} "
                                 f"records delivered\n{self.story()}") from None

    def listing(self):
        """This group as ListGroups v5 lists it (AdminClient.list_consumer_groups), or None."""
        result = self.admin.list_consumer_groups(request_timeout=10).result(15)
        assert not result.errors, result.errors
        return next((g for g in result.valid if g.group_id == self.group), None)

    def group_type(self):
        listed = self.listing()
        return None if listed is None else listed.type

    def describe(self):
        """describe_consumer_groups: ConsumerGroupDescribe, or DescribeGroups for a classic group."""
        return self.admin.describe_consumer_groups([self.group], request_timeout=10)[self.group].result(15)

    def check_exactly_once(self) -> None:
        twice = sorted(r for r, n in self.ledger.delivered.items() if n > 1)
        missing = self.produced - set(self.ledger.delivered)
        errors = [e for m in self.members.values() for e in getattr(m, "commit_errors", [])]
        assert not twice, f"{len(twice)} records delivered twice, e.g. {twice[:5]}; commit errors " \
                          f"{errors[:5]}\n{self.story()}"
        assert not missing, f"{len(missing)} records never delivered, e.g. {sorted(missing)[:5]}"
        assert set(self.ledger.delivered) == self.produced

    def check_no_double_ownership(self) -> None:
        assert not self.ledger.violations, f"{self.ledger.violations[:10]}\n{self.story()}"

    def story(self) -> str:
        start = self.ledger.history[0][0] if self.ledger.history else 0
        return "\n".join(f"  {t - start:6.2f}s {name} {how} {ps}"
                         for t, name, how, ps in self.ledger.history[-60:])

    def close(self) -> None:
        for m in self.members.values():
            if m.is_alive():
                m.stop()


@pytest.fixture
def scenario(broker, request):
    group = f"mixed-{request.node.callspec.id if hasattr(request.node, 'callspec') else 'group'}"
    topic = f"{group}-topic"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)], operation_timeout=10).values():
        future.result(15)
    s = Scenario(broker, group, topic)
    yield s
    s.close()


# --- 1. the acceptance case ----------------------------------------------------------------------

@pytest.mark.parametrize("first", ["classic", "consumer"])
def test_mixed_group_ends_as_consumer_group(scenario, first):
    """2 kafka-python + 2 confluent-kafka members in one group (``first`` joins first and holds
    its assignment before the others start: Kafka cannot convert a classic group still in its
    first rebalance), all records consumed exactly once with no double ownership; then the
    classic members close and the group is a consumer group with the consumer members only."""
    s = scenario
    classic, modern = ["k1", "k2"], ["c1", "c2"]
    early, late = (classic, modern) if first == "classic" else (modern, classic)
    early_cls, late_cls = ((ClassicMember, ConsumerMember) if first == "classic"
                           else (ConsumerMember, ClassicMember))

    s.produce()
    s.start(early_cls, *early)
    views = s.settle(early)
    assert sorted(len(v) for v in views.values()) == [3, 3], views
    assert s.group_type() == (ConsumerGroupType.CLASSIC if first == "classic" else ConsumerGroupType.CONSUMER)

    # the others join: a mixed group, which is a consumer group whoever came first
    s.produce()
    s.start(late_cls, *late)
    views = s.settle(classic + modern)
    assert sorted(len(v) for v in views.values()) == [1, 1, 2, 2], views
    # holding their partitions, the members may still acknowledge the last epoch in a heartbeat
    # (Reconciling, which librdkafka lists as UNKNOWN): Stable follows within a few heartbeats
    listed = wait_until(lambda: (g := s.listing()) and g.state == ck.ConsumerGroupState.STABLE and g,
                        10, "the group listed Stable")
    assert listed.type == ConsumerGroupType.CONSUMER, listed
    description = s.describe()
    assert description.type == ConsumerGroupType.CONSUMER
    assert sorted(m.client_id for m in description.members) == sorted(classic + modern)
    s.produce()
    s.settle(classic + modern)

    # the classic members leave: a consumer group of the consumer members
    s.stop(*classic)
    views = s.settle(modern)
    assert sorted(len(v) for v in views.values()) == [3, 3], views
    s.produce()
    s.settle(modern)
    listed = s.listing()
    assert listed is not None and listed.type == ConsumerGroupType.CONSUMER, listed
    description = s.describe()
    assert description.type == ConsumerGroupType.CONSUMER
    assert sorted(m.client_id for m in description.members) == modern
    assert {m.member_id for m in description.members} == \
        {s.members[n].member_id for n in modern}

    s.check_no_double_ownership()
    s.check_exactly_once()


# --- 2. the downgrade ---------------------------------------------------------------------------

@pytest.mark.parametrize("first", ["classic", "consumer"])
def test_last_consumer_member_leaves_downgrade(scenario, first):
    """k1, k2 (classic) and c1 (consumer) in one group, a consumer group: with ``first`` =
    classic, k1 and k2 form a classic group that c1's join upgrades; with consumer, c1 makes a
    consumer group that k1 and k2 join. Then c1 closes: the last consumer-protocol member
    leaves, so the group becomes a classic group (Kafka's convertToClassicGroup, then a
    rebalance), and k1, k2 rejoin it and consume what follows."""
    s = scenario
    s.produce()
    if first == "classic":
        s.start(ClassicMember, "k1", "k2")
        s.settle(["k1", "k2"])
        assert s.group_type() == ConsumerGroupType.CLASSIC
        s.produce()
        s.start(ConsumerMember, "c1")
    else:
        s.start(ConsumerMember, "c1")
        s.settle(["c1"])
        assert s.group_type() == ConsumerGroupType.CONSUMER
        s.produce()
        s.start(ClassicMember, "k1", "k2")
    views = s.settle(["k1", "k2", "c1"])
    assert sorted(len(v) for v in views.values()) == [2, 2, 2], views
    assert s.group_type() == ConsumerGroupType.CONSUMER

    s.stop("c1")
    s.produce()
    views = s.settle(["k1", "k2"])
    assert sorted(len(v) for v in views.values()) == [3, 3], views
    listed = s.listing()
    assert listed is not None and listed.type == ConsumerGroupType.CLASSIC, listed
    description = s.describe()
    assert description.type == ConsumerGroupType.CLASSIC
    assert sorted(m.client_id for m in description.members) == ["k1", "k2"]
    # the classic members keep consuming in their classic group
    s.produce()
    s.settle(["k1", "k2"])
    assert s.group_type() == ConsumerGroupType.CLASSIC

    s.check_no_double_ownership()
    s.check_exactly_once()


# --- 3. ConsumerGroupDescribe's member types ----------------------------------------------------

def test_describe_tells_classic_members_apart(scenario, broker):
    """A mixed group of k1 (kafka-python) and c1 (confluent-kafka, consumer protocol):
    ConsumerGroupDescribe v1 lists k1 with MemberType 0 (classic) and c1 with 1 (consumer),
    as Kafka 4 does (KIP-1099; -1 means unknown, v0 has no such field)."""
    s = scenario
    s.start(ClassicMember, "k1")
    s.settle(["k1"])
    s.start(ConsumerMember, "c1")
    s.settle(["k1", "c1"])
    host, port = broker.bootstrap.rsplit(":", 1)
    conn = BlockingClient(host, int(port), client_id="describe", timeout=10)
    try:
        answer = conn.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, REQUESTS[ApiKey.CONSUMER_GROUP_DESCRIBE].cls(
            group_ids=(s.group,), include_authorized_operations=False))
    finally:
        conn.close()
    described = answer.groups[0]
    assert described.error_code == 0, described
    types = {m.client_id: m.member_type for m in described.members}
    assert types == {"k1": 0, "c1": 1}, types
