"""Responses of the group APIs, shaped for the version being answered.

Kafka keeps one response schema across versions; a few fields change meaning with the version
(a null protocol name is sent as "" before JoinGroup v7, LeaveGroup v0-2 carries the single
member's error at the top level, OffsetFetch moved from per-partition to top-level to
per-group errors). Those rules live here, once.
"""

from __future__ import annotations

from functools import lru_cache

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import RESPONSES

from coordinator.errors import GroupError

#: What a group resource allows with no authorizer (Kafka's AclEntry.supportedOperations(GROUP)):
#: READ 3, DELETE 6, DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, as a bit field.
GROUP_OPERATIONS = sum(1 << op for op in (3, 6, 8, 10, 11))

JoinGroupResponse = RESPONSES[ApiKey.JOIN_GROUP].cls
SyncGroupResponse = RESPONSES[ApiKey.SYNC_GROUP].cls
HeartbeatResponse = RESPONSES[ApiKey.HEARTBEAT].cls
LeaveGroupResponse = RESPONSES[ApiKey.LEAVE_GROUP].cls
OffsetCommitResponse = RESPONSES[ApiKey.OFFSET_COMMIT].cls
TxnOffsetCommitResponse = RESPONSES[ApiKey.TXN_OFFSET_COMMIT].cls
OffsetFetchResponse = RESPONSES[ApiKey.OFFSET_FETCH].cls
DescribeGroupsResponse = RESPONSES[ApiKey.DESCRIBE_GROUPS].cls
ListGroupsResponse = RESPONSES[ApiKey.LIST_GROUPS].cls
DeleteGroupsResponse = RESPONSES[ApiKey.DELETE_GROUPS].cls
OffsetDeleteResponse = RESPONSES[ApiKey.OFFSET_DELETE].cls
ConsumerGroupHeartbeatResponse = RESPONSES[ApiKey.CONSUMER_GROUP_HEARTBEAT].cls
ConsumerGroupDescribeResponse = RESPONSES[ApiKey.CONSUMER_GROUP_DESCRIBE].cls


def join(version: int, error: ErrorCode, *, member_id: str = "", generation: int = -1,
         protocol_type: str | None = None, protocol_name: str | None = "", leader: str = "",
         members=(), skip_assignment: bool = False):
    """The protocol name is "" before v7 and null from v7 on wherever none is chosen (Kafka's
    JoinGroupResponse turns one into the other by version)."""
    if version < 7 and protocol_name is None:
        protocol_name = ""
    elif version >= 7 and protocol_name == "":
        protocol_name = None
    return JoinGroupResponse(
        error_code=error, generation_id=generation,
        protocol_type=protocol_type if version >= 7 else None, protocol_name=protocol_name,
        leader=leader, skip_assignment=skip_assignment if version >= 9 else False,
        member_id=member_id, members=tuple(members))


def sync(version: int, error: ErrorCode, assignment: bytes = b"", *,
         protocol_type: str | None = None, protocol_name: str | None = None):
    if version < 5:
        protocol_type = protocol_name = None
    return SyncGroupResponse(error_code=error, assignment=assignment,
                             protocol_type=protocol_type, protocol_name=protocol_name)


@lru_cache(maxsize=None)          # immutable and one of a few: built once per error code
def heartbeat(error: ErrorCode):
    return HeartbeatResponse(error_code=error)


def leave(version: int, results: list[tuple[str, str | None, ErrorCode]],
          error: ErrorCode = ErrorCode.NONE):
    """``results`` are (member id, instance id, error) per member named in the request."""
    if version < 3:
        top = error if error != ErrorCode.NONE or not results else results[0][2]
        return LeaveGroupResponse(error_code=top)
    member = LeaveGroupResponse.MemberResponse
    return LeaveGroupResponse(error_code=error, members=tuple(
        member(member_id=m, group_instance_id=i, error_code=e) for m, i, e in results))


def offset_commit(request, errors: list[ErrorCode]):
    """``errors`` holds one error per requested partition, in request order (a partition
    named twice is answered twice, as Kafka answers it)."""
    topic_cls = OffsetCommitResponse.OffsetCommitResponseTopic
    part_cls = topic_cls.OffsetCommitResponsePartition
    return _per_partition(OffsetCommitResponse, topic_cls, part_cls, request, errors, with_ids=True)


def _per_partition(response_cls, topic_cls, part_cls, request, errors: list[ErrorCode], with_ids: bool = False):
    """``with_ids``: each topic keeps its id too (OffsetCommit v10 names topics by id)."""
    each = iter(errors)
    return response_cls(topics=tuple(
        topic_cls(name=t.name, **({"topic_id": t.topic_id} if with_ids else {}), partitions=tuple(
            part_cls(partition_index=p.partition_index, error_code=next(each)) for p in t.partitions))
        for t in request.topics))


def offset_commit_error(request, error: ErrorCode):
    return offset_commit(request, [error] * sum(len(t.partitions) for t in request.topics))


def txn_offset_commit(request, errors: list[ErrorCode]):
    """One error per requested partition, in request order (as :func:`offset_commit`)."""
    topic_cls = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
    return _per_partition(TxnOffsetCommitResponse, topic_cls,
                          topic_cls.TxnOffsetCommitResponsePartition, request, errors)


def txn_offset_commit_error(request, error: ErrorCode):
    return txn_offset_commit(request, [error] * sum(len(t.partitions) for t in request.topics))


def described_group(version: int, group_id: str, error: ErrorCode = ErrorCode.NONE, *,
                    state: str = "", protocol_type: str = "", protocol_data: str = "",
                    members=(), authorized_operations: int = -2147483648,
                    error_message: str | None = None):
    """A DescribeGroups entry; an error entry has state "" (Kafka's getErrorDescribedGroupList)."""
    return DescribeGroupsResponse.DescribedGroup(
        error_code=error, error_message=error_message if version >= 6 else None,
        group_id=group_id, group_state=state, protocol_type=protocol_type,
        protocol_data=protocol_data, members=tuple(members),
        authorized_operations=authorized_operations if version >= 3 else -2147483648)


def error_response(api_key: int, version: int, request, error: ErrorCode):
    """The whole-request failure answer of a group API (e.g. the shard is unavailable)."""
    if api_key == ApiKey.JOIN_GROUP:
        return join(version, error, member_id=request.member_id)
    if api_key == ApiKey.SYNC_GROUP:
        return sync(version, error)
    if api_key == ApiKey.HEARTBEAT:
        return heartbeat(error)
    if api_key == ApiKey.LEAVE_GROUP:
        return leave(version, [], error)
    if api_key == ApiKey.OFFSET_COMMIT:
        return offset_commit_error(request, error)
    if api_key == ApiKey.OFFSET_FETCH:
        return offset_fetch_error(version, request, error)
    if api_key == ApiKey.TXN_OFFSET_COMMIT:
        return txn_offset_commit_error(request, error)
    if api_key == ApiKey.DESCRIBE_GROUPS:
        return DescribeGroupsResponse(groups=tuple(
            described_group(version, g, error) for g in request.groups))
    if api_key == ApiKey.LIST_GROUPS:
        return ListGroupsResponse(error_code=error)
    if api_key == ApiKey.DELETE_GROUPS:
        result = DeleteGroupsResponse.DeletableGroupResult
        return DeleteGroupsResponse(results=tuple(result(group_id=g, error_code=error)
                                                  for g in request.groups_names))
    if api_key == ApiKey.OFFSET_DELETE:
        return OffsetDeleteResponse(error_code=error)
    if api_key == ApiKey.CONSUMER_GROUP_HEARTBEAT:
        return ConsumerGroupHeartbeatResponse(error_code=error)
    if api_key == ApiKey.CONSUMER_GROUP_DESCRIBE:
        described = ConsumerGroupDescribeResponse.DescribedGroup
        return ConsumerGroupDescribeResponse(groups=tuple(
            described(group_id=g, error_code=error) for g in request.group_ids))
    if api_key in (ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.ALTER_SHARE_GROUP_OFFSETS,
                   ApiKey.DELETE_SHARE_GROUP_OFFSETS, ApiKey.STREAMS_GROUP_HEARTBEAT):
        return RESPONSES[api_key].cls(error_code=error)
    if api_key in (ApiKey.SHARE_GROUP_DESCRIBE, ApiKey.STREAMS_GROUP_DESCRIBE):
        described = RESPONSES[api_key].cls.DescribedGroup
        return RESPONSES[api_key].cls(groups=tuple(described(group_id=g, error_code=error)
                                                   for g in request.group_ids))
    raise ValueError(f"api key {api_key} is not a group API")


def described_groups(group_ids, owns, describe_one, entry_cls) -> tuple:
    """The entries of a share- or streams-group describe: INVALID_GROUP_ID for an empty id,
    NOT_COORDINATOR for a group of another shard, else ``describe_one(group_id)`` or the
    GroupError it raised."""
    entries = []
    for group_id in group_ids:
        if not group_id:
            entries.append(entry_cls(group_id="", error_code=ErrorCode.INVALID_GROUP_ID))
        elif not owns(group_id):
            entries.append(entry_cls(group_id=group_id, error_code=ErrorCode.NOT_COORDINATOR))
        else:
            try:
                entries.append(describe_one(group_id))
            except GroupError as e:
                entries.append(entry_cls(group_id=group_id, error_code=e.code, error_message=e.message))
    return tuple(entries)


def operation_failed(api_key: int, version: int, request, error: ErrorCode):
    """The answer to a request whose operation threw (Kafka's handleOperationException): the
    whole-request error, and for JoinGroup no member id at all."""
    if api_key == ApiKey.JOIN_GROUP:
        return join(version, error)
    return error_response(api_key, version, request, error)


# --- OffsetFetch, whose shape changed most across versions --------------------------------
#
# Kafka answers each group through its coordinator; a group-level error (invalid id, not the
# coordinator, loading) comes back as the group's ErrorCode with no topics at all (KafkaApis
# fetchOffsetsForGroup), and OffsetFetchResponse(groups, version) moves it to the top level
# for v2-7. A v1 response has no field for it, so a v1 client sees an empty answer.

def offset_fetch_partitions(version: int, topic_offsets):
    """``topic_offsets``: [(topic, [(partition, offset, leader_epoch, metadata)])]."""
    if version >= 8:
        tcls = OffsetFetchResponse.OffsetFetchResponseGroup.OffsetFetchResponseTopics
        pcls = tcls.OffsetFetchResponsePartitions
    else:
        tcls = OffsetFetchResponse.OffsetFetchResponseTopic
        pcls = tcls.OffsetFetchResponsePartition
    return tuple(
        tcls(name=topic, partitions=tuple(
            pcls(partition_index=p, committed_offset=o, committed_leader_epoch=e if version >= 5 else -1,
                 metadata=m, error_code=error[0] if error else ErrorCode.NONE)
            for p, o, e, m, *error in parts))
        for topic, parts in topic_offsets)


def offset_fetch_group(version: int, group_id: str, topic_offsets, error: ErrorCode = ErrorCode.NONE):
    topics = offset_fetch_partitions(version, topic_offsets) if error == ErrorCode.NONE else ()
    return OffsetFetchResponse.OffsetFetchResponseGroup(group_id=group_id, topics=topics,
                                                        error_code=error)


def offset_fetch_single(version: int, topic_offsets, error: ErrorCode = ErrorCode.NONE):
    """v1-7: one group, its error at the top level (v2-7)."""
    topics = offset_fetch_partitions(version, topic_offsets) if error == ErrorCode.NONE else ()
    return OffsetFetchResponse(topics=topics, error_code=error if version >= 2 else ErrorCode.NONE)


def requested_topics(version: int, request):
    """[(group id, topics or None)] whatever the request version."""
    if version >= 8:
        return [(g.group_id, g.topics) for g in request.groups]
    return [(request.group_id, request.topics)]


def offset_fetch_error(version: int, request, error: ErrorCode):
    if version >= 8:
        return OffsetFetchResponse(groups=tuple(
            offset_fetch_group(version, gid, [], error) for gid, _ in requested_topics(version, request)))
    return offset_fetch_single(version, [], error)
