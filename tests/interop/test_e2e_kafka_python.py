"""Issue 4 acceptance: unmodified kafka-python 3.0.12 against ``groupbroker serve``, real sockets.

The broker runs as its own process (``python -m broker serve``, see broker/testing/launcher.py); the
group members of the big scenario are processes too, so one can be SIGKILLed without leaving.
Timeouts are shortened through Kafka's own config names so each test takes seconds.
"""

from __future__ import annotations

import re
import threading
import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import CommitFailedError, IllegalGenerationError, UnknownMemberIdError

from tests.support.processes import (ConsumerProcess, check_exactly_once, committed_records, wait_until)

FAST = {
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 1000,
}


@pytest.fixture
def broker(start_broker):
    return start_broker(FAST)


def produce(bootstrap: str, topic: str, count: int, partitions: int, start: int = 0) -> set:
    """``count`` messages round-robin over the partitions; the (partition, offset) of each."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        futures = [producer.send(topic, value=b"m%d" % i, key=b"k%d" % i, partition=i % partitions)
                   for i in range(start, start + count)]
        producer.flush(30)
        return {(m.partition, m.offset) for m in (f.get(30) for f in futures)}
    finally:
        producer.close()


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()


def log_lines(text: str, pattern: str) -> list[str]:
    return [line for line in text.splitlines() if re.search(pattern, line)]


# --- 2. CommitFailedError after a stall longer than max.poll.interval.ms ----------------------

@pytest.mark.parametrize("static", [False, True], ids=["dynamic-UNKNOWN_MEMBER_ID",
                                                        "static-ILLEGAL_GENERATION"])
def test_stalled_consumer_commit_fails_after_rebalance(broker, static):
    """Consumer A stops polling for longer than its max.poll.interval.ms while B joins; A's
    commit then raises CommitFailedError carrying the code Kafka's coordinator gives.

    Which code, and why (Kafka's GroupMetadataManager / ClassicGroup.validateOffsetCommit,
    which coordinator/offsets.py ``_commit_error`` follows check for check):

    * B's JoinGroup moves the group Stable -> PreparingRebalance. A commit arriving now, with
      A's member id and current generation, is *accepted* (validateOffsetCommit only refuses
      CompletingRebalance, with REBALANCE_IN_PROGRESS): the test commits once here and expects
      success, so the answer below is not REBALANCE_IN_PROGRESS.
    * The join phase waits for A up to the rebalance timeout (the largest max.poll.interval.ms
      of the members, B's 2 s). A does not poll, so does not rejoin; completeClassicGroupJoin
      then removes the members that did not rejoin **unless they are static** (it filters
      ``!member.isStaticMember()``), and forms generation N+1.
    * A resumes and commits with generation N. validateOffsetCommit checks membership before
      the generation: a dynamic A is gone -> UNKNOWN_MEMBER_ID; a static A (group.instance.id)
      is still a member, so the generation check fails -> ILLEGAL_GENERATION. kafka-python
      turns both into CommitFailedError(<that error>), which is what we assert.
    * A's commit must reach the broker before A's own heartbeat thread notices the expired
      poll timer: once it does, kafka-python (like the Java client) leaves the group / resets
      its generation and fails the commit locally without asking the broker. The heartbeat
      thread only wakes every heartbeat.interval.ms (8 s here), and A commits about 2.5 s into
      its stall, so the commit is the broker's call; the assertion on the wrapped error type
      proves it (a local failure carries a message string instead).

    The broker logs the error it answered (``OffsetCommit ... answered ILLEGAL_GENERATION``)
    and its state changes show the rebalance: B added, (dynamic) A removed for not
    rejoining, generation N+1 formed.
    """
    topic, group = "stall", f"stall-{'static' if static else 'dynamic'}"
    create_topic(broker.bootstrap, topic, 2)
    produce(broker.bootstrap, topic, 20, 2)
    common = dict(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False,
                  auto_offset_reset="earliest", session_timeout_ms=10000)
    a = KafkaConsumer(client_id="A", heartbeat_interval_ms=8000, max_poll_interval_ms=1000,
                      group_instance_id="instance-a" if static else None, **common)
    thread = None
    stop_b = threading.Event()
    try:
        a.partitions_for_topic(topic)       # see tests/support/processes.py _consume: no metadata rejoin
        a.subscribe([topic])
        consumed = 0
        deadline = time.monotonic() + 15
        while consumed < 20 and time.monotonic() < deadline:
            consumed += sum(len(rs) for rs in a.poll(timeout_ms=1000).values())
        assert consumed == 20 and len(a.assignment()) == 2
        a.commit()
        stalled_at = time.monotonic()               # A's last poll: from here on A stalls
        member_a = a._coordinator._generation.member_id
        gen = a._coordinator._generation.generation_id       # 1, or 2 if metadata came late

        b = KafkaConsumer(client_id="B", heartbeat_interval_ms=1000, max_poll_interval_ms=2000,
                          **common)

        def run_b():
            b.partitions_for_topic(topic)
            b.subscribe([topic])
            while not stop_b.is_set():
                b.poll(timeout_ms=500)
            b.close()
        thread = threading.Thread(target=run_b, daemon=True)
        thread.start()

        broker.wait_for_log(rf"group {group}: Stable -> PreparingRebalance \(generation {gen}, .*adding "
                            r"member B-", timeout=10)
        a.commit()            # PreparingRebalance, A still a member of generation N: accepted
        broker.wait_for_log(rf"group {group}: CompletingRebalance -> Stable \(generation {gen + 1},",
                            timeout=10)
        stalled = time.monotonic() - stalled_at
        assert stalled > 1.0, "A must have stalled past its max.poll.interval.ms"
        with pytest.raises(CommitFailedError) as failed:
            a.commit()
        assert time.monotonic() - stalled_at < 7.5, "A's heartbeat thread may have woken up"
        cause = failed.value.args[0]
        expected = IllegalGenerationError if static else UnknownMemberIdError
        assert type(cause) is expected, f"expected CommitFailedError({expected.__name__}), got {failed.value!r}"

        code = "ILLEGAL_GENERATION" if static else "UNKNOWN_MEMBER_ID"
        broker.wait_for_log(rf"group {group}: OffsetCommit v\d+ from member {re.escape(member_a)} "
                            rf"\(generation {gen}\) answered {code}", timeout=5)
        log = broker.log_text()
        joined = log_lines(log, rf"group {group}: PreparingRebalance -> CompletingRebalance "
                                rf"\(generation {gen + 1}, ")
        assert len(joined) == 1
        if static:
            assert member_a in joined[0], "a static member that did not rejoin stays in the group"
            assert not log_lines(log, rf"group {group}: removed member {member_a}")
        else:
            assert member_a not in joined[0]
            assert log_lines(log, rf"group {group}: removed member {member_a} \(did not rejoin in time\)")
    finally:
        stop_b.set()
        a.close()
        if thread is not None:
            thread.join(15)


# --- 1. the whole life of a group: consume, grow, lose a member, survive a restart -------------

SESSION_MS = 3000


def settled(consumers, partitions: int = 6, newer_than: int = -1):
    """The members' assignments once they are disjoint, cover every partition and share one
    generation (newer than ``newer_than``); falsy until then."""
    views = [(c.assignment, c.generation) for c in consumers]
    if any(a is None or g is None for a, g in views):
        return None
    generations = {g for _, g in views}
    owned = [p for a, _ in views for p in a]
    if len(generations) != 1 or sorted(owned) != list(range(partitions)) or generations.pop() <= newer_than:
        return None
    return views[0][1]


def test_group_lifecycle_kafka_python(broker, tmp_path):
    """Issue 4's first acceptance scenario, phase by phase (about 15 s):

    1. 10,000 messages to a 6-partition topic (CreateTopics), consumed by a 3-member group with
       a commit after every batch and before the next poll: every record committed exactly once,
       none redelivered.
    2. A 4th member joins while more messages arrive; the group rebalances to 4 members; every
       record is committed exactly once, and a record is seen twice only if an earlier
       consumption of it was never committed (the uncommitted window).
    3. A member is SIGKILLed (no LeaveGroup): after its session timeout the broker removes it and
       its partitions move to the 3 others; same exactly-once check.
    4. The members leave; the broker is stopped with SIGTERM (exit 0) and restarted on the same
       data dir: the topic (6 partitions, same end offsets), the committed offsets and the
       group's generation survive, and a new member resumes exactly at the committed offsets.
    """
    topic, group = "orders", "lifecycle"
    create_topic(broker.bootstrap, topic, 6)
    members = []

    def member(name):
        c = ConsumerProcess(name, broker.bootstrap, group, topic, session_ms=SESSION_MS,
                            heartbeat_ms=500, max_poll_ms=10000, max_records=500,
                            stderr_path=tmp_path / f"{name}.log")
        members.append(c)
        return c

    try:
        # 1. three members, 10,000 messages
        c1, c2, c3 = member("c1"), member("c2"), member("c3")
        gen3 = wait_until(lambda: settled([c1, c2, c3]), 20, "3 members sharing 6 partitions")
        produced = produce(broker.bootstrap, topic, 10_000, 6)
        assert len(produced) == 10_000
        wait_until(lambda: committed_records(members) >= produced, 20, "10,000 records committed")
        summary = check_exactly_once(produced, members)
        assert summary == {"committed": 10_000, "redelivered": 0}
        for c in (c1, c2, c3):
            consumed = {p for b in c.batches() for p, _ in b["records"]}
            assert consumed and consumed <= c.assignment, f"{c.name} read partitions it does not own"

        # 2. a 4th member joins while messages keep coming
        more: set = set()

        def trickle():
            for i in range(10):
                more.update(produce(broker.bootstrap, topic, 300, 6, start=10_000 + 300 * i))
                time.sleep(0.1)
        producer = threading.Thread(target=trickle)
        producer.start()
        c4 = member("c4")
        gen4 = wait_until(lambda: settled([c1, c2, c3, c4], newer_than=gen3), 20,
                          "4 members sharing 6 partitions")
        producer.join(30)
        produced |= more
        produced |= produce(broker.bootstrap, topic, 1_200, 6, start=13_000)
        assert len(produced) == 14_200
        wait_until(lambda: committed_records(members) >= produced, 20, "14,200 records committed")
        summary = check_exactly_once(produced, members)
        assert summary["committed"] == 14_200
        assert any(b["records"] for b in c4.batches()), "the new member consumed nothing"
        # kafka-python members may rejoin once more on a metadata refresh, so the generation
        # c4 arrived in is at least the one the three had settled in, not necessarily equal.
        found = broker.wait_for_log(rf"group {group}: Stable -> PreparingRebalance \(generation (\d+), .*"
                                    rf"adding member c4-", timeout=1)
        assert gen3 <= int(found.group(1)) < gen4

        # 3. kill one member without a LeaveGroup: its partitions move after its session timeout
        victim, survivors = c2, [c1, c3, c4]
        victim_id, victim_parts = victim.member_id, victim.assignment
        killed_at = time.monotonic()
        victim.kill()
        produced |= produce(broker.bootstrap, topic, 1_200, 6, start=14_200)
        gen5 = wait_until(lambda: settled(survivors, newer_than=gen4), SESSION_MS / 1000 + 10,
                          "the killed member's partitions to move")
        moved_after = time.monotonic() - killed_at
        assert moved_after > SESSION_MS / 1000 - 1.0, f"partitions moved after {moved_after:.1f}s"
        assert victim_parts <= set().union(*(c.assignment for c in survivors))
        broker.wait_for_log(rf"group {group}: removed member {re.escape(victim_id)} "
                            r"\(session timeout expired\)", timeout=1)
        wait_until(lambda: committed_records(members) >= produced, 20, "15,400 records committed")
        summary = check_exactly_once(produced, members)
        assert summary["committed"] == 15_400

        # 4. members leave; SIGTERM and restart on the same data dir
        for c in survivors:
            c.ask_to_stop()
        for c in survivors:
            assert c.terminate() == 0
        empty = broker.wait_for_log(rf"group {group}: \w+ -> Empty \(generation (\d+), members \[\]\)",
                                    timeout=10)
        generation = int(empty.group(1))
        assert generation > gen5
        before = group_view(broker.bootstrap, group, topic)
        ends = {p: sum(1 for q, _ in produced if q == p) for p in range(6)}
        assert before == {"partitions": set(range(6)), "end": ends, "committed": ends}

        assert broker.restart() == 0, "SIGTERM must stop the broker with exit code 0"
        broker.wait_for_log(rf"loaded group {group} \(Empty, generation {generation}, 0 members\)",
                            text=broker.log_since_start, timeout=10)
        assert group_view(broker.bootstrap, group, topic) == before

        # a new member continues the generations and starts at the committed offsets
        c5 = member("c5")
        wait_until(lambda: settled([c5], newer_than=0), 20, "a member after the restart")
        assert c5.generations[0] == generation + 1
        broker.wait_for_log(rf"group {group}: Empty -> PreparingRebalance \(generation {generation}, ",
                            text=broker.log_since_start, timeout=1)
        after = produce(broker.bootstrap, topic, 600, 6, start=15_400)
        wait_until(lambda: committed_records([c5]) >= after, 20, "600 new records committed")
        assert committed_records([c5]) == after, "the restarted group re-read committed records"
    finally:
        for c in members:
            c.close()


def group_view(bootstrap: str, group: str, topic: str) -> dict:
    """Partitions, end offsets and the group's committed offsets, through kafka-python."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        parts = consumer.partitions_for_topic(topic)
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        return {"partitions": parts,
                "end": {tp.partition: o for tp, o in consumer.end_offsets(tps).items()},
                "committed": {tp.partition: consumer.committed(tp) for tp in tps}}
    finally:
        consumer.close()
