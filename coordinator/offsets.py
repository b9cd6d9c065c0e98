"""OffsetCommit, OffsetFetch, OffsetDelete and offset expiry (KIP-211).

Every change to offsets is a record: the handler builds the records, hands them to
``shard.persist`` and applies them with ``shard.replay`` — the same path recovery takes.
"""

from __future__ import annotations

from offsets_log.records import (OffsetCommit, OffsetCommitTombstone, GroupMetadataTombstone,
                                 group_metadata_key, offset_commit_key, offset_commit_record,
                                 tombstone)
from protocol.errors import ErrorCode

from . import responses as r
from .actions import RequestContext
from .membership import validate_member
from .shard import S, Shard

E = ErrorCode


def utf16_length(text: str) -> int:
    """Java's String.length(): UTF-16 code units, which is what offset.metadata.max.bytes counts."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


# --- OffsetCommit -----------------------------------------------------------------------------

def offset_commit(shard: Shard, now: int, ctx: RequestContext, req) -> None:
    v = ctx.version
    error = _commit_error(shard, v, req)
    if error != E.NONE:
        shard.reply(ctx.token, r.OFFSET_COMMIT, v, r.offset_commit_error(req, error))
        return
    errors: dict[tuple[str, int], ErrorCode] = {}
    records = []
    applied = []
    limit = shard.config.offset_metadata_max_bytes
    expire = now + req.retention_time_ms if 2 <= v <= 4 and req.retention_time_ms != -1 else None
    for topic in req.topics:
        for p in topic.partitions:
            metadata = p.committed_metadata or ""
            if utf16_length(metadata) > limit:
                errors[(topic.name, p.partition_index)] = E.OFFSET_METADATA_TOO_LARGE
                continue
            errors[(topic.name, p.partition_index)] = E.NONE
            records.append(offset_commit_record(req.group_id, topic.name, p.partition_index,
                                                p.committed_offset, p.committed_leader_epoch,
                                                metadata, now, expire))
            applied.append(OffsetCommit(req.group_id, topic.name, p.partition_index,
                                        p.committed_offset, p.committed_leader_epoch, metadata,
                                        now, expire))
    for record in applied:
        shard.replay(record)
    group = shard.groups.get(req.group_id)
    member = group.members.get(req.member_id) if group else None
    if member is not None and group.is_in(S.STABLE, S.PREPARING_REBALANCE):
        shard.schedule_session(group, member, now)
    shard.persist(records)
    shard.reply(ctx.token, r.OFFSET_COMMIT, v, r.offset_commit(req, errors))


def _commit_error(shard: Shard, v: int, req) -> ErrorCode:
    """Group-level checks of Kafka's OffsetMetadataManager/ClassicGroup.validateOffsetCommit."""
    if req.group_id is None:
        return E.INVALID_GROUP_ID
    if not shard.owns(req.group_id):
        return E.NOT_COORDINATOR
    generation = req.generation_id_or_member_epoch
    group = shard.groups.get(req.group_id)
    if group is None:
        if generation < 0:
            return E.NONE                       # a "simple" commit creates the group
        return E.GROUP_ID_NOT_FOUND if v >= 9 else E.ILLEGAL_GENERATION
    if group.is_in(S.DEAD):
        return E.COORDINATOR_NOT_AVAILABLE
    if generation < 0 and group.is_in(S.EMPTY):
        return E.NONE
    if generation >= 0 or req.member_id != "" or req.group_instance_id is not None:
        error = validate_member(group, req.member_id, req.group_instance_id)
        if error != E.NONE:
            return error
        if generation != group.generation:
            return E.ILLEGAL_GENERATION
    elif not group.is_in(S.EMPTY):
        return E.UNKNOWN_MEMBER_ID
    if group.is_in(S.COMPLETING_REBALANCE):
        return E.REBALANCE_IN_PROGRESS
    return E.NONE


# --- OffsetFetch ------------------------------------------------------------------------------

def offset_fetch(shard: Shard, now: int, ctx: RequestContext, req) -> None:
    v = ctx.version
    answers = []
    for group_id, topics in r.requested_topics(v, req):
        if group_id is None:
            answers.append((group_id, [], E.INVALID_GROUP_ID))
        elif not shard.owns(group_id):
            answers.append((group_id, [], E.NOT_COORDINATOR))
        else:
            answers.append((group_id, committed(shard, group_id, topics), E.NONE))
    if v >= 8:
        response = r.OffsetFetchResponse(groups=tuple(
            r.offset_fetch_group(v, gid, parts, error) for gid, parts, error in answers))
    else:
        _, parts, error = answers[0]
        response = r.offset_fetch_single(v, parts, error)
    shard.reply(ctx.token, r.OFFSET_FETCH, v, response)


def committed(shard: Shard, group_id: str, topics):
    """[(topic, [(partition, offset, leader epoch, metadata)])]; -1 where nothing is committed."""
    offsets = shard.offsets.get(group_id, {})
    if topics is None:
        by_topic: dict[str, list] = {}
        for (topic, partition), c in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append((partition, c.offset, c.leader_epoch, c.metadata))
        return list(by_topic.items())
    out = []
    for t in topics:
        parts = []
        for p in t.partition_indexes:
            c = offsets.get((t.name, p))
            parts.append((p, -1, -1, "") if c is None else (p, c.offset, c.leader_epoch, c.metadata))
        out.append((t.name, parts))
    return out


# --- OffsetDelete -----------------------------------------------------------------------------

def offset_delete(shard: Shard, now: int, ctx: RequestContext, req) -> None:
    def fail(error: ErrorCode) -> None:
        shard.reply(ctx.token, r.OFFSET_DELETE, ctx.version, r.OffsetDeleteResponse(error_code=error))

    if req.group_id == "":
        return fail(E.INVALID_GROUP_ID)
    if not shard.owns(req.group_id):
        return fail(E.NOT_COORDINATOR)
    group = shard.groups.get(req.group_id)
    if group is None or group.is_in(S.DEAD):
        return fail(E.GROUP_ID_NOT_FOUND)
    active = not group.is_in(S.EMPTY)
    if active and group.protocol_type != "consumer":
        return fail(E.NON_EMPTY_GROUP)
    offsets = shard.offsets.get(req.group_id, {})
    records, gone = [], []
    topic_cls = r.OffsetDeleteResponse.OffsetDeleteResponseTopic
    part_cls = topic_cls.OffsetDeleteResponsePartition
    topics = []
    for t in req.topics:
        subscribed = active and (group.subscribed_topics is None or t.name in group.subscribed_topics)
        parts = []
        for p in t.partitions:
            error = E.GROUP_SUBSCRIBED_TO_TOPIC if subscribed else E.NONE
            if error == E.NONE and (t.name, p.partition_index) in offsets:
                records.append(tombstone(offset_commit_key(req.group_id, t.name, p.partition_index)))
                gone.append(OffsetCommitTombstone(req.group_id, t.name, p.partition_index))
            parts.append(part_cls(partition_index=p.partition_index, error_code=error))
        topics.append(topic_cls(name=t.name, partitions=tuple(parts)))
    for record in gone:
        shard.replay(record)
    shard.persist(records)
    shard.reply(ctx.token, r.OFFSET_DELETE, ctx.version,
                r.OffsetDeleteResponse(error_code=E.NONE, topics=tuple(topics)))


# --- expiry -----------------------------------------------------------------------------------

def expire_offsets(shard: Shard, now: int) -> None:
    """Tombstone offsets past retention (§5.4 rules); remove Empty groups left with none."""
    retention = shard.config.offsets_retention_ms
    records, applied = [], []
    for group_id, group in list(shard.groups.items()):
        offsets = shard.offsets.get(group_id, {})
        expired = [key for key, c in offsets.items() if _expired(group, c, key[0], now, retention)]
        for topic, partition in expired:
            records.append(tombstone(offset_commit_key(group_id, topic, partition)))
            applied.append(OffsetCommitTombstone(group_id, topic, partition))
        if group.is_in(S.EMPTY) and len(expired) == len(offsets):
            records.append(tombstone(group_metadata_key(group_id)))
            applied.append(GroupMetadataTombstone(group_id))
    for record in applied:
        shard.replay(record)
    shard.persist(records)


def _expired(group, c, topic: str, now: int, retention: int) -> bool:
    if group.protocol_type and group.is_in(S.EMPTY):
        base = group.current_state_ts if group.current_state_ts >= 0 else c.commit_ts
    elif (group.protocol_type == "consumer" and group.is_in(S.STABLE)
          and group.subscribed_topics is not None):
        if topic in group.subscribed_topics:
            return False
        base = c.commit_ts
    elif not group.protocol_type:
        base = c.commit_ts
    else:
        return False                              # rebalancing or unknown use: keep everything
    if c.expire_ts is not None:
        return now >= c.expire_ts
    return now - base >= retention
