"""Issue 4 acceptance: unmodified kafka-python 3.0.12 against ``groupbroker serve``, real sockets.

The broker runs as its own process (``python -m broker serve``, see broker_process.py); the
group members of the big scenario are processes too, so one can be SIGKILLed without leaving.
Timeouts are shortened through Kafka's own config names so each test takes seconds.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import CommitFailedError, IllegalGenerationError, UnknownMemberIdError

from broker_process import BrokerProcess, ConsumerProcess, check_exactly_once, wait_until

FAST = {
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 1000,
}


@pytest.fixture
def broker(tmp_path):
    b = BrokerProcess(tmp_path / "data", tmp_path / "broker.log", FAST).start()
    yield b
    try:
        if b.running():
            assert b.stop() == 0, "SIGTERM must stop the broker with exit code 0"
    finally:
        b.kill()


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
      ``!member.isStaticMember()``), and forms generation 2.
    * A resumes and commits with generation 1. validateOffsetCommit checks membership before
      the generation: a dynamic A is gone -> UNKNOWN_MEMBER_ID; a static A (group.instance.id)
      is still a member, so the generation check fails -> ILLEGAL_GENERATION. kafka-python
      turns both into CommitFailedError(<that error>), which is what we assert.
    * A's commit must reach the broker before A's own heartbeat thread notices the expired
      poll timer: once it does, kafka-python (like the Java client) leaves the group / resets
      its generation and fails the commit locally without asking the broker. The heartbeat
      thread only wakes every heartbeat.interval.ms (8 s here), and A commits about 2.5 s into
      its stall, so the commit is the broker's call; the assertion on the wrapped error type
      proves it (a local failure carries a message string instead).

    The broker does not log per-request error codes; its state-change log lines show the
    rebalance: B added, (dynamic) A removed for not rejoining, generation 2 formed.
    """
    topic, group = "stall", f"stall-{'static' if static else 'dynamic'}"
    KafkaAdminClient(bootstrap_servers=broker.bootstrap).create_topics([NewTopic(topic, 2, 1)])
    produce(broker.bootstrap, topic, 20, 2)
    common = dict(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False,
                  auto_offset_reset="earliest", session_timeout_ms=10000)
    a = KafkaConsumer(client_id="A", heartbeat_interval_ms=8000, max_poll_interval_ms=1000,
                      group_instance_id="instance-a" if static else None, **common)
    thread = None
    stop_b = threading.Event()
    try:
        a.subscribe([topic])
        consumed = 0
        deadline = time.monotonic() + 15
        while consumed < 20 and time.monotonic() < deadline:
            consumed += sum(len(rs) for rs in a.poll(timeout_ms=100).values())
        assert consumed == 20 and len(a.assignment()) == 2
        a.commit()
        stalled_at = time.monotonic()               # A's last poll: from here on A stalls
        member_a = a._coordinator._generation.member_id
        assert a._coordinator._generation.generation_id == 1

        b = KafkaConsumer(client_id="B", heartbeat_interval_ms=1000, max_poll_interval_ms=2000,
                          **common)

        def run_b():
            b.subscribe([topic])
            while not stop_b.is_set():
                b.poll(timeout_ms=100)
            b.close()
        thread = threading.Thread(target=run_b, daemon=True)
        thread.start()

        broker.wait_for_log(rf"group {group}: Stable -> PreparingRebalance \(generation 1, .*adding "
                            r"member B-", timeout=10)
        a.commit()            # PreparingRebalance, A still a member of generation 1: accepted
        broker.wait_for_log(rf"group {group}: CompletingRebalance -> Stable \(generation 2,",
                            timeout=10)
        stalled = time.monotonic() - stalled_at
        assert stalled > 1.0, "A must have stalled past its max.poll.interval.ms"
        with pytest.raises(CommitFailedError) as failed:
            a.commit()
        assert time.monotonic() - stalled_at < 7.5, "A's heartbeat thread may have woken up"
        cause = failed.value.args[0]
        expected = IllegalGenerationError if static else UnknownMemberIdError
        assert type(cause) is expected, f"expected CommitFailedError({expected.__name__}), got {failed.value!r}"

        log = broker.log_text()
        joined = log_lines(log, rf"group {group}: PreparingRebalance -> CompletingRebalance "
                                r"\(generation 2, ")
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
