"""DescribeGroups, ListGroups and DeleteGroups: the views and removals admin tools use.

They read the shard's groups and, for a deletion, its offsets too."""

from __future__ import annotations

import dataclasses
import logging

from offsets_log.records import GroupMetadataTombstone, OffsetCommitTombstone
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.logtext import safe

from coordinator import responses as r
from coordinator.actions import RequestContext
from coordinator.classic.manager import S, ClassicGroupManager
from coordinator.consumer.manager import ConsumerGroupManager
from coordinator.events import Deletion, Event
from coordinator.offsets import OffsetManager
from coordinator.result import CoordinatorResult
from coordinator.share import records as share_records
from coordinator.share.manager import ShareGroupManager
from coordinator.streams.manager import StreamsGroupManager

log = logging.getLogger("groupbroker.coordinator")

E = ErrorCode

def describe_groups(groups: ClassicGroupManager, consumer: ConsumerGroupManager, share: ShareGroupManager,
                    streams: StreamsGroupManager, out: CoordinatorResult, now: int, ctx: RequestContext,
                    req) -> None:
    v = ctx.version
    others = (consumer.groups, share.groups, streams.groups)
    groups = [_describe(groups, others, v, gid) for gid in req.groups]
    if v >= 3 and req.include_authorized_operations:
        # KafkaApis fills this in for every entry without an error, the unknown ("Dead") one too.
        groups = [dataclasses.replace(g, authorized_operations=r.GROUP_OPERATIONS)
                  if g.error_code == E.NONE else g for g in groups]
    out.reply(ctx.token, ApiKey.DESCRIBE_GROUPS, v, r.DescribeGroupsResponse(groups=tuple(groups)))


def _describe(groups: ClassicGroupManager, others: tuple, v: int, group_id: str):
    """GroupMetadataManager.describeGroups: metadata and assignments only for a Stable group;
    a consumer group is not described here (ConsumerGroupDescribe describes it)."""
    if not groups.owns(group_id):
        return r.described_group(v, group_id, E.NOT_COORDINATOR)
    group = groups.groups.get(group_id)
    if group is None or group.is_in(S.DEAD):
        if v >= 6:                              # KIP-1043
            message = (f"Group {group_id} is not a classic group."
                       if any(group_id in of_type for of_type in others)
                       else f"Group {group_id} not found.")
            return r.described_group(v, group_id, E.GROUP_ID_NOT_FOUND, state=S.DEAD.value,
                                     error_message=message)
        return r.described_group(v, group_id, state=S.DEAD.value)
    stable = group.is_in(S.STABLE)
    member_cls = r.DescribeGroupsResponse.DescribedGroup.DescribedGroupMember
    members = [member_cls(member_id=m.member_id,
                          group_instance_id=m.group_instance_id if v >= 4 else None,
                          client_id=m.client_id, client_host=m.client_host,
                          member_metadata=m.metadata(group.protocol_name) if stable else b"",
                          member_assignment=m.assignment)      # Kafka shows it in every state
               for m in group.members.values()]
    return r.described_group(v, group_id, state=group.state.value, protocol_type=group.protocol_type,
                             protocol_data=group.protocol_name if stable else "", members=members)


def list_groups(groups: ClassicGroupManager, consumer: ConsumerGroupManager, share: ShareGroupManager,
                streams: StreamsGroupManager, out: CoordinatorResult, now: int, ctx: RequestContext, req) -> None:
    """Every group of the shard, filtered by state (case-insensitive, trimmed) and type."""
    states = {s.strip().lower() for s in req.states_filter}
    types = {t.lower() for t in req.types_filter}
    listed = r.ListGroupsResponse.ListedGroup
    every = [(g, "classic") for g in groups.groups.values() if not g.is_in(S.DEAD)]
    every += [(g, "consumer") for g in consumer.groups.values()]
    every += [(g, "share") for g in share.groups.values()]
    every += [(g, "streams") for g in streams.groups.values()]
    groups = tuple(
        listed(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state.value,
               group_type=kind)
        for g, kind in every
        if (not states or _filter_name(g, kind) in states) and (not types or kind in types))
    out.reply(ctx.token, ApiKey.LIST_GROUPS, ctx.version, r.ListGroupsResponse(error_code=E.NONE, groups=groups))


def _filter_name(group, kind: str) -> str:
    """A state as ListGroups' filter names it (a streams group's NotReady is "not_ready")."""
    return group.state.name.lower() if kind == "streams" else group.state.value.lower()


def delete_groups(groups: ClassicGroupManager, consumer: ConsumerGroupManager, share: ShareGroupManager,
                  streams: StreamsGroupManager, offsets: OffsetManager, out: CoordinatorResult, now: int,
                  ctx: RequestContext, req) -> None:
    """GroupCoordinatorShard.deleteGroups: tombstones for every offset, then for the group."""
    result_cls = r.DeleteGroupsResponse.DeletableGroupResult
    results, records = [], []
    for group_id in req.groups_names:
        group = consumer.groups.get(group_id) or share.groups.get(group_id) or streams.groups.get(group_id) \
            or groups.groups.get(group_id)
        if not groups.owns(group_id):
            error = E.NOT_COORDINATOR
        elif group is None or group.is_in(S.DEAD):
            error = E.GROUP_ID_NOT_FOUND
        elif not group.is_in(S.EMPTY):
            error = E.NON_EMPTY_GROUP
        else:
            error = E.NONE
            records += [OffsetCommitTombstone(group_id, topic, partition)
                        for topic, partition in offsets.partitions_with_offsets(group_id)]
            if group_id in consumer.groups:
                records += consumer.delete_records(group)
            elif group_id in share.groups:
                records += share_records.delete_records(group)
            elif group_id in streams.groups:
                records += streams.delete_records(group)
            else:
                records.append(GroupMetadataTombstone(group_id))
            out.note(now, Event.GROUP_DELETED, group, reason=Deletion.DELETE_GROUPS)
            log.info("group %s: deleted", safe(group_id))
        results.append(result_cls(group_id=group_id, error_code=error))
    offsets.apply(out, records)
    out.reply(ctx.token, ApiKey.DELETE_GROUPS, ctx.version, r.DeleteGroupsResponse(results=tuple(results)))
