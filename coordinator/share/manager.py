"""KIP-932 share groups (Kafka's GroupMetadataManager, share-protocol half).

A member heartbeats (ShareGroupHeartbeat); a changed subscription, or topics whose share state
became ready to assign, bump the group epoch; a group epoch ahead of the assignment epoch makes
the ``simple`` assignor compute a new target assignment, which each member takes at once at its
next heartbeat (share groups never revoke: a partition may be fetched by several members).

A partition is assigned only once its share state exists: the heartbeat that first subscribes
to a topic records its partitions as initializing, the share state is created, and the records
mark them initialized (Kafka's InitializeShareGroupState round trip to the share coordinator);
the member's next heartbeat then gets them. Every change is a record, replayed as recovery
replays it; a member whose session expires is fenced.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Callable, Mapping

from offsets_log.errors import RecordError
from offsets_log.records import GroupRecord, encode_record
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.logtext import safe
from protocol.error_messages import default_message
from protocol.messages import RESPONSES
from protocol.wire import ZERO_UUID

from coordinator import responses as r
from coordinator.actions import RequestContext
from coordinator.classic.membership import unstorable
from coordinator.config import CoordinatorConfig
from coordinator.consumer.assignors import MemberSpec, PartitionAssignorError, TopicSpec
from coordinator.consumer.group import TopicMetadata
from coordinator.consumer.manager import _blank
from coordinator.consumer.member import EMPTY, MemberState
from coordinator.consumer.target import target_records
from coordinator.errors import GroupError
from coordinator.events import Event, Expiry
from coordinator.group_configs import bounded_setting
from coordinator.metadata import EMPTY_IMAGE, MetadataImage
from coordinator.result import CoordinatorResult
from coordinator.routing import shard_for
from coordinator.share import assignor
from coordinator.share import records as rec
from coordinator.share.group import NO_STATE, Initialized, ShareGroup, ShareMember, StateMetadata, metadata_hash
from coordinator.timers import Timers

log = logging.getLogger("groupbroker.coordinator")

E = ErrorCode
HeartbeatResponse = RESPONSES[ApiKey.SHARE_GROUP_HEARTBEAT].cls
DescribeResponse = RESPONSES[ApiKey.SHARE_GROUP_DESCRIBE].cls
AlterOffsets = RESPONSES[ApiKey.ALTER_SHARE_GROUP_OFFSETS].cls
DeleteOffsets = RESPONSES[ApiKey.DELETE_SHARE_GROUP_OFFSETS].cls
LEAVE_GROUP_MEMBER_EPOCH = -1
NEVER = 2**63
ASSIGNOR_NAME = "simple"


def validate_heartbeat(req) -> None:
    """KafkaApis' member id check (1 to 36 characters; no message), then the coordinator's
    throwIfShareGroupHeartbeatRequestIsInvalid, in their order."""
    def invalid(message: str | None):
        raise GroupError(E.INVALID_REQUEST, message)
    if not req.member_id or len(req.member_id.encode("utf-16-le", "surrogatepass")) > 72:
        invalid(None)
    if _blank(req.member_id):
        invalid("MemberId can't be empty.")
    if _blank(req.group_id) or req.group_id == "":
        invalid("GroupId can't be empty.")
    if _blank(req.rack_id) or req.rack_id == "":
        invalid("RackId can't be empty.")
    if req.member_epoch == 0:
        if not req.subscribed_topic_names:
            invalid("SubscribedTopicNames must be set in first request.")
    elif req.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
        invalid("MemberEpoch is invalid.")


def _check_epoch(member: ShareMember, received: int) -> None:
    """Kafka's throwIfShareGroupMemberEpochIsInvalid."""
    if received == 0:
        return
    if received > member.member_epoch:
        raise GroupError(E.FENCED_MEMBER_EPOCH, f"The share group member has a greater member epoch "
                         f"({received}) than the one known by the group coordinator ({member.member_epoch}). "
                         "The member must abandon all its partitions and rejoin.")
    if received < member.member_epoch and received != member.previous_member_epoch:
        raise GroupError(E.FENCED_MEMBER_EPOCH, f"The share group member has a smaller member epoch "
                         f"({received}) than the one known by the group coordinator ({member.member_epoch}), "
                         f"and it does not match the previous member epoch ({member.previous_member_epoch}). "
                         "The member must abandon all its partitions and rejoin.")


class ShareGroupManager:
    def __init__(self, shard_id: int, config: CoordinatorConfig, timers: Timers,
                 other_type: Callable[[str], str | None]):
        self.shard_id, self.config, self.timers = shard_id, config, timers
        #: group id -> the type of the live group of another type with that id, if any
        self.other_type = other_type
        self.groups: dict[str, ShareGroup] = {}
        #: group id -> the topics with share state (kept apart from the groups, as in Kafka)
        self.state_metadata: dict[str, StateMetadata] = {}
        self.image: MetadataImage = EMPTY_IMAGE
        self.group_configs: Mapping[str, Mapping[str, str]] = {}

    def owns(self, group_id: str) -> bool:
        return shard_for(group_id, self.config.offsets_topic_num_partitions) == self.shard_id

    # --- group configs ------------------------------------------------------------------------
    def heartbeat_interval_ms(self, group_id: str) -> int:
        return bounded_setting(self.group_configs, group_id, self.config, "share.heartbeat.interval.ms")

    def session_timeout_ms(self, group_id: str) -> int:
        return bounded_setting(self.group_configs, group_id, self.config, "share.session.timeout.ms")

    def assignment_interval_ms(self, group_id: str) -> int:
        return bounded_setting(self.group_configs, group_id, self.config, "share.assignment.interval.ms")

    # --- metadata -----------------------------------------------------------------------------
    def on_metadata(self, image: MetadataImage) -> None:
        """Groups subscribed to a changed topic recompute their metadata at their next heartbeat."""
        if image is self.image:
            return
        changed = image.changed_topics(self.image)
        self.image = image
        for group in self.groups.values():
            if any(t in changed for t in group.subscribed_names):
                group.request_metadata_refresh()

    def _metadata(self, names) -> dict[str, TopicMetadata]:
        topics = self.image.topics
        return {n: TopicMetadata(topics[n].topic_id, n, topics[n].num_partitions)
                for n in sorted(names) if n in topics}

    # --- ShareGroupHeartbeat ------------------------------------------------------------------
    def heartbeat(self, out: CoordinatorResult, now: int, ctx: RequestContext, req) -> None:
        try:
            validate_heartbeat(req)
            if not self.owns(req.group_id):
                raise GroupError(E.NOT_COORDINATOR)
            if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
                response = self._leave(out, now, req)
            else:
                response = self._heartbeat(out, now, ctx, req)
        except GroupError as e:
            response = HeartbeatResponse(error_code=e.code, error_message=e.message)
        except RecordError as e:
            response = HeartbeatResponse(error_code=unstorable(
                ctx, f"group {safe(req.group_id)}: the member's records cannot be stored ({e})"))
        out.reply(ctx.token, ApiKey.SHARE_GROUP_HEARTBEAT, ctx.version, response)

    def group(self, group_id: str) -> ShareGroup:
        """Kafka's shareGroup(groupId)."""
        group = self.groups.get(group_id)
        if group is None:
            if self.other_type(group_id):
                raise GroupError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
            raise GroupError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        return group

    def _group(self, group_id: str, create: bool) -> ShareGroup:
        """Kafka's getOrMaybeCreateShareGroup (a new group is materialized by its records)."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if self.other_type(group_id):
            raise GroupError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        if not create:
            raise GroupError(E.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
        return ShareGroup(group_id)

    def _heartbeat(self, out: CoordinatorResult, now: int, ctx: RequestContext, req):
        records: list = []
        joining = req.member_epoch == 0
        group = self._group(req.group_id, joining)
        member_id = req.member_id
        limit = self.config.group_share_max_size
        if len(group.members) >= limit and member_id not in group.members:
            raise GroupError(E.GROUP_MAX_SIZE_REACHED,
                             f"The share group has reached its maximum capacity of {limit} members.")
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise GroupError(E.UNKNOWN_MEMBER_ID,
                                 f"Member {member_id} is not a member of group {req.group_id}.")
            member = ShareMember(member_id)
            log.info("group %s: member %s joins the share group", safe(group.group_id), safe(member_id))
            out.note(now, Event.MEMBER_JOINED, group, member_id, client_id=ctx.client_id,
                     client_host=ctx.client_host, protocol="share")
        _check_epoch(member, req.member_epoch)
        updated = member.replace(
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            subscribed_topic_names=frozenset(req.subscribed_topic_names)
            if req.subscribed_topic_names is not None else member.subscribed_topic_names,
            client_id=ctx.client_id, client_host=ctx.client_host)
        bump = False
        if updated != member:
            records.append(rec.member_subscription(group.group_id, updated))
            bump = updated.subscribed_topic_names != member.subscribed_topic_names
        subscription_changed = bump
        group_epoch = group.group_epoch
        if group.assignment_epoch >= group_epoch:
            bump = bump or self._initialized_unassigned(group)
        names = set(group.subscribed_names)
        if bump or group.metadata_expired(now):
            names = set(group.subscribed_topic_names(member, updated))
            digest = metadata_hash(self._metadata(names))
            bump = bump or digest != group.metadata_hash
            if bump:
                group_epoch += 1
                records.append(rec.group_epoch(group.group_id, group_epoch, digest))
                log.info("group %s: group epoch bumped to %d", safe(group.group_id), group_epoch)
                out.note(now, Event.GROUP_EPOCH_BUMPED, group, member_id, epoch=group_epoch)
            group.metadata_refresh_deadline = NEVER
            group.metadata_refresh_epoch = group_epoch
        if group_epoch > group.assignment_epoch and self._may_assign(group, now):
            target = self._new_target(out, now, group, group_epoch, updated, records)
            target_epoch = group_epoch
        else:
            target_epoch, target = group.assignment_epoch, group.target_of(member_id)
        reconciled = updated
        if subscription_changed or not updated.is_reconciled_to(target_epoch):
            assigned = self._subscribed_only(target, updated)
            if target_epoch != updated.member_epoch:
                reconciled = updated.replace(state=MemberState.STABLE, assigned=assigned,
                                             previous_member_epoch=updated.member_epoch,
                                             member_epoch=target_epoch)
            elif subscription_changed:
                reconciled = updated.replace(assigned=assigned)
            if reconciled != updated:
                records.append(rec.current_assignment(group.group_id, reconciled))
        records += self._initializing(group, names, now)
        self.apply(out, records)
        self.initialize(out, group.group_id)
        self.schedule_session(group.group_id, member_id, now)
        response = HeartbeatResponse(error_code=E.NONE, member_id=member_id,
                                     member_epoch=reconciled.member_epoch,
                                     heartbeat_interval_ms=self.heartbeat_interval_ms(group.group_id))
        if joining or req.subscribed_topic_names is not None or reconciled.assigned != member.assigned:
            tp = HeartbeatResponse.Assignment.TopicPartitions
            response = dataclasses.replace(response, assignment=HeartbeatResponse.Assignment(topic_partitions=tuple(
                tp(topic_id=t, partitions=tuple(sorted(ps))) for t, ps in reconciled.assigned.items())))
        return response

    def _subscribed_only(self, target, member: ShareMember) -> dict:
        topics = self.image.topics
        ids = {topics[n].topic_id for n in member.subscribed_topic_names if n in topics}
        return {t: ps for t, ps in target.items() if t in ids}

    def _may_assign(self, group: ShareGroup, now: int) -> bool:
        interval = self.assignment_interval_ms(group.group_id)
        return group.assignment_timestamp == 0 or interval == 0 or \
            now >= group.assignment_timestamp + interval

    def _initialized_unassigned(self, group: ShareGroup) -> bool:
        """Kafka's initializedAssignmentPending: a subscribed topic's initialized partitions are
        not exactly those of the target assignment."""
        initialized = self.state_metadata.get(group.group_id, NO_STATE).initialized
        if group.is_empty() or not initialized or not group.subscribed_names:
            return False
        assigned: dict = {}
        for parts in group.target.values():
            for topic_id, partitions in parts.items():
                assigned.setdefault(topic_id, set()).update(partitions)
        return any(entry.name in group.subscribed_names and assigned.get(topic_id) != set(entry.partitions)
                   for topic_id, entry in initialized.items())

    def _new_target(self, out: CoordinatorResult, now: int, group: ShareGroup, epoch: int,
                    updated: ShareMember, records: list):
        members = dict(group.members)
        members[updated.member_id] = updated
        topics = self.image.topics
        specs = {m.member_id: MemberSpec(rack_id=m.rack_id, instance_id=None, subscribed_topic_ids=frozenset(
                     topics[n].topic_id for n in m.subscribed_topic_names if n in topics),
                     assigned=group.target.get(m.member_id, EMPTY))
                 for m in members.values()}
        described = {t.topic_id: TopicSpec(name=t.name, num_partitions=t.num_partitions)
                     for t in self._metadata(group.subscribed_topic_names(group.members.get(updated.member_id),
                                                                          updated)).values()}
        try:
            assignment = assignor.assign(specs, described,
                                         self.state_metadata.get(group.group_id, NO_STATE).assignable)
        except PartitionAssignorError as e:
            log.error("group %s: failed to compute a new target assignment for epoch %d: %s",
                      safe(group.group_id), epoch, e)
            raise GroupError(E.UNKNOWN_SERVER_ERROR) from None     # Kafka's answer has no message
        records += target_records(rec, group, specs, assignment, epoch, now)
        log.info("group %s: new target assignment for epoch %d with the simple assignor",
                 safe(group.group_id), epoch)
        out.note(now, Event.TARGET_ASSIGNMENT, group, updated.member_id, epoch=epoch, assignor=ASSIGNOR_NAME,
                 members=sorted(assignment))
        return assignment.get(updated.member_id, EMPTY)

    # --- share state: which partitions may be assigned ----------------------------------------
    def _initializing(self, group: ShareGroup, names: set[str], now: int) -> list:
        """Kafka's maybeCreateInitializeShareGroupStateRequest: the subscribed partitions without
        share state are recorded as initializing."""
        meta = self.state_metadata.get(group.group_id, NO_STATE)
        wanted: dict = {}
        for name in sorted(names):
            topic = self.image.topics.get(name)
            if topic is None:
                continue
            have = set()
            for known in (meta.initialized, meta.initializing):
                if topic.topic_id in known:
                    have |= known[topic.topic_id].partitions
            if len(have) < topic.num_partitions:
                wanted[topic.topic_id] = Initialized(
                    name, frozenset(p for p in range(topic.num_partitions) if p not in have), now)
        return self._initializing_records(group.group_id, wanted)

    def _initializing_records(self, group_id: str, wanted: dict) -> list:
        """Kafka's addInitializingTopicsRecords."""
        if not wanted:
            return []
        meta = self.state_metadata.get(group_id, NO_STATE)
        initializing = _combined(meta.initializing, wanted)
        deleting = {t: n for t, n in meta.deleting.items() if t not in initializing}
        return [rec.state_partitions(group_id, initializing, meta.initialized, deleting)]

    def initialize(self, out: CoordinatorResult, group_id: str, fresh: bool = True) -> None:
        """The initializing partitions get share state (``fresh``: new state, from the group's
        share.auto.offset.reset; else the caller writes it) and become initialized (Kafka's
        initializeShareGroupState once the share coordinator answered), assignable at the
        members' next heartbeats."""
        meta = self.state_metadata.get(group_id, NO_STATE)
        if not meta.initializing:
            return
        if fresh:
            out.init_share_state(group_id, {t: e.partitions for t, e in meta.initializing.items()})
        self.apply(out, [rec.state_partitions(group_id, {}, _combined(meta.initialized, meta.initializing),
                                              meta.deleting)])

    def initialized_partitions(self, group_id: str) -> dict:
        """A share group id's partitions with share state: topic id -> Initialized."""
        return dict(self.state_metadata.get(group_id, NO_STATE).initialized)

    # --- Alter/DeleteShareGroupOffsets ----------------------------------------------------------
    def _empty_group(self, group_id: str, create: bool) -> ShareGroup:
        if not group_id:
            raise GroupError(E.INVALID_GROUP_ID)
        if not self.owns(group_id):
            raise GroupError(E.NOT_COORDINATOR)
        group = self._group(group_id, create) if create else self.group(group_id)
        if group.members:
            raise GroupError(E.NON_EMPTY_GROUP, "The group is not empty.")
        return group

    def alter_offsets(self, out: CoordinatorResult, now: int, ctx: RequestContext, req) -> None:
        """Kafka's alterShareGroupOffsets: an empty share group (none yet is fine) gets new
        share state at these start offsets; the data plane writes it once this is answered."""
        topic_cls = AlterOffsets.AlterShareGroupOffsetsResponseTopic
        part_cls = topic_cls.AlterShareGroupOffsetsResponsePartition
        unknown = dict(error_code=E.UNKNOWN_TOPIC_OR_PARTITION, error_message=default_message(E.UNKNOWN_TOPIC_OR_PARTITION))
        try:
            self._empty_group(req.group_id, create=True)
            topics, wanted = [], {}
            for t in req.topics:
                topic = self.image.topics.get(t.topic_name)
                if topic is None:
                    topics.append(topic_cls(topic_name=t.topic_name, topic_id=ZERO_UUID, partitions=tuple(
                        part_cls(partition_index=p.partition_index, **unknown) for p in t.partitions)))
                    continue
                valid = frozenset(p.partition_index for p in t.partitions if p.partition_index < topic.num_partitions)
                wanted[topic.topic_id] = Initialized(t.topic_name, valid, now)
                topics.append(topic_cls(topic_name=t.topic_name, topic_id=topic.topic_id, partitions=tuple(
                    part_cls(partition_index=p.partition_index, error_code=E.NONE) if p.partition_index in valid
                    else part_cls(partition_index=p.partition_index, **unknown) for p in t.partitions)))
            self.apply(out, self._initializing_records(req.group_id, wanted))
            self.initialize(out, req.group_id, fresh=False)
            response = AlterOffsets(error_code=E.NONE, responses=tuple(topics))
        except GroupError as e:
            response = AlterOffsets(error_code=e.code, error_message=e.message)
        out.reply(ctx.token, ApiKey.ALTER_SHARE_GROUP_OFFSETS, ctx.version, response)

    def delete_offsets(self, out: CoordinatorResult, now: int, ctx: RequestContext, req) -> None:
        """Kafka's DeleteShareGroupOffsets: an empty share group forgets the share state of
        whole topics; the data plane deletes it once this is answered."""
        topic_cls = DeleteOffsets.DeleteShareGroupOffsetsResponseTopic
        try:
            self._empty_group(req.group_id, create=False)
            meta = self.state_metadata.get(req.group_id)
            errors, done = [], []
            if meta is not None:
                initialized, deleting = dict(meta.initialized), dict(meta.deleting)
                for t in req.topics:
                    topic = self.image.topics.get(t.topic_name)
                    if topic is None:
                        errors.append(topic_cls(topic_name=t.topic_name, topic_id=ZERO_UUID,
                                                error_code=E.UNKNOWN_TOPIC_OR_PARTITION,
                                                error_message=default_message(E.UNKNOWN_TOPIC_OR_PARTITION)))
                    elif topic.topic_id in initialized or topic.topic_id in deleting:
                        initialized.pop(topic.topic_id, None)
                        deleting[topic.topic_id] = t.topic_name
                        done.append(topic_cls(topic_name=t.topic_name, topic_id=topic.topic_id, error_code=E.NONE))
                    else:
                        errors.append(topic_cls(topic_name=t.topic_name, topic_id=ZERO_UUID,
                                                error_code=E.UNKNOWN_TOPIC_OR_PARTITION,
                                                error_message="There is no offset information to delete."))
                self.apply(out, [rec.state_partitions(req.group_id, meta.initializing, initialized, deleting)])
                if done:         # the share state is gone: no longer being deleted
                    gone = {t.topic_id for t in done}
                    self.apply(out, [rec.state_partitions(req.group_id, meta.initializing, initialized,
                                                          {t: n for t, n in deleting.items() if t not in gone})])
            response = DeleteOffsets(error_code=E.NONE, responses=tuple(done + errors))
        except GroupError as e:
            response = DeleteOffsets(error_code=e.code, error_message=e.message)
        out.reply(ctx.token, ApiKey.DELETE_SHARE_GROUP_OFFSETS, ctx.version, response)

    # --- leaving and fencing ------------------------------------------------------------------
    def _leave(self, out: CoordinatorResult, now: int, req):
        group = self.group(req.group_id)
        member = group.members.get(req.member_id)
        if member is None:
            raise GroupError(E.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member of group {req.group_id}.")
        log.info("group %s: member %s left the share group", safe(group.group_id), safe(req.member_id))
        self.fence(out, now, group, member)
        return HeartbeatResponse(error_code=E.NONE, member_id=req.member_id, member_epoch=req.member_epoch)

    def fence(self, out: CoordinatorResult, now: int, group: ShareGroup, member: ShareMember,
              why: Expiry | None = None) -> None:
        """Kafka's shareGroupFenceMember: the member's records go and the group epoch grows."""
        if why:
            out.note(now, Event.MEMBER_EXPIRED, group, member.member_id, reason=why)
        else:
            out.note(now, Event.MEMBER_LEFT, group, member.member_id)
        records = rec.member_tombstones(group.group_id, member.member_id)
        digest = metadata_hash(self._metadata(group.subscribed_topic_names(member)))
        records.append(rec.group_epoch(group.group_id, group.group_epoch + 1, digest))
        self.timers.cancel(("share-session", group.group_id, member.member_id))
        self.apply(out, records)

    def schedule_session(self, group_id: str, member_id: str, now: int) -> None:
        def expire(out: CoordinatorResult, at: int) -> None:
            group = self.groups.get(group_id)
            member = group.members.get(member_id) if group is not None else None
            if member is not None:
                log.info("group %s: member %s fenced from the share group (its session expired)",
                         safe(group_id), safe(member_id))
                self.fence(out, at, group, member, Expiry.SESSION)
        self.timers.schedule(("share-session", group_id, member_id),
                             now + self.session_timeout_ms(group_id), expire)

    # --- records ------------------------------------------------------------------------------
    def apply(self, out: CoordinatorResult, records: list) -> None:
        out.persist([encode_record(record) for record in records])
        for record in records:
            self.replay(record)

    def replay(self, record: GroupRecord) -> None:
        if record.type == rec.STATE_PARTITIONS:
            if record.value is None:
                self.state_metadata.pop(record.group, None)
            else:
                self.state_metadata[record.group] = rec.state_metadata(record.value)
            return
        group = self.groups.get(record.group)
        if group is None:
            if record.value is None:
                return
            group = self.groups[record.group] = ShareGroup(record.group)
        if record.type == rec.GROUP_EPOCH and record.value is None:
            del self.groups[record.group]
            return
        rec.replay_into(group, record)

    def loaded(self, now: int) -> None:
        for group in self.groups.values():
            for member_id in group.members:
                self.schedule_session(group.group_id, member_id, now)

    def unload(self) -> None:
        self.groups.clear()
        self.state_metadata.clear()

    # --- ShareGroupDescribe ---------------------------------------------------------------------
    def describe(self, out: CoordinatorResult, now: int, ctx: RequestContext, req) -> None:
        groups = r.described_groups(req.group_ids, self.owns, lambda g: self._described(
            self.group(g), req.include_authorized_operations), DescribeResponse.DescribedGroup)
        out.reply(ctx.token, ApiKey.SHARE_GROUP_DESCRIBE, ctx.version, DescribeResponse(groups=groups))

    def _described(self, group: ShareGroup, operations: bool):
        cls = DescribeResponse.DescribedGroup
        topics = self.image.by_id
        tp = cls.Member.Assignment.TopicPartitions
        members = tuple(cls.Member(
            member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch, client_id=m.client_id,
            client_host=m.client_host, subscribed_topic_names=tuple(sorted(m.subscribed_topic_names)),
            assignment=cls.Member.Assignment(topic_partitions=tuple(
                tp(topic_id=t, topic_name=topics[t].name, partitions=tuple(sorted(ps)))
                for t, ps in m.assigned.items() if t in topics)))
            for m in group.members_in_kafka_order())
        return cls(error_code=E.NONE, group_id=group.group_id, group_state=group.state.value,
                   group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
                   assignor_name=ASSIGNOR_NAME, members=members,
                   authorized_operations=r.GROUP_OPERATIONS if operations else -2147483648)


def _combined(first: dict, second: dict) -> dict:
    """Kafka's combineInitMaps: the union of two topic -> partitions maps."""
    out = dict(first)
    for topic_id, entry in second.items():
        old = out.get(topic_id)
        out[topic_id] = entry if old is None else Initialized(old.name, old.partitions | entry.partitions)
    return out
