"""KIP-848 acceptance: confluent-kafka 2.16 (librdkafka 2.16) with ``group.protocol=consumer``
against ``groupbroker serve`` (broker.testing.launcher.BrokerProcess, TEST_DEFAULTS: heartbeats
every 500 ms, sessions of 10 s), over real sockets.

* :func:`test_consumer_group_lifecycle` — 3 members consume a 6-partition topic exactly once, a
  4th joins, one leaves with ``close()``; no partition ever has two owners (checked from the
  members' own rebalance callbacks); committed offsets read back with ``committed()`` and
  resumed from by a fresh member.
* :func:`test_static_member_restart_keeps_its_partitions` — a static member (group.instance.id)
  closes and restarts within its session: same partitions, the other member untouched.
* :func:`test_regex_subscription_picks_up_new_topic` — ``^prefix-.*`` (librdkafka sends it as
  ``(^prefix-.*)``, matched broker-side with RE2) takes in a topic created after subscribing.
* :func:`test_describe_consumer_group` — AdminClient.describe_consumer_groups (librdkafka tries
  ConsumerGroupDescribe first): type CONSUMER, state STABLE, members with their assignments.
* :func:`test_list_consumer_groups_by_type` — AdminClient.list_consumer_groups (ListGroups v5)
  with the ``types`` filter.

With the consumer protocol librdkafka's rebalance callbacks are incremental (the partitions passed
are the change, not the whole assignment; ``rd_kafka_rebalance_protocol()`` is COOPERATIVE), and
confluent-kafka calls ``incremental_assign``/``incremental_unassign`` itself when the callback
does not: the callbacks here only record (and commit, on revoke). All consumers are polled from
the test's thread in turn, so the callbacks of all members run in one order: a member's
``on_revoke`` has run before the broker can hand that partition to another member (it waits for
the revoking member's acknowledgement, which librdkafka sends after the unassign).
"""

from __future__ import annotations

import logging
import re
from collections import Counter

import pytest

from broker.testing.launcher import TEST_DEFAULTS
from tests.support.processes import import_client, wait_until

ck = import_client("confluent_kafka")
from confluent_kafka.admin import AdminClient  # noqa: E402

from tests.support.confluent import LogLines, create_topics, poll_all, produce  # noqa: E402

Consumer, TopicPartition, KafkaException = (ck.Consumer, ck.TopicPartition,
                                             ck.KafkaException)
ConsumerGroupType, ConsumerGroupState = ck.ConsumerGroupType, ck.ConsumerGroupState

PARTITIONS = 6


@pytest.fixture
def broker(start_broker):
    """``groupbroker serve`` with the test defaults (KIP-848 heartbeats every 500 ms, sessions
    of 10 s)."""
    return start_broker(TEST_DEFAULTS)


# --- clients ---------------------------------------------------------------------------------

class Ownership:
    """Which member owns which partition, as the members' own callbacks say; every assign of a
    partition another member still owns is a violation."""

    def __init__(self):
        self.owner: dict[tuple[str, int], str] = {}
        self.violations: list[str] = []
        self.history: list[tuple[str, str, list]] = []

    def assigned(self, name: str, tps) -> None:
        self.history.append((name, "assign", tps))
        for tp in tps:
            other = self.owner.get(tp)
            if other is not None and other != name:
                self.violations.append(f"{tp} assigned to {name} while {other} owns it")
            self.owner[tp] = name

    def released(self, name: str, tps, kind: str) -> None:
        self.history.append((name, kind, tps))
        for tp in tps:
            if self.owner.get(tp) == name:
                del self.owner[tp]

    def of(self, name: str) -> set[tuple[str, int]]:
        return {tp for tp, n in self.owner.items() if n == name}


class Member:
    """One ``group.protocol=consumer`` member, polled from the test's thread.

    A record counts as delivered only if its member owned the partition (by the callbacks) when
    consume() returned it. After each consume() the member commits synchronously what it
    read; a failed commit (e.g. STALE_MEMBER_EPOCH, which librdkafka does not retry for manual
    commits) stays pending and goes out again with the next commit or in ``on_revoke``.
    """

    def __init__(self, name: str, bootstrap: str, group: str, topics: list[str],
                 ownership: Ownership, *, instance: str | None = None, debug: bool = False):
        self.name, self.ownership = name, ownership
        config = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
                  "group.protocol": "consumer", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                  "topic.metadata.refresh.interval.ms": 1000, "max.poll.interval.ms": 20000}
        if instance is not None:
            config["group.instance.id"] = instance
        self.log = LogLines()
        if debug:
            logger = logging.getLogger(f"rdkafka.{name}.{id(self)}")
            logger.propagate = False
            logger.setLevel(logging.DEBUG)
            logger.addHandler(self.log)
            config.update(debug="cgrp", logger=logger)
        self.consumer = Consumer(config)
        self.closed = False
        self.events: list[tuple[str, list]] = []
        self.delivered: list[tuple[str, int, int]] = []
        self.strays: list[tuple[str, int, int]] = []       # delivered while not owned
        self.pending: dict[tuple[str, int], int] = {}     # partition -> offset to commit
        self.commit_errors: list[str] = []
        self.consumer.subscribe(topics, on_assign=self._on_assign, on_revoke=self._on_revoke,
                                on_lost=self._on_lost)

    # the callbacks: no incremental_assign/unassign of our own, confluent-kafka does it
    def _on_assign(self, _consumer, partitions):
        tps = sorted((tp.topic, tp.partition) for tp in partitions)
        self.events.append(("assign", tps))
        self.ownership.assigned(self.name, tps)

    def _on_revoke(self, _consumer, partitions):
        tps = sorted((tp.topic, tp.partition) for tp in partitions)
        self.events.append(("revoke", tps))
        self._commit(tps)
        for tp in tps:
            if self.pending.pop(tp, None) is not None:
                self.commit_errors.append(f"{tp} revoked with uncommitted offsets")
        self.ownership.released(self.name, tps, "revoke")

    def _on_lost(self, _consumer, partitions):
        tps = sorted((tp.topic, tp.partition) for tp in partitions)
        self.events.append(("lost", tps))
        for tp in tps:
            self.pending.pop(tp, None)
        self.ownership.released(self.name, tps, "lost")

    def poll(self, timeout: float = 0.05) -> int:
        if self.closed:
            return 0
        messages = self.consumer.consume(500, timeout)
        for m in messages:
            if m.error():
                raise KafkaException(m.error())
            tp = (m.topic(), m.partition())
            if self.ownership.owner.get(tp) == self.name:
                self.delivered.append((tp[0], tp[1], m.offset()))
                self.pending[tp] = m.offset() + 1
            else:
                self.strays.append((tp[0], tp[1], m.offset()))
        self._commit(list(self.pending))
        return len(messages)

    def _commit(self, tps) -> None:
        todo = {tp: self.pending[tp] for tp in tps if tp in self.pending}
        if not todo:
            return
        try:
            result = self.consumer.commit(
                offsets=[TopicPartition(t, p, o) for (t, p), o in todo.items()], asynchronous=False)
            errors = {(r.topic, r.partition): r.error for r in result if r.error is not None}
        except KafkaException as e:
            errors = dict.fromkeys(todo, e.args[0])
        for tp, offset in todo.items():
            if tp in errors:
                self.commit_errors.append(f"{tp}@{offset}: {errors[tp]}")
            elif self.pending.get(tp) == offset:
                del self.pending[tp]

    @property
    def assignment(self) -> set[tuple[str, int]]:
        return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    @property
    def member_id(self) -> str:
        return self.consumer.memberid()

    def close(self) -> None:
        """close(): the revoke callback commits what is pending, then the leave heartbeat
        (member epoch -1, or -2 for a static member)."""
        if not self.closed:
            self.closed = True
            self.consumer.close()


def settle(members, ownership: Ownership, topic: str, timeout: float = 15.0) -> dict[str, set]:
    """Poll until the members (and no one else) own every partition of ``topic`` by their
    callbacks, evenly (the uniform assignor), and librdkafka's assignments agree; who owns what."""
    names = {m.name for m in members}

    def settled():
        for m in members:
            m.poll()
        owners = [ownership.owner.get((topic, p)) for p in range(PARTITIONS)]
        counts = Counter(owners)
        if set(owners) != names or max(counts.values()) - min(counts.values()) > 1:
            return None
        if any(m.assignment != ownership.of(m.name) for m in members):
            return None
        return {m.name: ownership.of(m.name) for m in members}
    return wait_until(settled, timeout, f"{sorted(names)} sharing the {PARTITIONS} partitions of {topic}")


def consume_all(members, expected: set, timeout: float = 15.0) -> None:
    """Poll until every record of ``expected`` was delivered to an owner and no commit is pending."""
    def done():
        for m in members:
            m.poll()
        got = {r for m in members for r in m.delivered}
        return expected <= got and not any(m.pending for m in members if not m.closed)
    wait_until(done, timeout, f"{len(expected)} records consumed and committed")


def check_exactly_once(produced: set, members) -> None:
    counts = Counter(r for m in members for r in m.delivered)
    twice = sorted(r for r, n in counts.items() if n > 1)
    errors = [e for m in members for e in m.commit_errors]
    assert not twice, (f"{len(twice)} records delivered twice to owners, e.g. {twice[:5]}; "
                       f"commit errors: {errors[:5]}")
    missing = produced - set(counts)
    assert not missing, f"{len(missing)} records never delivered, e.g. {sorted(missing)[:5]}"
    assert set(counts) == produced, f"unexpected records {sorted(set(counts) - produced)[:5]}"


def describe(bootstrap: str, group: str):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)


def wait_stable(bootstrap: str, group: str, members, timeout: float = 10.0):
    """Poll the members until describe_consumer_groups says STABLE; that description."""
    def stable():
        poll_all(members, 0.2)
        d = describe(bootstrap, group)
        return d if d.state == ConsumerGroupState.STABLE else None
    return wait_until(stable, timeout, f"group {group} STABLE")


def partitions_of(assignment) -> set[tuple[str, int]]:
    return {(tp.topic, tp.partition) for tp in assignment.topic_partitions}


# --- 1. the group lifecycle -----------------------------------------------------------------

def test_consumer_group_lifecycle(broker):
    """3 members -> a 4th joins -> one leaves -> committed offsets read back and resumed from.

    Every record is delivered to an owner exactly once; no partition ever has two owners at
    once by the callbacks; no partition is ever lost (a KIP-848 member gives up a partition only
    through a revoke it acknowledges).
    """
    topic, group = "orders", "kip848-lifecycle"
    create_topics(broker.bootstrap, (topic, PARTITIONS))
    produced = produce(broker.bootstrap, topic, 600, PARTITIONS)
    ownership = Ownership()
    members: list[Member] = []

    def member(name):
        m = Member(name, broker.bootstrap, group, [topic], ownership)
        members.append(m)
        return m

    try:
        # 1. three members: 2 partitions each, the 600 records exactly once
        c1, c2, c3 = member("c1"), member("c2"), member("c3")
        views = settle([c1, c2, c3], ownership, topic)
        assert sorted(len(v) for v in views.values()) == [2, 2, 2], views
        consume_all(members, produced)
        check_exactly_once(produced, members)

        # 2. a 4th member joins: 2+2+1+1, consumption goes on
        c4 = member("c4")
        views = settle([c1, c2, c3, c4], ownership, topic)
        assert sorted(len(v) for v in views.values()) == [1, 1, 2, 2], views
        produced |= produce(broker.bootstrap, topic, 600, PARTITIONS, start=600)
        consume_all(members, produced)
        check_exactly_once(produced, members)
        assert any(r[1] in {p for _, p in views["c4"]} for r in c4.delivered), "c4 read nothing"

        # 3. c2 leaves with close(): the three others take over its partitions
        leaver_parts = ownership.of("c2")
        c2.close()
        assert ownership.of("c2") == set(), "close() must revoke c2's partitions"
        survivors = [c1, c3, c4]
        views = settle(survivors, ownership, topic)
        assert sorted(len(v) for v in views.values()) == [2, 2, 2], views
        assert leaver_parts <= set().union(*views.values())
        produced |= produce(broker.bootstrap, topic, 600, PARTITIONS, start=1200)
        consume_all(members, produced)
        check_exactly_once(produced, members)

        assert not ownership.violations, ownership.violations
        assert not any(kind == "lost" for m in members for kind, _ in m.events), \
            [(m.name, m.events) for m in members]
        assert all(kind == "assign" for m in members for kind, _ in m.events[:1])

        # 4. the committed offsets are the log end (300 per partition), as committed() reads them
        ends = {p: c1.consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(PARTITIONS)}
        assert ends == dict.fromkeys(range(PARTITIONS), 300)
        committed = c3.consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)],
                                          timeout=10)
        assert all(tp.error is None for tp in committed), committed
        assert {tp.partition: tp.offset for tp in committed} == ends

        # 5. everyone leaves; a fresh member of the group resumes from the committed offsets
        more = produce(broker.bootstrap, topic, 60, PARTITIONS, start=1800)
        for m in survivors:
            m.close()
        assert not ownership.owner, ownership.owner
        fresh = member("c5")
        settle([fresh], ownership, topic)
        consume_all([fresh], more)
        poll_all([fresh], 0.3)
        assert set(fresh.delivered) == more, "the fresh member must start at the committed offsets"
        first = {}
        for _, p, o in fresh.delivered:
            first.setdefault(p, o)
        assert first == dict.fromkeys(range(PARTITIONS), 300)
        assert {tp.partition: tp.offset for tp in fresh.consumer.committed(
            [TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)} \
            == dict.fromkeys(range(PARTITIONS), 310)
        check_exactly_once(produced | more, members)
        assert not ownership.violations, ownership.violations
        assert not any(m.strays for m in members), [(m.name, m.strays[:5]) for m in members]
    finally:
        for m in members:
            m.close()


# --- 2. a static member's restart -------------------------------------------------------------

def test_static_member_restart_keeps_its_partitions(broker):
    """Static members s1 (inst-1) and s2 (inst-2); s1 closes (leave heartbeat with member epoch
    -2: a temporary leave) and a new consumer with inst-1 joins within the session timeout. It
    gets s1's partitions back; s2's callbacks see no change at all and its partitions stay."""
    topic, group = "static", "kip848-static"
    create_topics(broker.bootstrap, (topic, PARTITIONS))
    ownership = Ownership()
    members: list[Member] = []

    def member(name, instance):
        m = Member(name, broker.bootstrap, group, [topic], ownership, instance=instance)
        members.append(m)
        return m

    try:
        s1, s2 = member("s1", "inst-1"), member("s2", "inst-2")
        views = settle([s1, s2], ownership, topic)
        assert sorted(len(v) for v in views.values()) == [3, 3], views
        produced = produce(broker.bootstrap, topic, 300, PARTITIONS)
        consume_all(members, produced)
        old_id, old_parts, s2_parts = s1.member_id, views["s1"], views["s2"]
        mark = len(s2.events)
        log_mark = len(broker.log_text())

        s1.close()
        poll_all([s2], 0.5)
        s1b = member("s1b", "inst-1")
        wait_until(lambda: [m.poll() for m in (s2, s1b)] and s1b.assignment == old_parts
                   and ownership.of("s1b") == old_parts, 8, "the restarted static member's partitions")
        new_id = s1b.member_id
        assert new_id and new_id != old_id

        # the other member saw nothing: no assign, no revoke, the same partitions
        produced |= produce(broker.bootstrap, topic, 300, PARTITIONS, start=300)
        consume_all(members, produced)
        poll_all([s2, s1b], 1.5)                                    # 3 heartbeat intervals
        assert s2.events[mark:] == [], s2.events[mark:]
        assert s2.assignment == s2_parts == ownership.of("s2")
        assert ownership.of("s1b") == old_parts
        assert {(t, p) for t, p, _ in s1b.delivered} <= old_parts
        check_exactly_once(produced, members)
        assert not ownership.violations, ownership.violations

        # the broker's side: a temporary leave, then the replacement; nobody fenced
        log = broker.log_text()[log_mark:]
        assert re.search(rf"static member {re.escape(old_id)} \(instance inst-1\) left temporarily", log), log
        assert "session expired" not in log, log
        assert re.search(rf"static member \(instance inst-1\) rejoins as {re.escape(new_id)}, "
                         rf"replacing {re.escape(old_id)}", log), log
    finally:
        for m in members:
            m.close()


# --- 3. a regex subscription takes in a new topic ----------------------------------------------

def test_regex_subscription_picks_up_new_topic(broker):
    """Subscribed to ``^prefix-.*`` while only prefix-old exists; prefix-new, created afterwards
    with the AdminClient, is assigned and read within seconds; other-new is not."""
    group = "kip848-regex"
    create_topics(broker.bootstrap, ("prefix-old", 2), ("other-old", 2))
    ownership = Ownership()
    consumer = Member("r1", broker.bootstrap, group, ["^prefix-.*"], ownership, debug=True)
    try:
        wait_until(lambda: consumer.poll() >= 0 and consumer.assignment
                   == {("prefix-old", 0), ("prefix-old", 1)}, 10, "prefix-old assigned")

        # what librdkafka sent: its regexes combined into one group, no topic names
        sent = {m.group(1, 2) for line in consumer.log.lines
                if (m := re.search(r'subscribed topics "([^"]*)", subscribed topic regex "([^"]*)"', line))}
        assert ("", "(^prefix-.*)") in sent, sent

        create_topics(broker.bootstrap, ("prefix-new", 3), ("other-new", 3))
        produced = produce(broker.bootstrap, "prefix-new", 30, 3)
        produce(broker.bootstrap, "other-new", 30, 3)
        consume_all([consumer], produced, timeout=10)
        assert consumer.assignment == {("prefix-old", 0), ("prefix-old", 1), ("prefix-new", 0),
                                       ("prefix-new", 1), ("prefix-new", 2)}
        assert {r[0] for r in consumer.delivered} == {"prefix-new"}
        assert set(consumer.delivered) == produced
        assert not consumer.strays, consumer.strays[:5]
    finally:
        consumer.close()


# --- 4. ConsumerGroupDescribe ----------------------------------------------------------------

def test_describe_consumer_group(broker):
    """describe_consumer_groups of a consumer group: type CONSUMER, state STABLE, the uniform
    assignor, each member with its client id, its assignment and its target assignment."""
    topic, group = "described", "kip848-describe"
    create_topics(broker.bootstrap, (topic, PARTITIONS))
    ownership = Ownership()
    members = [Member(name, broker.bootstrap, group, [topic], ownership) for name in ("d1", "d2")]
    try:
        views = settle(members, ownership, topic)
        description = wait_stable(broker.bootstrap, group, members)
        assert description.group_id == group
        assert description.type == ConsumerGroupType.CONSUMER
        assert description.state == ConsumerGroupState.STABLE
        assert description.partition_assignor == "uniform"
        assert not description.is_simple_consumer_group
        described = {d.member_id: d for d in description.members}
        assert set(described) == {m.member_id for m in members}
        for m in members:
            d = described[m.member_id]
            assert d.client_id == m.name
            assert d.group_instance_id is None
            assert partitions_of(d.assignment) == views[m.name] == m.assignment
            assert partitions_of(d.target_assignment) == views[m.name]
    finally:
        for m in members:
            m.close()


# --- 5. ListGroups v5 with a type filter ----------------------------------------------------

def test_list_consumer_groups_by_type(broker):
    """A consumer group and a classic group side by side: list_consumer_groups with ``types``
    {CONSUMER} shows only the first (type CONSUMER, STABLE), {CLASSIC} only the second."""
    topic = "listed"
    create_topics(broker.bootstrap, (topic, PARTITIONS))
    ownership = Ownership()
    modern = Member("l1", broker.bootstrap, "kip848-listed", [topic], ownership)
    classic = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "classic-listed",
                        "group.protocol": "classic", "session.timeout.ms": 6000,
                        "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest"})
    classic.subscribe([topic])
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    def listing(**kw):
        result = admin.list_consumer_groups(request_timeout=10, **kw).result(15)
        assert not result.errors, result.errors
        return {g.group_id: g for g in result.valid}

    try:
        settle([modern], ownership, topic)
        wait_until(lambda: classic.poll(0.1) is None and classic.assignment(), 15, "classic assignment")

        def stable():
            poll_all([modern], 0.2)
            listed = listing().get("kip848-listed")
            return listed is not None and listed.state == ConsumerGroupState.STABLE
        wait_until(stable, 10, "kip848-listed listed as STABLE")

        consumer_only = listing(types={ConsumerGroupType.CONSUMER})
        assert set(consumer_only) == {"kip848-listed"}, consumer_only
        g = consumer_only["kip848-listed"]
        assert g.type == ConsumerGroupType.CONSUMER
        assert g.state == ConsumerGroupState.STABLE
        assert not g.is_simple_consumer_group

        classic_only = listing(types={ConsumerGroupType.CLASSIC})
        assert set(classic_only) == {"classic-listed"}, classic_only
        assert classic_only["classic-listed"].type == ConsumerGroupType.CLASSIC

        everything = listing()
        assert {"kip848-listed", "classic-listed"} <= set(everything)
        assert everything["kip848-listed"].type == ConsumerGroupType.CONSUMER
        stable_consumer = listing(types={ConsumerGroupType.CONSUMER},
                                  states={ConsumerGroupState.STABLE})
        assert set(stable_consumer) == {"kip848-listed"}
    finally:
        modern.close()
        classic.close()
