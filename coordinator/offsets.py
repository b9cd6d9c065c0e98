"""OffsetCommit, OffsetFetch, OffsetDelete and offset expiry (KIP-211).

Every change to offsets is a record: the handler builds typed records, hands their wire form
to ``shard.persist`` and applies them with ``shard.replay`` — the same path recovery takes
(Kafka's OffsetMetadataManager replays its own writes the same way).
"""

from __future__ import annotations

import logging

from offsets_log.errors import RecordError
from offsets_log.records import (GroupMetadataTombstone, OffsetCommit, OffsetCommitTombstone,
                                 Record, group_metadata_key, offset_commit_key,
                                 offset_commit_record, tombstone)
from protocol.errors import ErrorCode
from protocol.logtext import safe

from . import responses as r
from .actions import RequestContext
from .events import Deletion, Event
from .group import ClassicGroup
from .membership import unstorable, validate_member
from .shard import S, Shard

log = logging.getLogger("groupbroker.coordinator")

E = ErrorCode


def utf16_length(text: str) -> int:
    """Java's String.length(): UTF-16 code units, which is what offset.metadata.max.bytes counts."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _metadata_too_large(text: str, limit: int) -> bool:
    """A UTF-16 string is at most twice as long as its code points: only long ones are measured."""
    return 2 * len(text) > limit and utf16_length(text) > limit


def wire(record) -> Record:
    """The log form of a typed offset record."""
    if isinstance(record, OffsetCommit):
        return offset_commit_record(record.group, record.topic, record.partition, record.offset,
                                    record.leader_epoch, record.metadata, record.commit_ts,
                                    record.expire_ts)
    if isinstance(record, OffsetCommitTombstone):
        return tombstone(offset_commit_key(record.group, record.topic, record.partition))
    return tombstone(group_metadata_key(record.group))


def apply(shard: Shard, records: list) -> None:
    """Persist typed records, then apply them to the shard's state exactly as a reload would."""
    shard.persist([wire(rec) for rec in records])
    for rec in records:
        shard.replay(rec)


def is_subscribed(group: ClassicGroup, topic: str) -> bool:
    """Kafka's ClassicGroup.isSubscribedToTopic: unknown subscriptions count for "consumer" groups."""
    if group.subscribed_topics is None:
        return group.protocol_type == "consumer"
    return topic in group.subscribed_topics


# --- OffsetCommit -----------------------------------------------------------------------------

def offset_commit(shard: Shard, now: int, ctx: RequestContext, req) -> None:
    v = ctx.version
    error = _commit_error(shard, v, req)
    if error != E.NONE:
        shard.reply(ctx.token, r.OFFSET_COMMIT, v, r.offset_commit_error(req, error))
        return
    expire = None if req.retention_time_ms == -1 else now + req.retention_time_ms
    limit = shard.config.offset_metadata_max_bytes
    errors: dict[tuple[str, int], ErrorCode] = {}
    records = []
    for topic in req.topics:
        for p in topic.partitions:
            if p.committed_metadata and _metadata_too_large(p.committed_metadata, limit):
                errors[(topic.name, p.partition_index)] = E.OFFSET_METADATA_TOO_LARGE
                continue
            errors[(topic.name, p.partition_index)] = E.NONE
            records.append(OffsetCommit(req.group_id, topic.name, p.partition_index,
                                        p.committed_offset, p.committed_leader_epoch,
                                        p.committed_metadata or "", now, expire))
    try:
        shard.persist([wire(rec) for rec in records])     # before anything changes
    except RecordError as e:
        error = unstorable(ctx, f"group {safe(req.group_id)}: the offsets cannot be stored ({e})")
        shard.reply(ctx.token, r.OFFSET_COMMIT, v, r.offset_commit_error(req, error))
        return
    if req.group_id not in shard.groups:
        log.info("group %s: created as a simple group by a manual offset commit", safe(req.group_id))
        shard.groups[req.group_id] = ClassicGroup(req.group_id, current_state_ts=now)
    group = shard.groups[req.group_id]
    member = group.members.get(req.member_id)
    if member is not None and group.is_in(S.STABLE, S.PREPARING_REBALANCE):
        shard.schedule_session(group, member, now)      # commits keep a classic member alive
    for rec in records:
        shard.replay(rec)
    if shard.journal and records:
        shard.note(now, Event.OFFSETS_COMMITTED, group, req.member_id or None,
                   generation_sent=req.generation_id_or_member_epoch,
                   offsets=records)
    shard.reply(ctx.token, r.OFFSET_COMMIT, v, r.offset_commit(req, errors))


def _commit_error(shard: Shard, v: int, req) -> ErrorCode:
    """OffsetMetadataManager.validateOffsetCommit, then ClassicGroup.validateOffsetCommit."""
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
    """[(topic, [(partition, offset, leader epoch, metadata)])]; -1 where nothing is committed.

    An unknown (or Dead) group is not an error for classic groups: Kafka's fetchOffsets answers
    -1 for every requested partition and fetchAllOffsets an empty list.
    """
    group = shard.groups.get(group_id)
    known = group is not None and not group.is_in(S.DEAD)
    offsets = shard.offsets.get(group_id, {}) if known else {}
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

    if not req.group_id:
        return fail(E.INVALID_GROUP_ID)
    if not shard.owns(req.group_id):
        return fail(E.NOT_COORDINATOR)
    group = shard.groups.get(req.group_id)
    if group is None or group.is_in(S.DEAD):
        return fail(E.GROUP_ID_NOT_FOUND)
    if not group.is_in(S.EMPTY) and group.protocol_type != "consumer":
        return fail(E.NON_EMPTY_GROUP)      # only "consumer" groups may lose offsets while active
    offsets = shard.offsets.get(req.group_id, {})
    topic_cls = r.OffsetDeleteResponse.OffsetDeleteResponseTopic
    part_cls = topic_cls.OffsetDeleteResponsePartition
    records, topics = [], []
    for t in req.topics:
        error = E.GROUP_SUBSCRIBED_TO_TOPIC if is_subscribed(group, t.name) else E.NONE
        for p in t.partitions:
            if error == E.NONE and (t.name, p.partition_index) in offsets:
                records.append(OffsetCommitTombstone(req.group_id, t.name, p.partition_index))
        topics.append(topic_cls(name=t.name, partitions=tuple(
            part_cls(partition_index=p.partition_index, error_code=error) for p in t.partitions)))
    apply(shard, records)
    shard.reply(ctx.token, r.OFFSET_DELETE, ctx.version,
                r.OffsetDeleteResponse(error_code=E.NONE, topics=tuple(topics)))


# --- expiry -----------------------------------------------------------------------------------

def expire_offsets(shard: Shard, now: int) -> None:
    """Kafka's cleanupGroupMetadata: tombstone expired offsets, then drop Empty groups left bare.

    A group with no offsets at all counts as "all expired", so an Empty group without offsets
    is removed too (OffsetMetadataManager.cleanupExpiredOffsets returns true for it).
    """
    retention = shard.config.offsets_retention_ms
    records = []
    for group_id, group in list(shard.groups.items()):
        offsets = shard.offsets.get(group_id, {})
        base = _retention_base(group)
        if offsets and base is None:
            continue                           # rebalancing, or members of a non-consumer group
        expired = [key for key, c in offsets.items()
                   if not is_subscribed(group, key[0]) and _expired(c, base(c), now, retention)]
        records += [OffsetCommitTombstone(group_id, topic, partition) for topic, partition in expired]
        if len(expired) == len(offsets) and group.is_in(S.EMPTY):
            records.append(GroupMetadataTombstone(group_id))
            shard.note(now, Event.GROUP_DELETED, group, reason=Deletion.OFFSETS_EXPIRED)
        if expired:
            log.info("group %s: %d offsets expired", safe(group_id), len(expired))
    apply(shard, records)


def _retention_base(group: ClassicGroup):
    """ClassicGroup.offsetExpirationCondition: where each offset's retention clock starts, or None."""
    if group.protocol_type:
        if group.is_in(S.EMPTY):
            return lambda c: group.current_state_ts if group.current_state_ts >= 0 else c.commit_ts
        if group.protocol_type == "consumer" and group.subscribed_topics is not None \
                and group.is_in(S.STABLE):
            return lambda c: c.commit_ts
        return None
    return lambda c: c.commit_ts                # a simple group: each commit's own age


def _expired(c, base: int, now: int, retention: int) -> bool:
    """OffsetExpirationConditionImpl.isOffsetExpired: an explicit expiry (value v1) wins."""
    if c.expire_ts is not None:
        return now >= c.expire_ts
    return now - base >= retention


def forget_topics(shard: Shard, topics: set[str]) -> None:
    """Tombstone every committed offset of deleted topics, in every group of the shard."""
    records, gone = [], []
    for group_id, offsets in list(shard.offsets.items()):
        for topic, partition in sorted(k for k in offsets if k[0] in topics):
            records.append(tombstone(offset_commit_key(group_id, topic, partition)))
            gone.append(OffsetCommitTombstone(group_id, topic, partition))
    for record in gone:
        shard.replay(record)
    shard.persist(records)
