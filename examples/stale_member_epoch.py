"""STALE_MEMBER_EPOCH: an OffsetCommit v9 carrying a member epoch the member has moved past.

In a consumer group (KIP-848, group.protocol=consumer) a member commits with OffsetCommit v9+,
and the commit's generation_id_or_member_epoch is its member epoch. An epoch newer than the
member's is answered STALE_MEMBER_EPOCH. Since Kafka 4.3 (KIP-1251) an older one is not refused
outright: the coordinator remembers the epoch at which each partition was assigned to the member,
and takes the commit if every partition in it is still the member's (assigned, or being revoked)
and was assigned at that epoch or before; otherwise STALE_MEMBER_EPOCH (Kafka's
ConsumerGroup.validateOffsetCommit). (A classic member in the same group is answered
ILLEGAL_GENERATION instead.)

The epoch moves on whenever the member reconciles to a new target assignment -- a member joins
or leaves, the subscribed topics change -- and that happens on the heartbeat thread, while the
application's thread may be building a commit with the epoch it read before. The recipe drives
it with raw requests (groupbroker's own client): A joins and commits both partitions; B joins,
and once the group's next target assignment is computed (group.consumer.assignment.interval.ms,
1 s, after the last one) A revokes partition 1 and moves to the next epoch; a commit still
stamped with the old epoch is taken for partition 0, which A has held since then, and refused
with STALE_MEMBER_EPOCH for partition 1, which is B's now; at its current epoch A may commit
partition 0 only.
"""

import re
import time
import uuid

from recipe import NotReproduced, client, connect, coordinator, make_topic, result, run, say, unique

from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

CGH = REQUESTS[ApiKey.CONSUMER_GROUP_HEARTBEAT].cls
OC = REQUESTS[ApiKey.OFFSET_COMMIT].cls
STALE_MEMBER_EPOCH = ErrorCode.STALE_MEMBER_EPOCH
#: a little more than group.consumer.assignment.interval.ms (Kafka 4.3's default, 1 s)
ASSIGNMENT_INTERVAL_S = 1.1


class Member:
    """One consumer-protocol member over a raw connection (epoch and partitions of its last
    successful heartbeat answer)."""

    def __init__(self, conn, group: str, name: str, topic: str):
        self.conn, self.group, self.name, self.topic = conn, group, name, topic
        self.member_id = f"{name}-{uuid.uuid4().hex[:8]}"     # v1: the client makes its member id
        self.epoch, self.owned = 0, {}

    def heartbeat(self, epoch: int | None = None):
        epoch = self.epoch if epoch is None else epoch
        joining = epoch == 0
        body = CGH(group_id=self.group, member_id=self.member_id, member_epoch=epoch,
                   rebalance_timeout_ms=30000 if joining else -1,
                   subscribed_topic_names=(self.topic,) if joining else None,
                   topic_partitions=tuple(CGH.TopicPartitions(topic_id=t, partitions=tuple(sorted(ps)))
                                          for t, ps in self.owned.items() if ps))
        answer = self.conn.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, body)
        if answer.error_code == ErrorCode.NONE:
            self.epoch = answer.member_epoch
            if answer.assignment is not None:
                self.owned = {tp.topic_id: set(tp.partitions) for tp in answer.assignment.topic_partitions
                              if tp.partitions}
        if answer.error_code:
            got = f"error {answer.error_code} ({ErrorCode(answer.error_code).name})"
        else:
            got = f"OK, epoch {answer.member_epoch}, partitions {self.partitions()}"
        client(f"{self.name}: ConsumerGroupHeartbeat(epoch={epoch}) -> {got}")
        return answer

    def partitions(self) -> list[int]:
        return sorted(p for ps in self.owned.values() for p in ps)

    def commit(self, offsets: dict[int, int], epoch: int) -> dict[int, int]:
        """OffsetCommit v9 of ``offsets`` (partition -> offset) stamped with ``epoch``; the
        error code of each partition."""
        answer = self.conn.call(ApiKey.OFFSET_COMMIT, 9, OC(
            group_id=self.group, generation_id_or_member_epoch=epoch, member_id=self.member_id,
            group_instance_id=None, topics=(OC.OffsetCommitRequestTopic(name=self.topic, partitions=tuple(
                OC.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                    partition_index=p, committed_offset=o, committed_metadata=None)
                for p, o in sorted(offsets.items()))),)))
        errors = {p.partition_index: p.error_code for t in answer.topics for p in t.partitions}
        shown = ", ".join(f"p{p}: {ErrorCode(e).name}" for p, e in sorted(errors.items()))
        client(f"{self.name}: OffsetCommit v9(member_epoch={epoch}, {offsets}) -> {shown}")
        return errors

    def leave(self) -> None:
        self.conn.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, CGH(
            group_id=self.group, member_id=self.member_id, member_epoch=-1))


def recipe(broker) -> None:
    topic, group = unique("shipments"), unique("kip848-commit")
    make_topic(broker.bootstrap, topic, partitions=2)
    conn = connect(coordinator(broker.bootstrap, group), client_id="raw")
    try:
        a, b = Member(conn, group, "A", topic), Member(conn, group, "B", topic)
        a.heartbeat(0)
        a.heartbeat()
        if a.partitions() != [0, 1]:
            raise NotReproduced(f"A did not get both partitions (epoch {a.epoch})")
        old = a.epoch
        say(f"\nA processes records of partitions 0 and 1 and commits them at epoch {old}:")
        first = a.commit({0: 10, 1: 10}, old)

        say("\nB joins; A's heartbeat thread revokes partition 1 and moves A to the next epoch:")
        b.heartbeat(0)
        time.sleep(ASSIGNMENT_INTERVAL_S)      # the next target assignment waits for the interval
        a.heartbeat()
        a.heartbeat()
        b.heartbeat()
        if a.epoch == old or a.partitions() != [0]:
            raise NotReproduced(f"A did not move past epoch {old} with partition 0 alone")
        say(f"\nmeanwhile A's processing thread commits both partitions with the epoch it read before, {old}:")
        kept = a.commit({0: 20}, old)
        stale = a.commit({1: 20}, old)
        say(f"A commits partition 0 again with its current epoch, {a.epoch}:")
        retried = a.commit({0: 30}, a.epoch)
        a.leave()
        b.leave()
    finally:
        conn.close()
    if any(first.values()):
        raise NotReproduced(f"A's first commit at epoch {old} was refused: {first}")
    if kept.get(0) != ErrorCode.NONE:
        raise NotReproduced(f"the commit of partition 0 at epoch {old} was answered {kept}")
    if stale.get(1) != STALE_MEMBER_EPOCH:
        raise NotReproduced(f"the commit of partition 1 at epoch {old} was answered {stale}, not "
                            "STALE_MEMBER_EPOCH")
    if retried.get(0) != ErrorCode.NONE:
        raise NotReproduced(f"the commit at the current epoch {a.epoch} was answered {retried}")
    broker.show(group, "STALE_MEMBER_EPOCH|bumped",
                expect=rf"group {re.escape(group)}: .* answered STALE_MEMBER_EPOCH")
    result("STALE_MEMBER_EPOCH",
           f"A committed partition 1, which it had given up, with member epoch {old}; A was at "
           f"epoch {a.epoch}",
           "a consumer-protocol member's commit with an older member epoch than its own (its "
           "heartbeat moves the epoch on at every reconciliation, independently of the thread "
           "that commits) is only taken for partitions it still holds and held at that epoch "
           "already (KIP-1251, Kafka 4.3). Partition 1 had moved to B: its offset was not stored. "
           "The member is still in the group: unlike ILLEGAL_GENERATION in a classic group, "
           "nothing has to rejoin.",
           "commit the partitions you still own. librdkafka does not retry a manual commit that "
           "failed this way: keep their offsets and let the next commit (or the one in the "
           "revocation callback) carry them. Offsets of partitions the member no longer owns must "
           "be dropped, not retried: their new owner commits from now on.")


if __name__ == "__main__":
    run(recipe, __doc__.splitlines()[0])
