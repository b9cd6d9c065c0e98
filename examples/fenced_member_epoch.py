"""FENCED_MEMBER_EPOCH: a KIP-848 heartbeat with a member epoch the coordinator does not expect.

In a consumer group (group.protocol=consumer) each member carries a member epoch, and each
ConsumerGroupHeartbeat says which epoch the member is at. The coordinator checks it first
(Kafka's GroupMetadataManager.throwIfConsumerGroupMemberEpochIsInvalid): an epoch greater than
the member's, or a smaller one, is answered FENCED_MEMBER_EPOCH -- except the member's previous
epoch with owned partitions that are a subset of its current assignment (the answer that
bumped its epoch may have been lost). The client must then give up all its partitions and
rejoin with epoch 0.

A member that does not revoke a partition within its rebalance timeout is another story:
Kafka REMOVES it from the group (scheduleConsumerGroupRebalanceTimeout -> consumerGroupFenceMember),
so its next heartbeat is answered UNKNOWN_MEMBER_ID, not FENCED_MEMBER_EPOCH.

The recipe drives the heartbeats with raw ConsumerGroupHeartbeat v1 requests (groupbroker's own
client), so every epoch on the wire is visible: A joins; a heartbeat from "the future" (epoch
ahead) is fenced; B joins, A revokes and moves to the next epoch; a delayed heartbeat that still
claims the revoked partition with the previous epoch is fenced, the same previous epoch with
what A really owns is accepted. Then, in a second group, A2 joins with a 1 s rebalance timeout,
is asked to revoke and does not: 1 s later it is out of the group. (Since Kafka 4.3 a group's
next target assignment waits until group.consumer.assignment.interval.ms, 1 s by default, has
passed since its last one: the recipe waits that long after B joins before A is told anything.)

To do this to real clients, a broker started with --admin-port offers
``groupbroker faults hold-revocations GROUP`` (members that must revoke cannot complete it, so
their rebalance timeout fires) and ``groupbroker faults fence-member GROUP MEMBER`` (removes the
member as a missed rebalance timeout does; unlike Kafka it answers the member's next heartbeat
FENCED_MEMBER_EPOCH rather than UNKNOWN_MEMBER_ID -- clients handle both by giving up their
partitions and rejoining).
"""

import re
import time
import uuid

from recipe import NotReproduced, client, connect, coordinator, make_topic, result, run, say, unique

from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

CGH = REQUESTS[ApiKey.CONSUMER_GROUP_HEARTBEAT].cls
FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID = ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID
REBALANCE_TIMEOUT_MS = 1000
#: a little more than group.consumer.assignment.interval.ms (Kafka 4.3's default, 1 s)
ASSIGNMENT_INTERVAL_S = 1.1


class Member:
    """One consumer-protocol member over a raw connection: it remembers the epoch and the
    partitions (topic id -> partitions) of the last successful answer."""

    def __init__(self, conn, group: str, name: str, topic: str, rebalance_timeout_ms: int = 30000):
        self.conn, self.group, self.name, self.topic = conn, group, name, topic
        self.member_id = f"{name}-{uuid.uuid4().hex[:8]}"     # v1: the client makes its member id
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.epoch, self.owned = 0, {}

    def heartbeat(self, epoch: int | None = None, owned: dict | None = None, *, quiet: bool = False):
        """One heartbeat at ``epoch`` (default: its own) reporting ``owned`` (default: what it
        holds); epoch 0 joins. Prints the exchange; returns the answer."""
        epoch = self.epoch if epoch is None else epoch
        owned = self.owned if owned is None else owned
        joining = epoch == 0
        body = CGH(group_id=self.group, member_id=self.member_id, member_epoch=epoch,
                   rebalance_timeout_ms=self.rebalance_timeout_ms if joining else -1,
                   subscribed_topic_names=(self.topic,) if joining else None,
                   topic_partitions=tuple(CGH.TopicPartitions(topic_id=t, partitions=tuple(sorted(ps)))
                                          for t, ps in owned.items() if ps))
        answer = self.conn.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, body)
        if answer.error_code == ErrorCode.NONE:
            self.epoch = answer.member_epoch
            if answer.assignment is not None:
                self.owned = {tp.topic_id: set(tp.partitions) for tp in answer.assignment.topic_partitions
                              if tp.partitions}
        if not quiet:
            client(f"{self.name}: ConsumerGroupHeartbeat(epoch={epoch}, owned={_parts(owned)}) -> "
                   f"{_describe(answer)}")
        return answer

    def leave(self) -> None:
        self.heartbeat(-1, {}, quiet=True)


def recipe(broker) -> None:
    topic = unique("ledger")
    make_topic(broker.bootstrap, topic, partitions=2)

    # --- 1. FENCED_MEMBER_EPOCH: epochs the coordinator does not expect --------------------
    group = unique("kip848-epochs")
    conn = connect(coordinator(broker.bootstrap, group), client_id="raw")
    try:
        a, b = Member(conn, group, "A", topic), Member(conn, group, "B", topic)
        a.heartbeat(0)
        a.heartbeat()
        if _parts(a.owned) != [0, 1]:
            raise NotReproduced(f"A did not get both partitions (epoch {a.epoch})")
        say("\n1a. a heartbeat from an epoch ahead of A's (e.g. a client that made its epoch up):")
        first = a.epoch
        ahead = a.heartbeat(first + 1)

        say("\n1b. B joins: A must give up partition 1, revokes it, and moves to the next epoch:")
        b.heartbeat(0)
        time.sleep(ASSIGNMENT_INTERVAL_S)      # the next target assignment waits for the interval
        a.heartbeat()                          # told to revoke: assignment [0], the same epoch
        revoking_epoch = a.epoch
        a.heartbeat()                          # reports [0] only: the revocation is done
        b.heartbeat()
        if a.epoch != revoking_epoch + 1 or _parts(a.owned) != [0] or _parts(b.owned) != [1]:
            raise NotReproduced(f"A (epoch {a.epoch}, {_parts(a.owned)}) and B ({_parts(b.owned)}) "
                                "did not reconcile to one partition each")
        previous = a.epoch - 1
        say(f"\n1c. a delayed heartbeat of A's from epoch {previous} that still claims both partitions:")
        stale = a.heartbeat(previous, {t: {0, 1} for t in a.owned})
        say(f"    the same previous epoch {previous} claiming only what A owns now (a lost answer, "
            "which Kafka forgives):")
        forgiven = a.heartbeat(previous)
        a.leave()
        b.leave()
    finally:
        conn.close()
    if ahead.error_code != FENCED_MEMBER_EPOCH:
        raise NotReproduced(f"the heartbeat with an epoch ahead was answered {_describe(ahead)}")
    if stale.error_code != FENCED_MEMBER_EPOCH:
        raise NotReproduced(f"the stale heartbeat was answered {_describe(stale)}")
    if forgiven.error_code != ErrorCode.NONE:
        raise NotReproduced(f"the previous epoch with a subset was answered {_describe(forgiven)}")

    # --- 2. a missed rebalance timeout: the member is removed --------------------------------
    group2 = unique("kip848-timeout")
    say(f"\n2. group {group2}: A2 joins with rebalance timeout {REBALANCE_TIMEOUT_MS} ms; B2 joins; "
        "A2 is asked to revoke and does not")
    conn = connect(coordinator(broker.bootstrap, group2), client_id="raw")
    try:
        a2 = Member(conn, group2, "A2", topic, rebalance_timeout_ms=REBALANCE_TIMEOUT_MS)
        b2 = Member(conn, group2, "B2", topic)
        a2.heartbeat(0)
        b2.heartbeat(0)
        time.sleep(ASSIGNMENT_INTERVAL_S)      # the next target assignment waits for the interval
        held = dict(a2.owned)
        asked = a2.heartbeat()                 # its target lost a partition: revoke it
        if asked.error_code or _parts(a2.owned) == _parts(held):
            raise NotReproduced("A2 was never asked to revoke a partition")
        since = time.monotonic()
        client(f"A2 keeps processing partitions {_parts(held)} (stuck in its revocation callback): "
               "it keeps heartbeating every 500 ms and reporting it still owns them")
        answer = None
        while time.monotonic() - since < REBALANCE_TIMEOUT_MS / 1000 + 3:
            time.sleep(0.5)
            answer = a2.heartbeat(owned=held, quiet=True)
            if answer.error_code:
                break
        waited = time.monotonic() - since
        client(f"A2, {waited:.1f} s after it was asked to revoke: ConsumerGroupHeartbeat(epoch="
               f"{a2.epoch}, owned={_parts(held)}) -> {_describe(answer)}")
        b2.heartbeat()
        b2.heartbeat()
        b2.leave()
    finally:
        conn.close()
    if answer is None or answer.error_code != UNKNOWN_MEMBER_ID:
        raise NotReproduced(f"A2's heartbeat after its rebalance timeout was answered {_describe(answer)}")
    broker.show(group2, "fenced|bumped|consumer group",
                expect=rf"group {re.escape(group2)}: member {re.escape(a2.member_id)} fenced")

    result("FENCED_MEMBER_EPOCH",
           f"A's heartbeat with epoch {first + 1} at epoch {first} (ahead) and its delayed one with "
           f"epoch {previous} at epoch {previous + 1} claiming a revoked partition were fenced; A2 "
           f"missed its {REBALANCE_TIMEOUT_MS} ms rebalance timeout and was removed "
           "(UNKNOWN_MEMBER_ID)",
           "the member epoch is the coordinator's fence against zombies: a heartbeat is only taken "
           "at the member's epoch, or at its previous epoch when it owns no more than its current "
           "assignment (a lost answer). Anything else means the client's view of its partitions "
           "cannot be trusted (a stale retry, a resumed zombie, a client bug), so it must abandon "
           "them all (its on_lost / onPartitionsLost callback, no commit) and rejoin with epoch 0. "
           "A member that holds on to a partition it must revoke past its rebalance timeout "
           "(max.poll.interval.ms in the clients) is removed from the group instead, so the "
           "partition's new owner is not blocked forever; its next heartbeat is UNKNOWN_MEMBER_ID.",
           "let the client handle it (librdkafka and the Java consumer rejoin by themselves); "
           "never commit from on_lost; keep the revocation callback short (commit and return) "
           "and max.poll.interval.ms above the longest processing of one poll's records.")


def _parts(assignment) -> list[int]:
    return sorted(p for ps in (assignment or {}).values() for p in ps)


def _describe(answer) -> str:
    if answer is None:
        return "no answer"
    if answer.error_code:
        name = ErrorCode(answer.error_code).name
        return f"error {answer.error_code} ({name}): {answer.error_message!r}"
    parts = "unchanged" if answer.assignment is None else \
        str(sorted(p for tp in answer.assignment.topic_partitions for p in tp.partitions))
    return f"OK, epoch {answer.member_epoch}, assignment {parts}"


if __name__ == "__main__":
    run(recipe, __doc__.splitlines()[0])
