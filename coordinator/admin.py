"""DescribeGroups, ListGroups and DeleteGroups: the views and removals admin tools use."""

from __future__ import annotations

from offsets_log.records import (GroupMetadataTombstone, OffsetCommitTombstone, group_metadata_key,
                                 offset_commit_key, tombstone)
from protocol.errors import ErrorCode

from . import responses as r
from .actions import RequestContext
from .shard import S, Shard

E = ErrorCode

#: READ | DELETE | DESCRIBE (AclOperation codes 3, 6, 8): all a group allows without ACLs.
GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)


def describe_groups(shard: Shard, now: int, ctx: RequestContext, req) -> None:
    v = ctx.version
    ops = GROUP_OPERATIONS if req.include_authorized_operations else -2147483648
    shard.reply(ctx.token, r.DESCRIBE_GROUPS, v, r.DescribeGroupsResponse(
        groups=tuple(_describe(shard, v, gid, ops) for gid in req.groups)))


def _describe(shard: Shard, v: int, group_id: str, ops: int):
    if not shard.owns(group_id):
        return r.described_group(v, group_id, E.NOT_COORDINATOR)
    group = shard.groups.get(group_id)
    if group is None or group.is_in(S.DEAD):
        if v >= 6:
            return r.described_group(v, group_id, E.GROUP_ID_NOT_FOUND,
                                     error_message=f"Group {group_id} not found.")
        return r.described_group(v, group_id)
    stable = group.is_in(S.STABLE)
    member_cls = r.DescribeGroupsResponse.DescribedGroup.DescribedGroupMember
    members = [member_cls(member_id=m.member_id,
                          group_instance_id=m.group_instance_id if v >= 4 else None,
                          client_id=m.client_id, client_host=m.client_host,
                          member_metadata=m.metadata(group.protocol_name) if stable else b"",
                          member_assignment=m.assignment if stable else b"")
               for m in group.members.values()]
    return r.described_group(v, group_id, state=group.state.value, protocol_type=group.protocol_type,
                             protocol_data=(group.protocol_name or "") if stable else "",
                             members=members, authorized_operations=ops)


def list_groups(shard: Shard, now: int, ctx: RequestContext, req) -> None:
    states = {s.lower() for s in req.states_filter}
    types = {t.lower() for t in req.types_filter}
    listed = r.ListGroupsResponse.ListedGroup
    groups = tuple(
        listed(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state.value,
               group_type="classic")
        for g in shard.groups.values()
        if not g.is_in(S.DEAD) and (not states or g.state.value.lower() in states)
        and (not types or "classic" in types))
    shard.reply(ctx.token, r.LIST_GROUPS, ctx.version, r.ListGroupsResponse(error_code=E.NONE, groups=groups))


def delete_groups(shard: Shard, now: int, ctx: RequestContext, req) -> None:
    result_cls = r.DeleteGroupsResponse.DeletableGroupResult
    results, records, applied = [], [], []
    for group_id in req.groups_names:
        group = shard.groups.get(group_id)
        if not shard.owns(group_id):
            error = E.NOT_COORDINATOR
        elif group is None or group.is_in(S.DEAD):
            error = E.GROUP_ID_NOT_FOUND
        elif not group.is_in(S.EMPTY):
            error = E.NON_EMPTY_GROUP
        else:
            error = E.NONE
            for topic, partition in sorted(shard.offsets.get(group_id, {})):
                records.append(tombstone(offset_commit_key(group_id, topic, partition)))
                applied.append(OffsetCommitTombstone(group_id, topic, partition))
            records.append(tombstone(group_metadata_key(group_id)))
            applied.append(GroupMetadataTombstone(group_id))
        results.append(result_cls(group_id=group_id, error_code=error))
    for record in applied:
        shard.replay(record)
    shard.persist(records)
    shard.reply(ctx.token, r.DELETE_GROUPS, ctx.version, r.DeleteGroupsResponse(results=tuple(results)))
