"""The records a share group writes (Kafka's GroupCoordinatorRecordHelpers, share half), typed,
and how each changes a group when replayed."""

from __future__ import annotations

import uuid

from offsets_log.records import SHARE_GROUP_KEYS, GroupRecord

from coordinator.consumer.member import Assignment, MemberState, assignment_of
from coordinator.consumer.records import topic_partitions
from coordinator.share.group import Initialized, ShareGroup, ShareMember, StateMetadata

MEMBER, GROUP_EPOCH, TARGET_EPOCH, TARGET_MEMBER, CURRENT, STATE_PARTITIONS = 10, 11, 12, 13, 14, 15


def _value(kind: int):
    return SHARE_GROUP_KEYS[kind][1].cls


def group_epoch(group_id: str, epoch: int, metadata_hash: int) -> GroupRecord:
    return GroupRecord(GROUP_EPOCH, group_id, None, _value(GROUP_EPOCH)(epoch=epoch, metadata_hash=metadata_hash))


def member_subscription(group_id: str, m: ShareMember) -> GroupRecord:
    return GroupRecord(MEMBER, group_id, m.member_id, _value(MEMBER)(
        rack_id=m.rack_id, client_id=m.client_id, client_host=m.client_host,
        subscribed_topic_names=tuple(sorted(m.subscribed_topic_names))))


def target_epoch(group_id: str, epoch: int, timestamp: int) -> GroupRecord:
    return GroupRecord(TARGET_EPOCH, group_id, None, _value(TARGET_EPOCH)(
        assignment_epoch=epoch, assignment_timestamp=timestamp))


def target_member(group_id: str, member_id: str, assignment: Assignment) -> GroupRecord:
    cls = _value(TARGET_MEMBER)
    return GroupRecord(TARGET_MEMBER, group_id, member_id, cls(
        topic_partitions=topic_partitions(cls.TopicPartition, assignment)))


def current_assignment(group_id: str, m: ShareMember) -> GroupRecord:
    cls = _value(CURRENT)
    return GroupRecord(CURRENT, group_id, m.member_id, cls(
        member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch, state=int(m.state),
        assigned_partitions=topic_partitions(cls.TopicPartitions, m.assigned)))


def state_partitions(group_id: str, initializing: dict[uuid.UUID, Initialized],
                     initialized: dict[uuid.UUID, Initialized], deleting: dict[uuid.UUID, str]) -> GroupRecord:
    """Which topics' share-partition state is being created, exists, or is being deleted."""
    cls = _value(STATE_PARTITIONS)

    def infos(entries):
        return tuple(cls.TopicPartitionsInfo(topic_id=t, topic_name=e.name, partitions=tuple(sorted(e.partitions)))
                     for t, e in sorted(entries.items(), key=lambda kv: kv[1].name))
    return GroupRecord(STATE_PARTITIONS, group_id, None, cls(
        initializing_topics=infos(initializing), initialized_topics=infos(initialized),
        deleting_topics=tuple(cls.TopicInfo(topic_id=t, topic_name=name)
                              for t, name in sorted(deleting.items(), key=lambda kv: kv[1]))))


def tombstone(kind: int, group_id: str, sub: str | None = None) -> GroupRecord:
    return GroupRecord(kind, group_id, sub, None)


def member_tombstones(group_id: str, member_id: str) -> list[GroupRecord]:
    """Kafka's shareGroupFenceMember, in its order."""
    return [tombstone(CURRENT, group_id, member_id), tombstone(TARGET_MEMBER, group_id, member_id),
            tombstone(MEMBER, group_id, member_id)]


def delete_records(group: ShareGroup) -> list[GroupRecord]:
    """Kafka's ShareGroup.createGroupTombstoneRecords, in its order."""
    gid, members = group.group_id, list(group.members)
    records = [tombstone(CURRENT, gid, m) for m in members]
    records += [tombstone(TARGET_MEMBER, gid, m) for m in members]
    records.append(tombstone(TARGET_EPOCH, gid))
    records += [tombstone(MEMBER, gid, m) for m in members]
    records.append(tombstone(STATE_PARTITIONS, gid))
    records.append(tombstone(GROUP_EPOCH, gid))
    return records


def replay_into(group: ShareGroup, record: GroupRecord) -> None:
    """Apply one record to ``group``."""
    kind, value = record.type, record.value
    if kind == GROUP_EPOCH:
        group.group_epoch, group.metadata_hash = value.epoch, value.metadata_hash
    elif kind == MEMBER:
        if value is None:
            group.remove_member(record.sub)
            return
        old = group.members.get(record.sub) or ShareMember(record.sub)
        group.update_member(old.replace(rack_id=value.rack_id, client_id=value.client_id,
                                        client_host=value.client_host,
                                        subscribed_topic_names=frozenset(value.subscribed_topic_names)))
    elif kind == TARGET_EPOCH:
        group.assignment_epoch = -1 if value is None else value.assignment_epoch
        group.assignment_timestamp = 0 if value is None else value.assignment_timestamp
    elif kind == TARGET_MEMBER:
        if value is None:
            group.target.pop(record.sub, None)
        else:
            group.target[record.sub] = assignment_of(value.topic_partitions)
    elif kind == CURRENT:
        if value is None:
            member = group.members.get(record.sub)
            if member is not None:
                group.update_member(member.replace(member_epoch=-1, previous_member_epoch=-1,
                                                   state=MemberState.UNKNOWN, assigned={}))
            return
        old = group.members.get(record.sub) or ShareMember(record.sub)
        group.update_member(old.replace(member_epoch=value.member_epoch,
                                        previous_member_epoch=value.previous_member_epoch,
                                        state=MemberState(value.state),
                                        assigned=assignment_of(value.assigned_partitions)))



def state_metadata(value) -> StateMetadata:
    """A share-state record's value as the manager keeps it."""
    def entries(infos):
        return {i.topic_id: Initialized(i.topic_name, frozenset(i.partitions)) for i in infos}
    return StateMetadata(entries(value.initializing_topics), entries(value.initialized_topics),
                         {i.topic_id: i.topic_name for i in value.deleting_topics})
