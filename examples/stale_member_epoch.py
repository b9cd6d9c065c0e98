"""STALE_MEMBER_EPOCH: an OffsetCommit v9 carrying a member epoch the member has moved past.

In a consumer group (KIP-848, group.protocol=consumer) a member commits with OffsetCommit v9+,
and the commit's generation_id_or_member_epoch is its member epoch. The coordinator takes the
commit only at the member's current epoch (Kafka's ConsumerGroup.validateOffsetCommit ->
validateMemberEpoch): any other epoch is answered STALE_MEMBER_EPOCH. (A classic member in the
same group is answered ILLEGAL_GENERATION instead.)

The epoch moves on whenever the member reconciles to a new target assignment -- a member joins
or leaves, the subscribed topics change -- and that happens on the heartbeat thread, while the
application's thread may be building a commit with the epoch it read before. The recipe drives
it with raw requests (groupbroker's own client): A joins and commits at epoch 1; B joins, A
revokes a partition and its heartbeat moves it to epoch 2; a commit still stamped with epoch 1
is refused with STALE_MEMBER_EPOCH; the same offsets at epoch 2 are taken.
"""

import re
import uuid

from recipe import NotReproduced, client, connect, coordinator, make_topic, result, run, say, unique

from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

CGH = REQUESTS[ApiKey.CONSUMER_GROUP_HEARTBEAT].cls
OC = REQUESTS[ApiKey.OFFSET_COMMIT].cls
STALE_MEMBER_EPOCH = ErrorCode.STALE_MEMBER_EPOCH


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
        if a.epoch != 1 or a.partitions() != [0, 1]:
            raise NotReproduced(f"A did not get both partitions at epoch 1 (epoch {a.epoch})")
        old = a.epoch
        say(f"\nA processes records of partitions 0 and 1 and commits them at epoch {old}:")
        first = a.commit({0: 10, 1: 10}, old)

        say("\nB joins; A's heartbeat thread revokes partition 1 and moves A to the next epoch:")
        b.heartbeat(0)
        a.heartbeat()
        a.heartbeat()
        b.heartbeat()
        if a.epoch == old:
            raise NotReproduced(f"A's member epoch never moved past {old}")
        say(f"\nmeanwhile A's processing thread commits partition 0 with the epoch it read before, {old}:")
        stale = a.commit({0: 20}, old)
        say(f"A commits again with its current epoch, {a.epoch}:")
        retried = a.commit({0: 20}, a.epoch)
        a.leave()
        b.leave()
    finally:
        conn.close()
    if any(first.values()):
        raise NotReproduced(f"A's first commit at epoch {old} was refused: {first}")
    if stale.get(0) != STALE_MEMBER_EPOCH:
        raise NotReproduced(f"the commit at epoch {old} was answered {stale}, not STALE_MEMBER_EPOCH")
    if retried.get(0) != ErrorCode.NONE:
        raise NotReproduced(f"the commit at the current epoch {a.epoch} was answered {retried}")
    broker.show(group, "STALE_MEMBER_EPOCH|bumped",
                expect=rf"group {re.escape(group)}: .* answered STALE_MEMBER_EPOCH")
    result("STALE_MEMBER_EPOCH",
           f"A committed with member epoch {old}; A was at epoch {a.epoch}",
           "a consumer-protocol member's commit is only taken at its current member epoch, which "
           "its heartbeat moves on at every reconciliation (a member joined or left, topics "
           "changed), independently of the thread that commits. The offsets were not stored. The "
           "member is still in the group and still owns the partition: unlike ILLEGAL_GENERATION "
           "in a classic group, nothing has to rejoin.",
           "commit again with the current epoch. librdkafka does not retry a manual commit that "
           "failed this way: keep the offsets and let the next commit (or the one in the "
           "revocation callback) carry them. Offsets of partitions the member no longer owns must "
           "be dropped, not retried: their new owner commits from now on.")


if __name__ == "__main__":
    run(recipe, __doc__.splitlines()[0])
