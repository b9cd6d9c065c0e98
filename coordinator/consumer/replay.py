"""How one consumer-group record changes a group (the group's part of Kafka's replay)."""

from __future__ import annotations

from offsets_log.records import GroupRecord

from coordinator.consumer import records as rec
from coordinator.consumer.group import ConsumerGroup, ResolvedRegex, TopicMetadata
from coordinator.consumer.member import (LEAVE_GROUP_MEMBER_EPOCH, ClassicMetadata,
                                         ConsumerGroupMember, MemberState, assignment_of,
                                         epochs_of)


def replay_into(group: ConsumerGroup, record: GroupRecord) -> None:
    """Apply one record to ``group`` (the group's own part of replaying)."""
    kind, value = record.type, record.value
    if kind == rec.GROUP_EPOCH:
        group.group_epoch = value.epoch
    elif kind == rec.PARTITION_METADATA:
        group.subscription_metadata = {} if value is None else {
            t.topic_name: TopicMetadata(t.topic_id, t.topic_name, t.num_partitions)
            for t in value.topics}
    elif kind == rec.MEMBER:
        if value is None:
            group.remove_member(record.sub)
            return
        classic = value.classic_member_metadata
        old = group.members.get(record.sub) or ConsumerGroupMember(record.sub)
        group.update_member(old.replace(
            instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
            client_host=value.client_host,
            subscribed_topic_names=frozenset(value.subscribed_topic_names),
            subscribed_topic_regex=value.subscribed_topic_regex or None,
            rebalance_timeout_ms=value.rebalance_timeout_ms, server_assignor=value.server_assignor,
            classic=None if classic is None else ClassicMetadata(
                classic.session_timeout_ms,
                tuple((p.name, bytes(p.metadata)) for p in classic.supported_protocols))))
    elif kind == rec.TARGET_EPOCH:
        # Kafka's tombstoned assignment metadata is epoch -1 (the group is being deleted)
        group.assignment_epoch = -1 if value is None else value.assignment_epoch
        group.assignment_timestamp = 0 if value is None else value.assignment_timestamp
    elif kind == rec.TARGET_MEMBER:
        if value is None:
            group.target.pop(record.sub, None)
        else:
            group.target[record.sub] = assignment_of(value.topic_partitions)
    elif kind == rec.CURRENT:
        old = group.members.get(record.sub) or ConsumerGroupMember(record.sub)
        if value is None:
            group.update_member(old.replace(
                member_epoch=LEAVE_GROUP_MEMBER_EPOCH, previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                state=MemberState.UNKNOWN, assigned={}, pending_revocation={}, assigned_at={}))
        else:
            epochs = epochs_of(value.assigned_partitions, value.member_epoch)
            epochs.update(epochs_of(value.partitions_pending_revocation, value.member_epoch))
            group.update_member(old.replace(
                member_epoch=value.member_epoch, previous_member_epoch=value.previous_member_epoch,
                state=MemberState(value.state), assigned=assignment_of(value.assigned_partitions),
                pending_revocation=assignment_of(value.partitions_pending_revocation),
                assigned_at=epochs))
    elif kind == rec.REGEX:
        if value is None:
            group.resolved.pop(record.sub, None)
        else:
            group.resolved[record.sub] = ResolvedRegex(frozenset(value.topics), value.version,
                                                       value.timestamp)
    group.update_state()
