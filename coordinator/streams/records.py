"""The records a streams group writes (Kafka's StreamsCoordinatorRecordHelpers), typed, and how
each changes a group when replayed."""

from __future__ import annotations

from types import MappingProxyType

from offsets_log.records import STREAMS_GROUP_KEYS, GroupRecord

from coordinator.streams.group import Endpoint, MemberState, StreamsGroup, StreamsMember
from coordinator.streams.tasks import EMPTY_TASKS, TasksTuple, from_wire, to_wire
from coordinator.streams.topology import topology_of

GROUP_EPOCH, MEMBER, TARGET_EPOCH, TARGET_MEMBER, CURRENT, TOPOLOGY = 17, 19, 20, 21, 22, 23


def _value(kind: int):
    return STREAMS_GROUP_KEYS[kind][1].cls


def group_epoch(group: StreamsGroup, epoch: int, metadata_hash: int, validated_epoch: int,
                configs: dict[str, str]) -> GroupRecord:
    cls = _value(GROUP_EPOCH)
    return GroupRecord(GROUP_EPOCH, group.group_id, None, cls(
        epoch=epoch, metadata_hash=metadata_hash, validated_topology_epoch=validated_epoch,
        last_assignment_configs=tuple(cls.LastAssignmentConfig(key=k, value=v) for k, v in configs.items())))


def member_metadata(group_id: str, m: StreamsMember) -> GroupRecord:
    cls = _value(MEMBER)
    return GroupRecord(MEMBER, group_id, m.member_id, cls(
        instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id, client_host=m.client_host,
        rebalance_timeout_ms=m.rebalance_timeout_ms, topology_epoch=m.topology_epoch, process_id=m.process_id,
        user_endpoint=None if m.user_endpoint is None else cls.Endpoint(host=m.user_endpoint.host,
                                                                        port=m.user_endpoint.port),
        client_tags=tuple(cls.KeyValue(key=k, value=v) for k, v in m.client_tags)))


def target_epoch(group_id: str, epoch: int, timestamp: int) -> GroupRecord:
    return GroupRecord(TARGET_EPOCH, group_id, None, _value(TARGET_EPOCH)(
        assignment_epoch=epoch, assignment_timestamp=timestamp))


def target_member(group_id: str, member_id: str, tasks: TasksTuple) -> GroupRecord:
    cls = _value(TARGET_MEMBER)
    return GroupRecord(TARGET_MEMBER, group_id, member_id, cls(
        active_tasks=to_wire(cls.TaskIds, tasks.active), standby_tasks=to_wire(cls.TaskIds, tasks.standby),
        warmup_tasks=to_wire(cls.TaskIds, tasks.warmup)))


def current_assignment(group_id: str, m: StreamsMember) -> GroupRecord:
    cls = _value(CURRENT)
    ids = cls.TaskIds

    def active(tasks):
        return tuple(ids(subtopology_id=s, partitions=tuple(sorted(ps)),
                         assignment_epochs=tuple(m.active_epochs[(s, p)] for p in sorted(ps)))
                     for s, ps in sorted(tasks.items()))
    return GroupRecord(CURRENT, group_id, m.member_id, cls(
        member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch, state=int(m.state),
        active_tasks=active(m.assigned.active), standby_tasks=to_wire(ids, m.assigned.standby),
        warmup_tasks=to_wire(ids, m.assigned.warmup),
        active_tasks_pending_revocation=active(m.pending_revocation.active),
        standby_tasks_pending_revocation=to_wire(ids, m.pending_revocation.standby),
        warmup_tasks_pending_revocation=to_wire(ids, m.pending_revocation.warmup)))


def topology(group_id: str, request_topology) -> GroupRecord:
    """The topology as the member sent it (the request's struct, field for field)."""
    cls = _value(TOPOLOGY)
    sub = cls.Subtopology

    def info(t):
        return sub.TopicInfo(name=t.name, partitions=t.partitions, replication_factor=t.replication_factor,
                             topic_configs=tuple(sub.TopicInfo.TopicConfig(key=c.key, value=c.value)
                                                 for c in t.topic_configs))
    return GroupRecord(TOPOLOGY, group_id, None, cls(epoch=request_topology.epoch, subtopologies=tuple(sub(
        subtopology_id=s.subtopology_id, source_topics=tuple(s.source_topics),
        source_topic_regex=tuple(s.source_topic_regex),
        state_changelog_topics=tuple(map(info, s.state_changelog_topics)),
        repartition_sink_topics=tuple(s.repartition_sink_topics),
        repartition_source_topics=tuple(map(info, s.repartition_source_topics)),
        copartition_groups=tuple(sub.CopartitionGroup(
            source_topics=tuple(g.source_topics), source_topic_regex=tuple(g.source_topic_regex),
            repartition_source_topics=tuple(g.repartition_source_topics)) for g in s.copartition_groups))
        for s in request_topology.subtopologies)))


def tombstone(kind: int, group_id: str, sub: str | None = None) -> GroupRecord:
    return GroupRecord(kind, group_id, sub, None)


def member_tombstones(group_id: str, member_id: str) -> list[GroupRecord]:
    """Kafka's streamsGroupFenceMember, in its order."""
    return [tombstone(CURRENT, group_id, member_id), tombstone(TARGET_MEMBER, group_id, member_id),
            tombstone(MEMBER, group_id, member_id)]


def delete_records(group: StreamsGroup) -> list[GroupRecord]:
    """Kafka's StreamsGroup.createGroupTombstoneRecords, in its order."""
    gid, members = group.group_id, list(group.members)
    records = [tombstone(CURRENT, gid, m) for m in members]
    records += [tombstone(TARGET_MEMBER, gid, m) for m in members]
    records.append(tombstone(TARGET_EPOCH, gid))
    records += [tombstone(MEMBER, gid, m) for m in members]
    records.append(tombstone(GROUP_EPOCH, gid))
    records.append(tombstone(TOPOLOGY, gid))
    return records


def _tasks(value, prefix: str = "") -> TasksTuple:
    return TasksTuple(*(from_wire(getattr(value, f"{kind}_tasks{prefix}")) for kind in ("active", "standby", "warmup")))


def _epochs(task_ids, default: int) -> dict:
    out = {}
    for t in task_ids:
        epochs = t.assignment_epochs
        if epochs is None or len(epochs) != len(t.partitions):
            epochs = [default] * len(t.partitions)
        out.update({(t.subtopology_id, p): e for p, e in zip(t.partitions, epochs)})
    return out


def replay_into(group: StreamsGroup, record: GroupRecord) -> None:
    """Apply one record to ``group``."""
    kind, value = record.type, record.value
    if kind == GROUP_EPOCH:
        group.group_epoch, group.metadata_hash = value.epoch, value.metadata_hash
        group.validated_topology_epoch = value.validated_topology_epoch
        group.last_assignment_configs = {c.key: c.value for c in value.last_assignment_configs or ()}
    elif kind == TOPOLOGY:
        group.topology = None if value is None else topology_of(value)
        group.configured = None
    elif kind == MEMBER:
        if value is None:
            group.remove_member(record.sub)
            return
        old = group.members.get(record.sub) or StreamsMember(record.sub)
        endpoint = value.user_endpoint
        group.update_member(old.replace(
            instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
            client_host=value.client_host, rebalance_timeout_ms=value.rebalance_timeout_ms,
            topology_epoch=value.topology_epoch, process_id=value.process_id,
            user_endpoint=None if endpoint is None else Endpoint(endpoint.host, endpoint.port),
            client_tags=tuple((t.key, t.value) for t in value.client_tags)))
    elif kind == TARGET_EPOCH:
        group.assignment_epoch = -1 if value is None else value.assignment_epoch
        group.assignment_timestamp = 0 if value is None else value.assignment_timestamp
    elif kind == TARGET_MEMBER:
        if value is None:
            group.target.pop(record.sub, None)
        else:
            group.target[record.sub] = _tasks(value)
    elif kind == CURRENT:
        member = group.members.get(record.sub)
        if value is None:
            if member is not None:
                group.update_member(member.replace(member_epoch=-1, previous_member_epoch=-1, assigned=EMPTY_TASKS,
                                                   pending_revocation=EMPTY_TASKS,
                                                   active_epochs=MappingProxyType({})))
            return
        member = member or StreamsMember(record.sub)
        epochs = _epochs(value.active_tasks, value.member_epoch)
        epochs.update(_epochs(value.active_tasks_pending_revocation, value.member_epoch))
        group.update_member(member.replace(
            member_epoch=value.member_epoch, previous_member_epoch=value.previous_member_epoch,
            state=MemberState(value.state) if value.state in MemberState._value2member_map_ else MemberState.UNKNOWN,
            assigned=_tasks(value), pending_revocation=_tasks(value, "_pending_revocation"),
            active_epochs=MappingProxyType(epochs)))
    group.update_state()

