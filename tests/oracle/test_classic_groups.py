"""The classic group protocol against Apache Kafka: every version of each API, and the error
paths in Kafka's order of checks. Each answer is compared field by field."""

import pytest

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.oracle.steps import create_topic, join_body, req, stable_member, sub, unique, versions
from tests.support.differential import Alias


@pytest.mark.parametrize("version", versions(ApiKey.FIND_COORDINATOR))
async def test_find_coordinator(oracle, request, version):
    group = unique(request)
    if version < 4:
        for key_type in (0, 1) if version >= 1 else (0,):
            await oracle.call(ApiKey.FIND_COORDINATOR, version, req(ApiKey.FIND_COORDINATOR, key=group,
                                                                   key_type=key_type))
    else:
        await oracle.call(ApiKey.FIND_COORDINATOR, version, req(
            ApiKey.FIND_COORDINATOR, key_type=0, coordinator_keys=(group, group + "-b", "")))
        await oracle.call(ApiKey.FIND_COORDINATOR, version, req(
            ApiKey.FIND_COORDINATOR, key_type=1, coordinator_keys=(group,)))
        await oracle.call(ApiKey.FIND_COORDINATOR, version, req(
            ApiKey.FIND_COORDINATOR, key_type=7, coordinator_keys=(group,)), what="unknown key type")


@pytest.mark.parametrize("version", versions(ApiKey.JOIN_GROUP))
async def test_join_group_new_member_then_rejoin(oracle, request, version):
    group = unique(request)
    first = await oracle.call(ApiKey.JOIN_GROUP, version, join_body(group))
    member = Alias(first["member_id"])
    if first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED:
        first = await oracle.call(ApiKey.JOIN_GROUP, version, join_body(group, member))
    assert first["error_code"] == ErrorCode.NONE
    # the leader rejoins a group that is now CompletingRebalance: the same generation comes back
    await oracle.call(ApiKey.JOIN_GROUP, version, join_body(group, member), what="rejoin")


@pytest.mark.parametrize("version", versions(ApiKey.JOIN_GROUP))
async def test_join_group_errors(oracle, request, version):
    group = unique(request)
    await oracle.call(ApiKey.JOIN_GROUP, version, join_body(group, session_timeout_ms=10),
                      what="session timeout below the minimum")
    await oracle.call(ApiKey.JOIN_GROUP, version, join_body(group, session_timeout_ms=10_000_000),
                      what="session timeout above the maximum")
    await oracle.call(ApiKey.JOIN_GROUP, version, join_body(group, "no-such-member"),
                      what="unknown member id on a new group")
    await oracle.call(ApiKey.JOIN_GROUP, version, join_body(group, protocols=()), what="no protocols")
    await oracle.call(ApiKey.JOIN_GROUP, version, join_body(group, protocol_type=""), what="empty protocol type")
    await oracle.call(ApiKey.JOIN_GROUP, version, join_body("", protocols=("range",)), what="empty group id")
    member, _ = await stable_member(oracle, group)
    await oracle.call(ApiKey.JOIN_GROUP, version, join_body(group, protocols=("roundrobin",)),
                      what="a protocol the group does not support")
    await oracle.call(ApiKey.JOIN_GROUP, version, join_body(group, protocol_type="connect"),
                      what="another protocol type")


@pytest.mark.parametrize("version", versions(ApiKey.SYNC_GROUP))
async def test_sync_group(oracle, request, version):
    group = unique(request)
    first = await oracle.call(ApiKey.JOIN_GROUP, 9, join_body(group))
    member = Alias(first["member_id"])
    joined = await oracle.call(ApiKey.JOIN_GROUP, 9, join_body(group, member))

    def sync(generation, member_id, protocol_name="range", protocol_type="consumer", assignments=None):
        return req(ApiKey.SYNC_GROUP, group_id=group, generation_id=generation, member_id=member_id,
                   protocol_type=protocol_type, protocol_name=protocol_name, assignments=tuple(
                       sub(ApiKey.SYNC_GROUP, "SyncGroupRequestAssignment", member_id=m, assignment=b"a")
                       for m in (assignments if assignments is not None else [member_id])))
    generation = joined["generation_id"]
    await oracle.call(ApiKey.SYNC_GROUP, version, sync(generation + 1, member), what="wrong generation")
    await oracle.call(ApiKey.SYNC_GROUP, version, sync(generation, "stranger"), what="unknown member")
    await oracle.call(ApiKey.SYNC_GROUP, version, sync(generation, member, protocol_name="roundrobin"),
                      what="another protocol name")
    await oracle.call(ApiKey.SYNC_GROUP, version, sync(generation, member, protocol_type="connect"),
                      what="another protocol type")
    await oracle.call(ApiKey.SYNC_GROUP, version, sync(generation, member), what="the leader's assignment")
    await oracle.call(ApiKey.SYNC_GROUP, version, sync(generation, member, assignments=[]),
                      what="sync again once stable")
    await oracle.call(ApiKey.SYNC_GROUP, version, sync(generation, member, assignments=[]) if version
                      else sync(generation, member), what="sync of an unknown group")


@pytest.mark.parametrize("version", versions(ApiKey.HEARTBEAT))
async def test_heartbeat(oracle, request, version):
    group = unique(request)

    def beat(generation, member_id, instance_id=None):
        return req(ApiKey.HEARTBEAT, group_id=group, generation_id=generation, member_id=member_id,
                   group_instance_id=instance_id)
    await oracle.call(ApiKey.HEARTBEAT, version, beat(1, "nobody"), what="unknown group")
    member, generation = await stable_member(oracle, group)
    await oracle.call(ApiKey.HEARTBEAT, version, beat(generation, member), what="stable")
    await oracle.call(ApiKey.HEARTBEAT, version, beat(generation + 1, member), what="wrong generation")
    await oracle.call(ApiKey.HEARTBEAT, version, beat(generation, "stranger"), what="unknown member")
    await oracle.call(ApiKey.HEARTBEAT, version, beat(-1, member), what="generation -1")
    await oracle.call(ApiKey.JOIN_GROUP, 9, join_body(group), what="a second member starts a rebalance")
    await oracle.call(ApiKey.HEARTBEAT, version, beat(generation, member), what="during the rebalance")
    if version >= 3:
        await oracle.call(ApiKey.HEARTBEAT, version, beat(generation, member, "nobody's"),
                          what="an instance id the member does not have")


@pytest.mark.parametrize("version", versions(ApiKey.LEAVE_GROUP))
async def test_leave_group(oracle, request, version):
    group = unique(request)

    def leave(*members):
        if version < 3:
            return req(ApiKey.LEAVE_GROUP, group_id=group, member_id=members[0][0])
        return req(ApiKey.LEAVE_GROUP, group_id=group, members=tuple(
            sub(ApiKey.LEAVE_GROUP, "MemberIdentity", member_id=m, group_instance_id=i, reason="bye")
            for m, i in members))
    await oracle.call(ApiKey.LEAVE_GROUP, version, leave(("nobody", None)), what="unknown group")
    member, _ = await stable_member(oracle, group)
    await oracle.call(ApiKey.LEAVE_GROUP, version, leave(("stranger", None)), what="unknown member")
    if version >= 3:
        await oracle.call(ApiKey.LEAVE_GROUP, version, leave((member, None), ("stranger", None)),
                          what="one known, one unknown")
    else:
        await oracle.call(ApiKey.LEAVE_GROUP, version, leave((member, None)), what="the member leaves")
    await oracle.call(ApiKey.DESCRIBE_GROUPS, 5, req(ApiKey.DESCRIBE_GROUPS, groups=(group,),
                                                     include_authorized_operations=False))


@pytest.mark.parametrize("version", [v for v in versions(ApiKey.LEAVE_GROUP) if v >= 3])
async def test_static_members_leave_and_are_fenced(oracle, request, version):
    group = unique(request)
    member, generation = await stable_member(oracle, group, instance_id="i-1")
    leave = req(ApiKey.LEAVE_GROUP, group_id=group, members=(
        sub(ApiKey.LEAVE_GROUP, "MemberIdentity", member_id="someone-else", group_instance_id="i-1"),))
    await oracle.call(ApiKey.LEAVE_GROUP, version, leave, what="the instance with another member id")
    await oracle.call(ApiKey.HEARTBEAT, 4, req(ApiKey.HEARTBEAT, group_id=group, generation_id=generation,
                                               member_id="someone-else", group_instance_id="i-1"),
                      what="a fenced instance heartbeats")
    leave = req(ApiKey.LEAVE_GROUP, group_id=group, members=(
        sub(ApiKey.LEAVE_GROUP, "MemberIdentity", member_id="", group_instance_id="i-1"),
        sub(ApiKey.LEAVE_GROUP, "MemberIdentity", member_id="", group_instance_id="i-unknown")))
    await oracle.call(ApiKey.LEAVE_GROUP, version, leave, what="by instance id, one unknown")


@pytest.mark.parametrize("version", versions(ApiKey.JOIN_GROUP)[5:])
async def test_static_member_rejoins_with_a_new_member_id(oracle, request, version):
    group = unique(request)
    member, generation = await stable_member(oracle, group, instance_id="i-1")
    again = await oracle.call(ApiKey.JOIN_GROUP, version, join_body(group, instance_id="i-1"),
                              what="the same instance joins again with no member id")
    await oracle.call(ApiKey.HEARTBEAT, 4, req(ApiKey.HEARTBEAT, group_id=group, generation_id=generation,
                                               member_id=member, group_instance_id="i-1"),
                      what="the old member id is fenced")
    await oracle.call(ApiKey.HEARTBEAT, 4, req(ApiKey.HEARTBEAT, group_id=group,
                                               generation_id=again["generation_id"],
                                               member_id=Alias(again["member_id"]), group_instance_id="i-1"),
                      what="the new member id beats")


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_GROUPS))
async def test_describe_groups(oracle, request, version):
    group = unique(request)
    await stable_member(oracle, group, protocols=("range", "roundrobin"))
    await oracle.call(ApiKey.DESCRIBE_GROUPS, version, req(
        ApiKey.DESCRIBE_GROUPS, groups=(group, group + "-none", ""), include_authorized_operations=version >= 3))


@pytest.mark.parametrize("version", versions(ApiKey.LIST_GROUPS))
async def test_list_groups(oracle, request, version):
    group = unique(request)
    await stable_member(oracle, group)
    body = req(ApiKey.LIST_GROUPS, states_filter=("Stable",) if version >= 4 else (),
               types_filter=("classic",) if version >= 5 else ())
    ours, kafka = await oracle.both(ApiKey.LIST_GROUPS, version, body)
    mine = [g for g in ours.groups if g.group_id == group]
    theirs = [g for g in kafka.groups if g.group_id == group]
    assert theirs, kafka
    oracle.compare(ApiKey.LIST_GROUPS, version, ours.__class__(error_code=ours.error_code, groups=tuple(mine)),
                   kafka.__class__(error_code=kafka.error_code, groups=tuple(theirs)))


@pytest.mark.parametrize("version", versions(ApiKey.DELETE_GROUPS))
async def test_delete_groups(oracle, request, version):
    group = unique(request)
    await stable_member(oracle, group)
    topic = unique(request, "-t")
    await create_topic(oracle, topic, 1)
    await oracle.call(ApiKey.OFFSET_COMMIT, 8, req(
        ApiKey.OFFSET_COMMIT, group_id=group + "-empty", generation_id_or_member_epoch=-1, topics=(
            sub(ApiKey.OFFSET_COMMIT, "OffsetCommitRequestTopic", name=topic, partitions=(
                sub(ApiKey.OFFSET_COMMIT, "OffsetCommitRequestPartition", partition_index=0, committed_offset=3,
                    committed_metadata=""),)),)), what="a group with offsets and no members")
    await oracle.call(ApiKey.DELETE_GROUPS, version, req(
        ApiKey.DELETE_GROUPS, groups_names=(group, group + "-none", group + "-empty", "")))
