"""The records a consumer group writes (Kafka's GroupCoordinatorRecordHelpers), typed."""

from __future__ import annotations

from offsets_log.records import CONSUMER_GROUP_KEYS, GroupRecord

from coordinator.consumer.group import ResolvedRegex, TopicMetadata
from coordinator.consumer.member import Assignment, ConsumerGroupMember

GROUP_EPOCH, PARTITION_METADATA, MEMBER, TARGET_EPOCH, TARGET_MEMBER, CURRENT, REGEX = \
    3, 4, 5, 6, 7, 8, 16


def _value(kind: int):
    return CONSUMER_GROUP_KEYS[kind][1].cls


def topic_partitions(cls, assignment: Assignment):
    """An assignment as a record's TopicPartitions entries, in a stable order."""
    return tuple(cls(topic_id=t, partitions=tuple(sorted(ps)))
                 for t, ps in sorted(assignment.items(), key=lambda kv: str(kv[0])))


def group_epoch(group_id: str, epoch: int) -> GroupRecord:
    return GroupRecord(GROUP_EPOCH, group_id, None, _value(GROUP_EPOCH)(epoch=epoch))


def partition_metadata(group_id: str, metadata: dict[str, TopicMetadata]) -> GroupRecord:
    cls = _value(PARTITION_METADATA)
    topics = tuple(cls.TopicMetadata(topic_id=t.topic_id, topic_name=t.name,
                                     num_partitions=t.num_partitions, partition_metadata=())
                   for t in sorted(metadata.values(), key=lambda t: t.name))
    return GroupRecord(PARTITION_METADATA, group_id, None, cls(topics=topics))


def member_subscription(group_id: str, m: ConsumerGroupMember) -> GroupRecord:
    value = _value(MEMBER)(
        instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id,
        client_host=m.client_host, subscribed_topic_names=tuple(sorted(m.subscribed_topic_names)),
        subscribed_topic_regex=m.subscribed_topic_regex, rebalance_timeout_ms=m.rebalance_timeout_ms,
        server_assignor=m.server_assignor, classic_member_metadata=None if m.classic is None else
        _value(MEMBER).ClassicMemberMetadata(
            session_timeout_ms=m.classic.session_timeout_ms,
            supported_protocols=tuple(_value(MEMBER).ClassicMemberMetadata.ClassicProtocol(
                name=name, metadata=meta) for name, meta in m.classic.protocols)))
    return GroupRecord(MEMBER, group_id, m.member_id, value)


def target_epoch(group_id: str, epoch: int, timestamp: int = 0) -> GroupRecord:
    """The target assignment's epoch and when it was computed (0: not computed here, e.g. a
    converted classic group's)."""
    return GroupRecord(TARGET_EPOCH, group_id, None, _value(TARGET_EPOCH)(
        assignment_epoch=epoch, assignment_timestamp=timestamp))


def target_member(group_id: str, member_id: str, assignment: Assignment) -> GroupRecord:
    cls = _value(TARGET_MEMBER)
    return GroupRecord(TARGET_MEMBER, group_id, member_id, cls(
        topic_partitions=topic_partitions(cls.TopicPartition, assignment)))


def _with_epochs(cls, assignment: Assignment, m: ConsumerGroupMember):
    """``TopicPartitions`` with each partition's assignment epoch beside it (KIP-1251)."""
    return tuple(cls(topic_id=t, partitions=tuple(sorted(ps)),
                     assignment_epochs=tuple(m.assigned_at.get((t, p), max(m.member_epoch, 0))
                                             for p in sorted(ps)))
                 for t, ps in sorted(assignment.items(), key=lambda kv: str(kv[0])))


def current_assignment(group_id: str, m: ConsumerGroupMember) -> GroupRecord:
    cls = _value(CURRENT)
    return GroupRecord(CURRENT, group_id, m.member_id, cls(
        member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch,
        state=int(m.state), assigned_partitions=_with_epochs(cls.TopicPartitions, m.assigned, m),
        partitions_pending_revocation=_with_epochs(cls.TopicPartitions, m.pending_revocation, m)))


def regex(group_id: str, expression: str, resolved: ResolvedRegex) -> GroupRecord:
    return GroupRecord(REGEX, group_id, expression, _value(REGEX)(
        topics=tuple(sorted(resolved.topics)), version=resolved.version, timestamp=resolved.timestamp))


def tombstone(kind: int, group_id: str, sub: str | None = None) -> GroupRecord:
    return GroupRecord(kind, group_id, sub, None)


def member_tombstones(group_id: str, member_id: str) -> list[GroupRecord]:
    """Kafka's removeMember, in its order."""
    return [tombstone(CURRENT, group_id, member_id), tombstone(TARGET_MEMBER, group_id, member_id),
            tombstone(MEMBER, group_id, member_id)]
