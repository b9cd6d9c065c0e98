"""Committed offsets (Kafka's OffsetMetadataManager): OffsetCommit, OffsetFetch, OffsetDelete,
offset expiry (KIP-211) and the offsets of deleted topics.

Every change to offsets is a record: the manager builds typed records, persists their wire form
in the operation's result and applies them with ``replay`` — the same path recovery takes
(Kafka's OffsetMetadataManager replays its own writes the same way). Group types share it:
it validates a commit against the group it names.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from offsets_log.errors import RecordError
from offsets_log.records import (SHARE_GROUP_KEYS, STREAMS_GROUP_KEYS, GroupMetadataTombstone, OffsetCommit,
                                 OffsetCommitTombstone, TransactionMarker, encode_record, offset_commit_key, tombstone)
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.logtext import safe

from coordinator import responses as r
from coordinator.actions import RequestContext
from coordinator.classic.group import ClassicGroup
from coordinator.classic.manager import S, ClassicGroupManager
from coordinator.classic.membership import unstorable, validate_member
from coordinator.config import CoordinatorConfig
from coordinator.events import Deletion, Event
from coordinator.result import CoordinatorResult
from coordinator.timers import Timers

log = logging.getLogger("groupbroker.coordinator")

E = ErrorCode


def utf16_length(text: str) -> int:
    """Java's String.length(): UTF-16 code units, which is what offset.metadata.max.bytes counts."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


_NONE, _METADATA_TOO_LARGE = E.NONE, E.OFFSET_METADATA_TOO_LARGE     # looked up per partition


def _metadata_too_large(text: str, limit: int) -> bool:
    """A UTF-16 string is at most twice as long as its code points: only long ones are measured."""
    return 2 * len(text) > limit and utf16_length(text) > limit


def is_subscribed(group, topic: str) -> bool:
    """Kafka's isSubscribedToTopic; for a classic group unknown subscriptions count for
    "consumer" groups."""
    if not isinstance(group, ClassicGroup):
        return group.is_subscribed(topic)
    if group.subscribed_topics is None:
        return group.protocol_type == "consumer"
    return topic in group.subscribed_topics


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




def _classic_commit_error(group: ClassicGroup, generation: int, member_id: str, instance: str | None,
                          transactional: bool) -> ErrorCode:
    """ClassicGroup.validateOffsetCommit: a transactional commit (KIP-447) is checked against
    the member and generation it names, never against the group's state."""
    if group.is_in(S.DEAD):
        return E.COORDINATOR_NOT_AVAILABLE
    if generation < 0 and group.is_in(S.EMPTY):
        return E.NONE
    if generation >= 0 or member_id != "" or instance is not None:
        error = validate_member(group, member_id, instance)
        if error != E.NONE:
            return error
        if generation != group.generation:
            return E.ILLEGAL_GENERATION
    elif not transactional and not group.is_in(S.EMPTY):
        return E.UNKNOWN_MEMBER_ID
    if not transactional and group.is_in(S.COMPLETING_REBALANCE):
        return E.REBALANCE_IN_PROGRESS
    return E.NONE


@dataclass(slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_ts: int
    expire_ts: int | None
    #: where its record stands in the log (replay order): a transaction that commits later
    #: replaces only offsets written before its own record, as Kafka compares record offsets.
    #: Only its order counts: a load that skips replaced commits numbers them differently.
    seq: int = field(default=0, compare=False)


class OffsetManager:
    """``consumer`` is the shard's ConsumerGroupManager: a group id names a classic group or a
    consumer group, never both."""

    def __init__(self, config: CoordinatorConfig, classic: ClassicGroupManager, consumer,
                 timers: Timers, share, streams):
        self.config, self.classic, self.consumer, self.timers = config, classic, consumer, timers
        #: the shard's streams groups: their members commit at their epochs (KIP-1071)
        self.streams = streams
        #: the shard's share groups: no offsets of theirs are committed, fetched or deleted here
        #: (Kafka: "Group ... is not a consumer group.", GROUP_ID_NOT_FOUND)
        self.share = share
        self.share_groups = share.groups
        self.offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        #: TxnOffsetCommit offsets awaiting their transaction's end: producer id -> group -> partition
        self.pending: dict[int, dict[str, dict[tuple[str, int], CommittedOffset]]] = {}
        self._seq = 0

    def has_group(self, group_id: str) -> bool:
        """Whether a commit of ``group_id`` finds its group (else replaying it creates one)."""
        return group_id in self.classic.groups or group_id in self.consumer.groups \
            or group_id in self.streams.groups

    def replay(self, record) -> None:
        """Apply an offset record; a commit for an unknown group creates a "simple" group."""
        if isinstance(record, OffsetCommit):
            if record.group not in self.consumer.groups and record.group not in self.streams.groups:
                self.classic.group_for_commit(record.group, record.commit_ts)
            self._seq += 1
            into = self.offsets if record.producer_id < 0 else \
                self.pending.setdefault(record.producer_id, {})
            into.setdefault(record.group, {})[(record.topic, record.partition)] = \
                CommittedOffset(record.offset, record.leader_epoch, record.metadata,
                                record.commit_ts, record.expire_ts, self._seq)
        elif isinstance(record, TransactionMarker):
            self._end_transaction(record)
        elif isinstance(record, OffsetCommitTombstone):
            group_offsets = self.offsets.get(record.group, {})
            group_offsets.pop((record.topic, record.partition), None)
            if not group_offsets:
                self.offsets.pop(record.group, None)
            for by_group in self.pending.values():     # a tombstone ends pending offsets too
                by_group.get(record.group, {}).pop((record.topic, record.partition), None)
        else:
            self.classic.replay(record)     # a group tombstone written with its offsets'

    def _end_transaction(self, marker: TransactionMarker) -> None:
        """Kafka's replayEndTransactionMarker: a commit makes the producer's pending offsets
        the committed ones, except where a later plain commit already replaced them; an abort
        drops them."""
        pending = self.pending.pop(marker.producer_id, {})
        if not marker.commit:
            return
        for group, partitions in pending.items():
            if not partitions:
                continue
            committed = self.offsets.setdefault(group, {})
            for tp, offset in partitions.items():
                current = committed.get(tp)
                if current is None or current.seq < offset.seq:
                    committed[tp] = offset

    def partitions_with_offsets(self, group_id: str) -> list[tuple[str, int]]:
        """Every partition with a committed or a pending transactional offset (what deleting
        the group writes a tombstone for, as Kafka's deleteAllOffsets)."""
        held = set(self.offsets.get(group_id, {}))
        for by_group in self.pending.values():
            held.update(by_group.get(group_id, {}))
        return sorted(held)

    def has_pending(self, group_id: str, topic: str, partition: int) -> bool:
        return any((topic, partition) in by_group.get(group_id, ()) for by_group in self.pending.values())

    def complete_transaction(self, out: CoordinatorResult, now: int, producer_id: int, producer_epoch: int,
                             commit: bool, coordinator_epoch: int) -> None:
        """The transaction coordinator's marker for this shard: written, then applied."""
        self.apply(out, [TransactionMarker(producer_id, producer_epoch, commit, coordinator_epoch)])

    def loaded(self, now: int) -> None:
        """After replay: start the expiry sweep."""
        self._schedule_sweep(now)

    def _schedule_sweep(self, now: int) -> None:
        self.timers.schedule(("sweep",), now + self.config.offsets_retention_check_interval_ms,
                             self._sweep)

    def _sweep(self, out: CoordinatorResult, now: int) -> None:
        self.expire_offsets(out, now)
        self._schedule_sweep(now)

    def apply(self, out: CoordinatorResult, records: list) -> None:
        """Persist typed records, then apply them to the shard's state exactly as a reload would."""
        out.persist([encode_record(rec) for rec in records])
        for rec in records:
            if isinstance(rec, (OffsetCommit, OffsetCommitTombstone, GroupMetadataTombstone, TransactionMarker)):
                self.replay(rec)
            elif rec.type in SHARE_GROUP_KEYS:
                self.share.replay(rec)
            elif rec.type in STREAMS_GROUP_KEYS:
                self.streams.replay(rec)
            else:
                self.consumer.replay(rec)

    # --- OffsetCommit -------------------------------------------------------------------------
    def offset_commit(self, out: CoordinatorResult, now: int, ctx: RequestContext, req) -> None:
        v = ctx.version
        error = self._commit_error(v, req)
        if error != E.NONE:
            out.reply(ctx.token, ApiKey.OFFSET_COMMIT, v, r.offset_commit_error(req, error))
            return
        expire = None if req.retention_time_ms == -1 else now + req.retention_time_ms
        errors, records = self._commit_records(req, now, expire)
        try:
            out.persist([encode_record(rec) for rec in records])     # before anything changes
        except RecordError as e:
            error = unstorable(ctx, f"group {safe(req.group_id)}: the offsets cannot be stored ({e})")
            out.reply(ctx.token, ApiKey.OFFSET_COMMIT, v, r.offset_commit_error(req, error))
            return
        group = self.consumer.groups.get(req.group_id) or self.streams.groups.get(req.group_id)
        if group is None:
            if req.group_id not in self.classic.groups:
                log.info("group %s: created as a simple group by a manual offset commit",
                         safe(req.group_id))
            group = self.classic.group_for_commit(req.group_id, now)
            member = group.members.get(req.member_id)
            if member is not None and group.is_in(S.STABLE, S.PREPARING_REBALANCE):
                self.classic.schedule_session(group, member, now)  # commits keep a classic member alive
        for rec in records:
            self.replay(rec)
        if out.journal and records:
            out.note(now, Event.OFFSETS_COMMITTED, group, req.member_id or None,
                     generation_sent=req.generation_id_or_member_epoch,
                     offsets=records)
        out.reply(ctx.token, ApiKey.OFFSET_COMMIT, v, r.offset_commit(req, errors))

    def _commit_records(self, req, now: int, expire: int | None, producer_id: int = -1,
                        producer_epoch: int = -1) -> tuple[list[ErrorCode], list[OffsetCommit]]:
        """A commit's records, one per partition whose metadata fits offset.metadata.max.bytes,
        and an error per requested partition, in request order."""
        limit = self.config.offset_metadata_max_bytes
        errors: list[ErrorCode] = []
        records = []
        group_id = req.group_id
        for topic in req.topics:
            name = topic.name
            for p in topic.partitions:
                metadata = p.committed_metadata
                if metadata and _metadata_too_large(metadata, limit):
                    errors.append(_METADATA_TOO_LARGE)
                    continue
                errors.append(_NONE)
                records.append(OffsetCommit(group_id, name, p.partition_index, p.committed_offset,
                                            p.committed_leader_epoch, metadata or "", now, expire,
                                            None, 3, producer_id, producer_epoch))
        return errors, records

    def _commit_error(self, v: int, req) -> ErrorCode:
        """OffsetMetadataManager.validateOffsetCommit, then ClassicGroup.validateOffsetCommit."""
        if req.group_id is None:
            return E.INVALID_GROUP_ID
        if not self.classic.owns(req.group_id):
            return E.NOT_COORDINATOR
        if req.group_id in self.share_groups:
            return E.GROUP_ID_NOT_FOUND
        generation = req.generation_id_or_member_epoch
        consumer_group = self.consumer.groups.get(req.group_id)
        if consumer_group is not None:
            return self.consumer.validate_commit(consumer_group, req.member_id, generation, v,
                                                 self._validated(req))
        streams_group = self.streams.groups.get(req.group_id)
        if streams_group is not None:
            return self.streams.validate_commit(streams_group, req.member_id, generation, v, self._validated(req))
        group = self.classic.groups.get(req.group_id)
        if group is None:
            if generation < 0:
                return E.NONE                       # a "simple" commit creates the group
            return E.GROUP_ID_NOT_FOUND if v >= 9 else E.ILLEGAL_GENERATION
        return _classic_commit_error(group, generation, req.member_id, req.group_instance_id, False)

    def _validated(self, req) -> list[tuple[str, int]]:
        """The partitions of a commit its member's epoch is checked against: those whose
        metadata fits (Kafka answers the others OFFSET_METADATA_TOO_LARGE, unchecked)."""
        limit = self.config.offset_metadata_max_bytes
        return [(topic.name, p.partition_index) for topic in req.topics for p in topic.partitions
                if not (p.committed_metadata and _metadata_too_large(p.committed_metadata, limit))]

    # --- TxnOffsetCommit -----------------------------------------------------------------------
    def txn_offset_commit(self, out: CoordinatorResult, now: int, ctx: RequestContext, req) -> None:
        """Kafka's commitTransactionalOffset: the offsets wait, pending, for the transaction."""
        v = ctx.version
        error = self._txn_commit_error(req)
        if error != E.NONE:
            out.reply(ctx.token, ApiKey.TXN_OFFSET_COMMIT, v, r.txn_offset_commit_error(req, error))
            return
        errors, records = self._commit_records(req, now, None, req.producer_id, req.producer_epoch)
        try:
            self.apply(out, records)
        except RecordError as e:
            error = unstorable(ctx, f"group {safe(req.group_id)}: the offsets cannot be stored ({e})")
            out.reply(ctx.token, ApiKey.TXN_OFFSET_COMMIT, v, r.txn_offset_commit_error(req, error))
            return
        out.reply(ctx.token, ApiKey.TXN_OFFSET_COMMIT, v, r.txn_offset_commit(req, errors))

    def _txn_commit_error(self, req) -> ErrorCode:
        """Kafka's validateTransactionalOffsetCommit: the KIP-447 generation, member and instance
        checks, without the group-state checks a plain commit has."""
        if not req.group_id:
            return E.INVALID_GROUP_ID
        if not self.classic.owns(req.group_id):
            return E.NOT_COORDINATOR
        if req.group_id in self.share_groups:
            return E.GROUP_ID_NOT_FOUND
        generation = req.generation_id
        consumer_group = self.consumer.groups.get(req.group_id)
        if consumer_group is not None:
            error = self.consumer.validate_commit(consumer_group, req.member_id, generation, 9,
                                                  self._validated(req), transactional=True,
                                                  instance_id=req.group_instance_id)
            return E.ILLEGAL_GENERATION if error == E.STALE_MEMBER_EPOCH else error
        streams_group = self.streams.groups.get(req.group_id)
        if streams_group is not None:
            if generation == -1 and req.member_id == "" and req.group_instance_id is None:
                return E.NONE                   # an "unknown generation" commit
            return self.streams.validate_commit(streams_group, req.member_id, generation, 9, self._validated(req),
                                                transactional=True)
        group = self.classic.groups.get(req.group_id)
        if group is None:
            return E.NONE if generation < 0 else E.ILLEGAL_GENERATION
        return _classic_commit_error(group, generation, req.member_id, req.group_instance_id, True)

    # --- OffsetFetch --------------------------------------------------------------------------
    def offset_fetch(self, out: CoordinatorResult, now: int, ctx: RequestContext, req) -> None:
        v = ctx.version
        answers = []
        members = ([(g.member_id, g.member_epoch) for g in req.groups] if v >= 9
                   else [(None, -1)] * (len(req.groups) if v >= 8 else 1))
        for (group_id, topics), (member_id, epoch) in zip(r.requested_topics(v, req), members):
            if group_id is None:
                answers.append((group_id, [], E.INVALID_GROUP_ID))
            elif not self.classic.owns(group_id):
                answers.append((group_id, [], E.NOT_COORDINATOR))
            else:
                consumer_group = self.consumer.groups.get(group_id)
                streams_group = self.streams.groups.get(group_id)
                error = self.consumer.validate_fetch(consumer_group, member_id, epoch) if consumer_group else \
                    self.streams.validate_fetch(streams_group, member_id, epoch) if streams_group else E.NONE
                stable = v >= 7 and req.require_stable
                answers.append((group_id, self.committed(group_id, topics, stable) if error == E.NONE
                                else [], error))
        if v >= 8:
            response = r.OffsetFetchResponse(groups=tuple(
                r.offset_fetch_group(v, gid, parts, error) for gid, parts, error in answers))
        else:
            _, parts, error = answers[0]
            response = r.offset_fetch_single(v, parts, error)
        out.reply(ctx.token, ApiKey.OFFSET_FETCH, v, response)

    def committed(self, group_id: str, topics, require_stable: bool = False):
        """[(topic, [(partition, offset, leader epoch, metadata)])]; -1 where nothing is committed.

        An unknown (or Dead) group is not an error for classic groups: Kafka's fetchOffsets answers
        -1 for every requested partition and fetchAllOffsets an empty list.
        """
        group = self.classic.groups.get(group_id)
        known = group_id in self.consumer.groups or group_id in self.streams.groups or \
            (group is not None and not group.is_in(S.DEAD))
        offsets = self.offsets.get(group_id, {}) if known else {}
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
                if require_stable and self.has_pending(group_id, t.name, p):
                    parts.append((p, -1, -1, "", E.UNSTABLE_OFFSET_COMMIT))
                else:
                    parts.append((p, -1, -1, "") if c is None else (p, c.offset, c.leader_epoch, c.metadata))
            out.append((t.name, parts))
        return out

    # --- OffsetDelete -------------------------------------------------------------------------
    def offset_delete(self, out: CoordinatorResult, now: int, ctx: RequestContext, req) -> None:
        def fail(error: ErrorCode) -> None:
            out.reply(ctx.token, ApiKey.OFFSET_DELETE, ctx.version, r.OffsetDeleteResponse(error_code=error))

        if not req.group_id:
            return fail(E.INVALID_GROUP_ID)
        if not self.classic.owns(req.group_id):
            return fail(E.NOT_COORDINATOR)
        group = self.consumer.groups.get(req.group_id) or self.streams.groups.get(req.group_id) \
            or self.classic.groups.get(req.group_id)
        if group is None or group.is_in(S.DEAD) or req.group_id in self.share_groups:
            return fail(E.GROUP_ID_NOT_FOUND)
        if not group.is_in(S.EMPTY) and group.protocol_type not in ("consumer", "streams"):
            return fail(E.NON_EMPTY_GROUP)      # only "consumer" groups may lose offsets while active
        offsets = self.offsets.get(req.group_id, {})
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
        self.apply(out, records)
        out.reply(ctx.token, ApiKey.OFFSET_DELETE, ctx.version,
                  r.OffsetDeleteResponse(error_code=E.NONE, topics=tuple(topics)))

    # --- expiry -------------------------------------------------------------------------------
    def expire_offsets(self, out: CoordinatorResult, now: int) -> None:
        """Kafka's cleanupGroupMetadata: tombstone expired offsets, then drop Empty groups left bare.

        A group with no offsets at all counts as "all expired", so an Empty group without offsets
        is removed too (OffsetMetadataManager.cleanupExpiredOffsets returns true for it).
        """
        retention = self.config.offsets_retention_ms
        records = []
        for group_id, group in list(self.classic.groups.items()):
            offsets = self.offsets.get(group_id, {})
            base = _retention_base(group)
            if offsets and base is None:
                continue                           # rebalancing, or members of a non-consumer group
            expired = [key for key, c in offsets.items()
                       if not is_subscribed(group, key[0]) and _expired(c, base(c), now, retention)]
            records += [OffsetCommitTombstone(group_id, topic, partition) for topic, partition in expired]
            if len(expired) == len(offsets) and group.is_in(S.EMPTY):
                records.append(GroupMetadataTombstone(group_id))
                out.note(now, Event.GROUP_DELETED, group, reason=Deletion.OFFSETS_EXPIRED)
            if expired:
                log.info("group %s: %d offsets expired", safe(group_id), len(expired))
        for manager in (self.consumer, self.streams):
            for group_id, group in list(manager.groups.items()):
                # Consumer/StreamsGroup.offsetExpirationCondition: each offset's own commit time
                offsets = self.offsets.get(group_id, {})
                expired = [key for key, c in offsets.items()
                           if not group.is_subscribed(key[0]) and _expired(c, c.commit_ts, now, retention)]
                records += [OffsetCommitTombstone(group_id, topic, partition) for topic, partition in expired]
                if len(expired) == len(offsets) and group.is_empty():
                    records += manager.delete_records(group)
                    out.note(now, Event.GROUP_DELETED, group, reason=Deletion.OFFSETS_EXPIRED)
                if expired:
                    log.info("group %s: %d offsets expired", safe(group_id), len(expired))
        self.apply(out, records)

    def forget_topics(self, out: CoordinatorResult, topics: set[str]) -> None:
        """Tombstone every committed offset of deleted topics, in every group of the shard."""
        records, gone = [], []
        for group_id, offsets in list(self.offsets.items()):
            for topic, partition in sorted(k for k in offsets if k[0] in topics):
                records.append(tombstone(offset_commit_key(group_id, topic, partition)))
                gone.append(OffsetCommitTombstone(group_id, topic, partition))
        for record in gone:
            self.replay(record)
        out.persist(records)
