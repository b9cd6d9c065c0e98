"""Issue 5 interop matrix: confluent-kafka 2.16.0 (librdkafka 2.16) against ``groupbroker serve``.

The broker is its own process (broker.testing.launcher.BrokerProcess); the consumers are librdkafka
instances in this process, all polled from the test's thread in turn (each ``consume()`` also
serves that consumer's rebalance callbacks, so a rebalance only proceeds while we poll).

* :func:`test_group_lifecycle_confluent` — produce, 3 members join and consume everything with
  a synchronous commit after every batch, a 4th joins, one leaves with ``close()``
  (LeaveGroup), the committed offsets read back with ``Consumer.committed``; once with the eager
  ``range`` assignor and once with ``cooperative-sticky`` (the incremental protocol: the
  callbacks only record, the client does the incremental_assign/incremental_unassign).
* :func:`test_static_member_restart_without_rebalance` — KIP-345: a static member
  (group.instance.id) closed without a LeaveGroup and restarted within its session timeout
  takes its old place: no rebalance, same generation, same partitions.

The member's generation and member id come from ``consumer_group_metadata()``: in
confluent-kafka 2.16 it is librdkafka's serialized group metadata, ``b"CGMDv2:"``, the
generation as a native int32, then NUL-terminated group id and member id (see
:func:`group_metadata`). The group leader comes from librdkafka's ``cgrp`` debug log.
"""

from __future__ import annotations

import logging
import re
import struct
import time

import pytest

from tests.support.processes import (BatchRecorder, check_exactly_once, committed_records, import_client,
                                     settled_generation, state_changes, wait_until)

ck = import_client("confluent_kafka")
from confluent_kafka.admin import AdminClient  # noqa: E402

from tests.support.confluent import LogLines, create_topics, poll_all, produce  # noqa: E402

Consumer, TopicPartition, KafkaException = (ck.Consumer, ck.TopicPartition,
                                             ck.KafkaException)

PARTITIONS = 6


def offsets(records: set) -> set[tuple[int, int]]:
    """(partition, offset) of produced (topic, partition, offset) records."""
    return {(p, o) for _, p, o in records}


def group_metadata(consumer) -> tuple[int, str]:
    """(generation, member id) as librdkafka last knew them (-1/"" before the first join)."""
    md = consumer.consumer_group_metadata()
    assert md[:7] == b"CGMDv2:", f"unexpected group metadata format {md[:16]!r}"
    generation, = struct.unpack_from("=i", md, 7)
    _group, member = md[11:].split(b"\0")[:2]
    return generation, member.decode()


class Member:
    """One confluent-kafka group member driven from the test's thread."""

    def __init__(self, name: str, bootstrap: str, group: str, topic: str, *, strategy: str = "range",
                 instance: str | None = None, session_ms: int = 6000, debug: bool = False):
        self.name, self.topic = name, topic
        self.recorder = BatchRecorder(name)
        self.events: list[tuple[str, list[int]]] = []
        config = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "session.timeout.ms": session_ms, "heartbeat.interval.ms": 300,
                  "max.poll.interval.ms": 10000, "partition.assignment.strategy": strategy,
                  "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 2000}
        self.log = LogLines()
        if instance is not None:
            config["group.instance.id"] = instance
        if debug:
            logger = logging.getLogger(f"rdkafka.{name}.{id(self)}")
            logger.propagate = False
            logger.setLevel(logging.DEBUG)
            logger.addHandler(self.log)
            config.update(debug="cgrp", logger=logger)
        self.consumer = Consumer(config)
        self.closed = False
        self.pending: dict[int, tuple[int, list[dict]]] = {}   # partition -> (offset, batches)
        self.commit_errors: list[str] = []
        # The callbacks only record: without an assign()/incremental_assign() call of their
        # own, confluent-kafka applies the (incremental, for cooperative-sticky) change itself.
        self.consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke,
                                on_lost=self._on_lost)

    def _on_assign(self, _consumer, partitions):
        self.events.append(("assign", sorted(tp.partition for tp in partitions)))

    def _on_revoke(self, _consumer, partitions):
        revoked = sorted(tp.partition for tp in partitions)
        self.events.append(("revoke", revoked))
        self._commit(revoked)             # last chance; what still fails is redelivered
        self._drop(revoked)

    def _on_lost(self, _consumer, partitions):
        lost = sorted(tp.partition for tp in partitions)
        self.events.append(("lost", lost))
        self._drop(lost)

    def poll(self, timeout: float = 0.05) -> int:
        """One consume() of up to 500 records, then a synchronous commit of what it returned
        (before the next consume); the number of records.

        A failed commit (e.g. ILLEGAL_GENERATION for a commit that crossed a rebalance) leaves
        the offsets pending: they go out again with the next commit while this member still
        owns the partition (with cooperative-sticky it usually keeps it, and librdkafka does
        not rewind, so nobody would read those records again), and are dropped when the
        partition is revoked or lost (the next owner reads them again from the committed
        offset). Each partition's records of a consume() are one batch for check_exactly_once.
        """
        if self.closed:
            return 0
        messages = self.consumer.consume(500, timeout)
        by_partition: dict[int, list[int]] = {}
        for m in messages:
            if m.error():
                raise KafkaException(m.error())
            by_partition.setdefault(m.partition(), []).append(m.offset())
        for p, offsets in by_partition.items():
            entry = self.recorder.batch([(p, o) for o in offsets])
            offset, entries = self.pending.get(p, (0, []))
            self.pending[p] = (max(offset, max(offsets) + 1), entries + [entry])
        self._commit(list(self.pending))
        return len(messages)

    def _commit(self, partitions) -> None:
        todo = {p: self.pending[p] for p in partitions if p in self.pending}
        if not todo:
            return
        try:
            result = self.consumer.commit(
                offsets=[TopicPartition(self.topic, p, o) for p, (o, _) in todo.items()],
                asynchronous=False)
            errors = {tp.partition: tp.error for tp in result if tp.error is not None}
        except KafkaException as e:
            errors = dict.fromkeys(todo, e)
        for p, (_, entries) in todo.items():
            if p in errors:
                self.commit_errors.append(str(errors[p]))
                for entry in entries:
                    entry["error"] = str(errors[p])
            else:
                for entry in entries:
                    BatchRecorder.committed(entry, True)
                del self.pending[p]

    def _drop(self, partitions) -> None:
        for p in partitions:
            for entry in self.pending.pop(p, (0, []))[1]:
                BatchRecorder.committed(entry, False, entry["error"] or "partition revoked")

    @property
    def assignment(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    @property
    def generation(self) -> int:
        return group_metadata(self.consumer)[0]

    @property
    def member_id(self) -> str:
        return group_metadata(self.consumer)[1]

    def is_leader(self) -> bool:
        """Whether librdkafka's last JoinGroup response named this member the leader."""
        answers = [line for line in self.log.lines if "JoinGroup response:" in line]
        return bool(answers) and "(me)" in answers[-1].split("LeaderId", 1)[-1].split(",", 1)[0]

    def close(self) -> None:
        """close(): the revoke callback commits what is pending; LeaveGroup unless static."""
        if not self.closed:
            self.closed = True
            self.consumer.close()
            self._drop(list(self.pending))


def settle(members, timeout: float, newer_than: int = 0) -> int:
    """Poll every member until they share one generation newer than ``newer_than``, each owns
    at least one partition and together they own each partition once; that generation."""
    def settled():
        for m in members:
            m.poll()
        return settled_generation([(m.assignment, m.generation) for m in members], PARTITIONS, newer_than)
    return wait_until(settled, timeout, f"{len(members)} members sharing {PARTITIONS} partitions")


def consume_until_committed(members, produced: set, timeout: float) -> None:
    """Poll the open ``members`` until every record in ``produced`` was committed by one of
    them (closed members included: they committed part of it before)."""
    def done():
        for m in members:
            m.poll()
        return committed_records([m.recorder for m in members]) >= produced
    wait_until(done, timeout, f"{len(produced)} records committed")


def describe(bootstrap: str, group: str):
    """DescribeGroups through confluent-kafka's AdminClient."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.describe_consumer_groups([group])[group].result(10)


def read_committed(member, topic: str) -> dict[int, int]:
    tps = member.consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
    assert all(tp.error is None for tp in tps), tps
    return {tp.partition: tp.offset for tp in tps}


# --- 1. the group lifecycle, eager and cooperative ---------------------------------------------

@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_group_lifecycle_confluent(broker, strategy):
    """produce -> 3 members consume everything -> a 4th joins -> one leaves -> offsets read back.

    Every record is committed exactly once; a record is read twice only if the earlier read's
    commit failed (check_exactly_once). The broker's log shows the rebalances: the 4th member
    added in Stable, the leaver's LeaveGroup ("members left the group"). With
    cooperative-sticky, no member ever has a partition revoked that it keeps, and a member
    joining or leaving moves only the partitions that must move.
    """
    topic, group = "orders", f"lifecycle-{strategy}"
    create_topics(broker.bootstrap, (topic, PARTITIONS))
    produced = offsets(produce(broker.bootstrap, topic, 1200, PARTITIONS))
    members = []

    def member(name):
        m = Member(name, broker.bootstrap, group, topic, strategy=strategy)
        members.append(m)
        return m

    try:
        # 1. three members: the 1,200 records already there and 1,200 more once they settled
        c1, c2, c3 = member("c1"), member("c2"), member("c3")
        gen3 = settle([c1, c2, c3], 20)
        assert all(len(m.assignment) == 2 for m in (c1, c2, c3))
        produced |= offsets(produce(broker.bootstrap, topic, 1200, PARTITIONS, start=1200))
        consume_until_committed(members, produced, 15)
        assert check_exactly_once(produced, [m.recorder for m in members])["committed"] == 2400
        before_c4 = {m.name: m.assignment for m in (c1, c2, c3)}
        mark = {m.name: len(m.events) for m in (c1, c2, c3)}

        # 2. a 4th member joins: the group rebalances to 2+2+1+1
        c4 = member("c4")
        gen4 = settle([c1, c2, c3, c4], 20, newer_than=gen3)
        assert sorted(len(m.assignment) for m in members) == [1, 1, 2, 2]
        c4_parts = c4.assignment
        changes = state_changes(broker.log_text(), group)
        assert any(c["before"] == "Stable" and c["after"] == "PreparingRebalance"
                   and c["generation"] == gen3 and "adding member c4-" in c["reason"] for c in changes)
        assert {"before": "CompletingRebalance", "after": "Stable", "generation": gen4} \
            .items() <= next(c for c in reversed(changes) if c["after"] == "Stable").items()
        more = offsets(produce(broker.bootstrap, topic, 1200, PARTITIONS, start=2400))
        produced |= more
        consume_until_committed(members, produced, 15)
        assert check_exactly_once(produced, [m.recorder for m in members])["committed"] == 3600
        assert any(r in more for b in c4.recorder.batches() for r in b["records"]), "c4 read nothing"

        during_c4 = {m.name: [e for e in m.events[mark[m.name]:]] for m in (c1, c2, c3)}

        # 3. c2 leaves with close() (LeaveGroup): the 3 others take over its partitions
        leaver_id, leaver_parts = c2.member_id, c2.assignment
        c2.close()
        survivors = [c1, c3, c4]
        gen5 = settle(survivors, 15, newer_than=gen4)
        assert gen5 == gen4 + 1, "a LeaveGroup is one rebalance, nothing left to revoke"
        assert leaver_parts <= set().union(*(m.assignment for m in survivors))
        description = describe(broker.bootstrap, group)
        assert description.state.name == "STABLE" and description.partition_assignor == strategy
        assert {d.member_id for d in description.members} == {m.member_id for m in survivors}
        changes = state_changes(broker.log_text(), group)
        left = [c for c in changes if c["reason"] == "members left the group"]
        assert left and left[0]["generation"] == gen4 and leaver_id not in left[0]["members"]
        produced |= offsets(produce(broker.bootstrap, topic, 1200, PARTITIONS, start=3600))
        consume_until_committed(members, produced, 15)
        summary = check_exactly_once(produced, [m.recorder for m in members])
        assert summary["committed"] == 4800

        # 4. the committed offsets read back are exactly what was consumed: the log end
        consumed_to = {}
        for m in members:
            for b in m.recorder.batches():
                for p, o in b["records"]:
                    consumed_to[p] = max(consumed_to.get(p, 0), o + 1)
        ends = {p: c1.consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(PARTITIONS)}
        assert ends == {p: 800 for p in range(PARTITIONS)}
        assert read_committed(c3, topic) == consumed_to == ends

        revoked = {name: [set(ps) for kind, ps in events if kind == "revoke"]
                   for name, events in during_c4.items()}
        if strategy == "cooperative-sticky":
            # incremental: while c4 joined, the three gave up only what moved to c4, each at
            # most one partition of its two, and none was ever lost
            assert set().union(*(ps for sets in revoked.values() for ps in sets)) == c4_parts
            for name, sets in revoked.items():
                assert all(len(ps) < len(before_c4[name]) and ps <= before_c4[name] for ps in sets), (
                    name, before_c4[name], sets)
            assert not any(kind == "lost" for m in members for kind, _ in m.events)
        else:
            # eager: c4's join made each of the three revoke everything it held first
            for name, sets in revoked.items():
                assert sets and sets[0] == before_c4[name], (name, before_c4[name], sets)
        for m in survivors:
            m.close()
        broker.wait_for_log(rf"group {group}: \w+ -> Empty \(generation \d+, members \[\]\)", timeout=10)
    finally:
        for m in members:
            m.close()


# --- 2. static membership: a restart within the session timeout is not a rebalance ------------

@pytest.mark.parametrize("restarted", ["leader", "follower"])
def test_static_member_restart_without_rebalance(broker, restarted):
    """KIP-345 with librdkafka: three static members settle; one (the group leader, or not) is
    closed — librdkafka sends no LeaveGroup for a static member — and a new consumer with the
    same group.instance.id joins within the session timeout (10 s). The broker hands it the old
    member's place: a new member id, the same generation, the same partitions, resuming at the
    committed offsets, and no state change of the group at all (no "-> PreparingRebalance").
    """
    topic, group = "static", f"static-{restarted}"
    create_topics(broker.bootstrap, (topic, PARTITIONS))
    members = []

    def member(name, instance):
        m = Member(name, broker.bootstrap, group, topic, instance=instance, session_ms=10000,
                   debug=True)
        members.append(m)
        return m

    try:
        s1, s2, s3 = member("s1", "inst-1"), member("s2", "inst-2"), member("s3", "inst-3")
        gen = settle([s1, s2, s3], 20)
        produced = offsets(produce(broker.bootstrap, topic, 600, PARTITIONS))
        consume_until_committed(members, produced, 15)
        leader = wait_until(lambda: [m for m in (s1, s2, s3) if m.is_leader()], 5, "the leader")
        assert len(leader) == 1, "exactly one member must have been told it leads"
        victim = leader[0] if restarted == "leader" else next(m for m in (s1, s2, s3)
                                                              if m is not leader[0])
        others = [m for m in (s1, s2, s3) if m is not victim]
        instance = {s1: "inst-1", s2: "inst-2", s3: "inst-3"}[victim]
        old_id, old_parts = victim.member_id, victim.assignment
        assert old_id.startswith(instance + "-")
        views = {m.name: m.assignment for m in others}
        mark = len(broker.log_text())

        restarted_at = time.monotonic()
        victim.close()                                         # no LeaveGroup: static member
        poll_all(others, 0.5)                                  # the others keep heartbeating
        successor = member(victim.name + "'", instance)
        wait_until(lambda: [m.poll() for m in others + [successor]] and successor.assignment,
                   8, "the restarted static member's assignment")
        assert time.monotonic() - restarted_at < 10, "not within the session timeout"
        new_gen, new_id = group_metadata(successor.consumer)
        assert new_gen == gen, f"generation changed from {gen} to {new_gen}"
        assert new_id != old_id and new_id.startswith(instance + "-")
        assert successor.assignment == old_parts
        assert not successor.is_leader(), "an old JoinGroup version must not make it the leader"

        # it resumes at the committed offsets and the group keeps working
        more = offsets(produce(broker.bootstrap, topic, 600, PARTITIONS, start=600))
        produced |= more
        consume_until_committed(members, produced, 15)
        assert check_exactly_once(produced, [m.recorder for m in members])["committed"] == 1200
        assert successor.recorder.partitions() == old_parts
        poll_all(others + [successor], 1.5)                    # 5 heartbeat intervals

        log = broker.log_text()[mark:]
        assert not re.search(rf"group {re.escape(group)}: \w+ -> PreparingRebalance", log), log
        assert state_changes(log, group) == [], "the group changed state during the restart"
        assert not re.search(rf"removed member {re.escape(old_id)}", log)
        assert "FENCED_INSTANCE_ID" not in log
        for m in others:
            assert m.generation == gen and m.assignment == views[m.name]

        description = describe(broker.bootstrap, group)
        assert description.state.name == "STABLE"
        described = {d.member_id: d for d in description.members}
        assert set(described) == {m.member_id for m in others + [successor]}
        assert described[new_id].group_instance_id == instance
        assert {tp.partition for tp in described[new_id].assignment.topic_partitions} == old_parts

        # the next rebalance (a 4th static member) works, led by the same place in the group:
        # the successor if it replaced the leader
        s4 = member("s4", "inst-4")
        gen4 = settle(others + [successor, s4], 15, newer_than=gen)
        assert gen4 == gen + 1
        assert successor.is_leader() == (restarted == "leader")
    finally:
        for m in members:
            m.close()
