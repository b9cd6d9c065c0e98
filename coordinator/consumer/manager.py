"""KIP-848 consumer groups (Kafka's GroupMetadataManager, consumer-protocol half).

A member heartbeats (ConsumerGroupHeartbeat); the heartbeat may change its subscription,
which bumps the group epoch; a group epoch above the assignment epoch makes the server-side
assignor compute a new target assignment; then the member takes one step towards its target
(:mod:`coordinator.consumer.reconciliation`). Every change is a record: a heartbeat builds its
records from the state as it was, then persists and replays them, the same path recovery
takes. Timers fence members whose session expires or who do not revoke in time.
"""

from __future__ import annotations

import logging
from typing import Mapping

from offsets_log.errors import RecordError
from offsets_log.records import GroupRecord, GroupMetadataTombstone, Record, encode_record
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.logtext import safe
from protocol.uuids import kafka_uuid

from coordinator import responses as r
from coordinator.actions import RequestContext
from coordinator.classic.membership import unstorable
from coordinator.classic.state import GroupState as ClassicState
from coordinator.config import CoordinatorConfig
from coordinator.consumer import classic_members
from coordinator.consumer import records as rec
from coordinator.consumer.assignors import ASSIGNORS, PartitionAssignorError
from coordinator.consumer.group import ConsumerGroup, ResolvedRegex, TopicMetadata
from coordinator.consumer.member import (EMPTY, LEAVE_GROUP_MEMBER_EPOCH,
                                         LEAVE_GROUP_STATIC_MEMBER_EPOCH, ConsumerGroupMember,
                                         MemberState, epochs_at, new_member_id)
from coordinator.consumer.reconciliation import reconcile
from coordinator.consumer.regex import compile_subscription, matching
from coordinator.consumer.replay import replay_into
from coordinator.consumer.target import build_target, subscribed_topics
from coordinator.errors import GroupError
from coordinator.group_configs import bounded_setting
from coordinator.events import Cause, Event, Expiry
from coordinator.metadata import EMPTY_IMAGE, MetadataImage
from coordinator.result import CoordinatorResult
from coordinator.routing import shard_for
from coordinator.timers import Timers

log = logging.getLogger("groupbroker.coordinator")

E = ErrorCode
HeartbeatResponse = r.ConsumerGroupHeartbeatResponse
DescribeResponse = r.ConsumerGroupDescribeResponse
#: ConsumerGroupHeartbeat v1 and later: the client generates its member id (KIP-1082)
CLIENT_MEMBER_ID_VERSION = 1
#: a metadata refresh deadline that never comes (topic changes request refreshes instead)
NEVER = 2**63


#: what Java's String.trim() removes: every character up to the space
_JAVA_WHITESPACE = "".join(map(chr, range(0x21)))


def _blank(value: str | None) -> bool:
    """Kafka's throwIfEmptyString test: set and empty once trimmed as Java trims."""
    return value is not None and not value.strip(_JAVA_WHITESPACE)


def validate_heartbeat(req, version: int, assignors: tuple[str, ...]) -> None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid, in its order."""
    def invalid(message: str):
        return GroupError(E.INVALID_REQUEST, message)

    epoch = req.member_epoch
    if (version >= CLIENT_MEMBER_ID_VERSION or epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH) \
            and _blank(req.member_id):
        raise invalid("MemberId can't be empty.")
    if _blank(req.group_id):
        raise invalid("GroupId can't be empty.")
    if _blank(req.instance_id):
        raise invalid("InstanceId can't be empty.")
    if _blank(req.rack_id):
        raise invalid("RackId can't be empty.")
    if epoch == 0:
        if req.rebalance_timeout_ms == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        if req.topic_partitions is None or req.topic_partitions:
            raise invalid("TopicPartitions must be empty when (re-)joining.")
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            raise invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null "
                          "when (re-)joining.")
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if req.instance_id is None:
            raise invalid("InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise invalid("MemberEpoch is invalid.")
    if req.server_assignor is not None and req.server_assignor not in assignors:
        raise GroupError(E.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {req.server_assignor} is not "
                         f"supported. Supported assignors: {', '.join(assignors)}.")


def _is_subset(owned, assigned) -> bool:
    """Kafka's isSubset: every reported partition is in ``assigned`` (unknown: no)."""
    if owned is None:
        return False
    return all(tp.topic_id in assigned and all(p in assigned[tp.topic_id] for p in tp.partitions)
               for tp in owned)


def _check_epoch(member: ConsumerGroupMember, received: int, owned) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid. Epoch 0 is always valid: a member
    that was fenced rejoins with it (Kafka 4.3, KAFKA-19233)."""
    if received == 0:
        return
    if received > member.member_epoch:
        raise GroupError(E.FENCED_MEMBER_EPOCH, "The consumer group member has a greater member "
                         f"epoch ({received}) than the one known by the group coordinator "
                         f"({member.member_epoch}). The member must abandon all its partitions and rejoin.")
    if received < member.member_epoch and (received != member.previous_member_epoch
                                           or not _is_subset(owned, member.assigned)):
        raise GroupError(E.FENCED_MEMBER_EPOCH, "The consumer group member has a smaller member "
                         f"epoch ({received}) than the one known by the group coordinator "
                         f"({member.member_epoch}). The member must abandon all its partitions and rejoin.")


def _epoch_error(member: ConsumerGroupMember, epoch: int) -> ErrorCode:
    """Kafka's validateMemberEpoch: a classic member's generation is its member epoch."""
    if epoch == member.member_epoch:
        return E.NONE
    return E.ILLEGAL_GENERATION if member.uses_classic else E.STALE_MEMBER_EPOCH


def _unused_regexes(group: ConsumerGroup, members, still_used: set) -> list:
    """The tombstones of the resolved regexes ``members`` leave behind if no one else uses them
    (Kafka removes a regex's record with its last subscriber)."""
    regexes = dict.fromkeys(m.subscribed_topic_regex for m in members if m.subscribed_topic_regex)
    return [rec.tombstone(rec.REGEX, group.group_id, regex) for regex in regexes
            if regex in group.resolved and regex not in still_used]


#: why a member's removal bumped the group epoch, by the timer that removed it
EXPIRY_CAUSES = {Expiry.SESSION: Cause.SESSION_EXPIRY, Expiry.REVOCATION: Cause.REVOCATION_TIMEOUT,
                 Expiry.REJOIN: Cause.REJOIN_TIMEOUT, Expiry.SYNC: Cause.SYNC_TIMEOUT}


class ConsumerGroupManager:
    def __init__(self, shard_id: int, config: CoordinatorConfig, timers: Timers, classic,
                 share_groups: Mapping | None = None):
        self.shard_id, self.config, self.timers = shard_id, config, timers
        self.classic = classic                    # a group id names one group of any type
        self.share_groups = {} if share_groups is None else share_groups
        self.groups: dict[str, ConsumerGroup] = {}
        self.image: MetadataImage = EMPTY_IMAGE
        #: group id -> its dynamic group configs (IncrementalAlterConfigs on GROUP resources)
        self.group_configs: Mapping[str, Mapping[str, str]] = {}

    def owns(self, group_id: str) -> bool:
        return shard_for(group_id, self.config.offsets_topic_num_partitions) == self.shard_id

    # --- group configs ------------------------------------------------------------------------
    def heartbeat_interval_ms(self, group_id: str) -> int:
        return bounded_setting(self.group_configs, group_id, self.config, "consumer.heartbeat.interval.ms")

    def session_timeout_ms(self, group_id: str) -> int:
        return bounded_setting(self.group_configs, group_id, self.config, "consumer.session.timeout.ms")

    def assignment_interval_ms(self, group_id: str) -> int:
        return bounded_setting(self.group_configs, group_id, self.config, "consumer.assignment.interval.ms")

    # --- metadata -----------------------------------------------------------------------------
    def on_metadata(self, image: MetadataImage) -> None:
        """Kafka's onNewMetadataImage: groups subscribed to a changed topic (or with regexes,
        which may match a new topic) recompute their metadata at their next heartbeat."""
        if image is self.image:
            return
        changed = image.changed_topics(self.image)
        self.image = image
        if not changed:
            return
        for group in self.groups.values():
            if group.regex_members or any(t in changed for t in group.subscribed_topic_names()):
                group.request_metadata_refresh()

    def subscribed_ids(self, member: ConsumerGroupMember, resolved: dict[str, ResolvedRegex]) -> frozenset:
        """The ids of the topics a member subscribes to that exist (by name, and by its regex
        once resolved: an unresolved one matches nothing)."""
        topics = self.image.topics
        return frozenset(topics[n].topic_id for n in subscribed_topics(member, resolved) if n in topics)

    def subscription_metadata(self, names) -> dict[str, TopicMetadata]:
        topics = self.image.topics
        return {n: TopicMetadata(topics[n].topic_id, n, topics[n].num_partitions)
                for n in sorted(names) if n in topics}

    def _resolve(self, group: ConsumerGroup, regexes, now: int,
                 records: list) -> tuple[bool, dict[str, ResolvedRegex]]:
        """Match each regex not yet matched on today's topics (a full match, as Kafka's);
        whether any matched set changed, and every regex's resolution after this."""
        changed, resolved = False, dict(group.resolved)
        for regex in sorted(regexes):
            old = group.resolved.get(regex)
            if old is not None and old.version == self.image.version:
                continue
            pattern = compile_subscription(regex)
            topics = matching(pattern, self.image.topics)
            resolved[regex] = ResolvedRegex(topics, self.image.version, now)
            records.append(rec.regex(group.group_id, regex, resolved[regex]))
            changed = changed or old is None or old.topics != topics
        return changed, resolved

    # --- ConsumerGroupHeartbeat ---------------------------------------------------------------
    def heartbeat(self, out: CoordinatorResult, now: int, ctx: RequestContext, req) -> None:
        try:
            validate_heartbeat(req, ctx.version, self.config.consumer_assignors)
            if not self.owns(req.group_id):
                raise GroupError(E.NOT_COORDINATOR)
            if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                response = self._leave(out, now, req)
            else:
                response = self._heartbeat(out, now, ctx, req)
        except GroupError as e:
            response = HeartbeatResponse(error_code=e.code, error_message=e.message)
        except RecordError as e:    # its records cannot be written: nothing was applied
            response = HeartbeatResponse(error_code=unstorable(
                ctx, f"group {safe(req.group_id)}: the member's records cannot be stored ({e})"))
        out.reply(ctx.token, ApiKey.CONSUMER_GROUP_HEARTBEAT, ctx.version, response)

    def _classic_group(self, group_id: str):
        """The live group of another type named ``group_id`` (a classic one, or a share group)."""
        if group_id in self.share_groups:
            return self.share_groups[group_id]
        group = self.classic.groups.get(group_id)
        return None if group is None or group.is_in(ClassicState.DEAD) else group

    def _group(self, out: CoordinatorResult, now: int, group_id: str, create: bool,
               records: list) -> ConsumerGroup:
        """Kafka's getOrMaybeCreateConsumerGroup: a new group, or an empty classic group
        replaced, or a live classic group converted (records added, nothing applied yet)."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        classic = self._classic_group(group_id)
        if group_id in self.share_groups:
            raise GroupError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        if classic is None:
            if not create:
                raise GroupError(E.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            return ConsumerGroup(group_id)
        if create and classic.is_in(ClassicState.EMPTY):
            # An empty classic group gives way to the consumer group (its tombstone first).
            records.append(GroupMetadataTombstone(group_id))
            log.info("group %s: the empty classic group is replaced by a consumer group", safe(group_id))
            return ConsumerGroup(group_id)
        if create and classic_members.upgrade_allowed(self, classic):
            return classic_members.to_consumer(self, out, now, classic, records)
        raise GroupError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group")

    def _heartbeat(self, out: CoordinatorResult, now: int, ctx: RequestContext, req):
        records: list = []
        joining = req.member_epoch == 0
        group = self._group(out, now, req.group_id, joining, records)
        self.check_group_size(group, req.member_id)
        member_id = req.member_id or new_member_id()
        owned = req.topic_partitions
        if req.instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if not joining:
                    raise GroupError(E.UNKNOWN_MEMBER_ID,
                                     f"Member {member_id} is not a member of group {req.group_id}.")
                member = ConsumerGroupMember(member_id)
                log.info("group %s: member %s joins the consumer group", safe(group.group_id),
                         safe(member_id))
            _check_epoch(member, req.member_epoch, owned)
        else:
            member = self.static_member(group, member_id, req.instance_id, joining,
                                        req.member_epoch, owned, records)

        if req.subscribed_topic_regex:
            compile_subscription(req.subscribed_topic_regex)           # INVALID_REGULAR_EXPRESSION early
        updated = member.replace(
            instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1
            else member.rebalance_timeout_ms,
            server_assignor=req.server_assignor if req.server_assignor is not None
            else member.server_assignor,
            subscribed_topic_names=frozenset(req.subscribed_topic_names)
            if req.subscribed_topic_names is not None else member.subscribed_topic_names,
            subscribed_topic_regex=(req.subscribed_topic_regex or None)
            if req.subscribed_topic_regex is not None else member.subscribed_topic_regex,
            client_id=ctx.client_id, client_host=ctx.client_host, classic=None)
        reconciled = self.step(out, now, group, member, updated, owned, records)
        converted = req.group_id not in self.groups
        self.apply(out, records)
        if converted:                 # members of a converted classic group keep their sessions
            for other in self.groups[req.group_id].members.values():
                if other.uses_classic:
                    self.schedule_session(req.group_id, other.member_id, now,
                                          other.classic.session_timeout_ms)
        self.schedule_session(group.group_id, reconciled.member_id, now)
        full = joining or (req.rebalance_timeout_ms != -1 and owned is not None and (
            req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None))
        assignment = None
        if full or reconciled.assigned != member.assigned:
            tp = HeartbeatResponse.Assignment.TopicPartitions
            assignment = HeartbeatResponse.Assignment(topic_partitions=tuple(
                tp(topic_id=t, partitions=tuple(sorted(ps))) for t, ps in reconciled.assigned.items()))
        return HeartbeatResponse(error_code=E.NONE, member_id=reconciled.member_id,
                                 member_epoch=reconciled.member_epoch,
                                 heartbeat_interval_ms=self.heartbeat_interval_ms(group.group_id),
                                 assignment=assignment)

    def step(self, out: CoordinatorResult, now: int, group: ConsumerGroup,
             member: ConsumerGroupMember, updated: ConsumerGroupMember, owned,
             records: list, *, downgrading: bool = False) -> ConsumerGroupMember:
        """Kafka's three steps of a heartbeat (or of a classic member's JoinGroup): record the
        member's change, bumping the group epoch if its subscription (or the subscribed topics)
        changed; compute a new target assignment if the group epoch is ahead of it and the
        group's assignment interval has passed since the last one; move the member one step
        towards its target (the last one computed). Adds the records; returns the reconciled
        member. A group ``downgrading`` to a classic group computes no new target: its member
        reconciles only if the target is current (else the classic group rebalances)."""
        member_id = updated.member_id
        if out.journal and member_id not in group.members:
            replaced = group.static_members.get(updated.instance_id) \
                if updated.instance_id is not None else None
            if replaced is not None and replaced != member_id:
                out.note(now, Event.MEMBER_FENCED, group, replaced, instance_id=updated.instance_id,
                         replaced_by=member_id)
            out.note(now, Event.MEMBER_JOINED, group, member_id, instance_id=updated.instance_id,
                     client_id=updated.client_id, client_host=updated.client_host,
                     protocol="classic" if updated.uses_classic else "consumer", replaces=replaced)
        cause = Cause.NEW_MEMBER if member_id not in group.members else Cause.METADATA_CHANGE
        bump = False
        if updated != member:
            records.append(rec.member_subscription(group.group_id, updated))
            bump = (updated.subscribed_topic_names != member.subscribed_topic_names
                    or updated.subscribed_topic_regex != member.subscribed_topic_regex)
        subscription_changed = bump
        regexes = {m.subscribed_topic_regex for m in group.members.values()
                   if m.subscribed_topic_regex and m.member_id != member.member_id}
        if updated.subscribed_topic_regex:
            regexes.add(updated.subscribed_topic_regex)
        records += _unused_regexes(group, [member], regexes)
        resolved = group.resolved
        if regexes and (bump or group.metadata_expired(now)):
            changed, resolved = self._resolve(group, regexes, now, records)
            bump = bump or changed

        group_epoch = group.group_epoch
        metadata = group.subscription_metadata
        if bump or group.metadata_expired(now):
            metadata = self.subscription_metadata(
                group.subscribed_topic_names(member, new=updated, resolved=resolved))
            if metadata != group.subscription_metadata:
                records.append(rec.partition_metadata(group.group_id, metadata))
                cause = cause if bump else Cause.TOPICS_CHANGED
                bump = True
            if bump:
                group_epoch += 1
                records.append(rec.group_epoch(group.group_id, group_epoch))
                log.info("group %s: group epoch bumped to %d", safe(group.group_id), group_epoch)
                out.note(now, Event.GROUP_EPOCH_BUMPED, group, member_id, epoch=group_epoch,
                         cause=cause)
            group.metadata_refresh_deadline = NEVER
            group.metadata_refresh_epoch = group_epoch

        if downgrading and group_epoch > group.assignment_epoch:
            return updated
        if group_epoch > group.assignment_epoch and self._may_assign(group, now):
            target = self._new_target(out, now, group, group_epoch, member, updated, metadata,
                                      resolved, records)
            target_epoch = group_epoch
        else:           # up to date, or the next assignment waits for the assignment interval
            target_epoch = group.assignment_epoch
            target = group.target_of(member_id, updated.instance_id)
        return self._reconcile(out, now, group, updated, target_epoch, target, resolved, owned,
                               subscription_changed, records)

    def _may_assign(self, group: ConsumerGroup, now: int) -> bool:
        """Kafka's canComputeNextTargetAssignment: at once for a group whose last assignment
        time is unknown, or with an interval of 0 (an escape hatch if the clock goes back);
        otherwise once the group's assignment interval has passed since its last one."""
        interval = self.assignment_interval_ms(group.group_id)
        return group.assignment_timestamp == 0 or interval == 0 or \
            now >= group.assignment_timestamp + interval

    def _reconcile(self, out: CoordinatorResult, now: int, group: ConsumerGroup,
                   updated: ConsumerGroupMember, target_epoch: int, target, resolved, owned,
                   subscription_changed: bool, records: list) -> ConsumerGroupMember:
        """Kafka's maybeReconcile: the member's next step, its record and its revocation timer."""
        member_id = updated.member_id
        if not subscription_changed and updated.is_reconciled_to(target_epoch):
            return updated
        reconciled = reconcile(updated, target_epoch, target, group.current_partition_epoch, owned,
                               subscribed=self.subscribed_ids(updated, resolved),
                               subscription_changed=subscription_changed)
        if reconciled != updated:
            records.append(rec.current_assignment(group.group_id, reconciled))
            if not reconciled.uses_classic:     # classic members have join and sync timers instead
                if reconciled.state == MemberState.UNREVOKED_PARTITIONS:
                    self._schedule_rebalance_timeout(group.group_id, reconciled, now)
                else:
                    self.timers.cancel(("consumer-rebalance", group.group_id, member_id))
            if reconciled.member_epoch != updated.member_epoch or reconciled.state != updated.state:
                out.note(now, Event.MEMBER_RECONCILED, group, member_id,
                         epoch=reconciled.member_epoch, previous_epoch=updated.member_epoch,
                         target_epoch=target_epoch, state=reconciled.state.name)
        return reconciled

    def check_group_size(self, group: ConsumerGroup, member_id: str) -> None:
        """Kafka's throwIfConsumerGroupIsFull: only a member already in the group may come in
        once it holds group.consumer.max.size members; a static member coming back under a new
        member id too (that it may is KAFKA-20601, which came after Kafka 4.3.1)."""
        limit = self.config.group_consumer_max_size
        if len(group.members) >= limit and (not member_id or member_id not in group.members):
            raise GroupError(E.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum "
                             f"capacity of {limit} members.")

    def static_member(self, group: ConsumerGroup, member_id: str, instance_id: str, joining: bool,
                      epoch: int, owned, records: list, *, classic: bool = False) -> ConsumerGroupMember:
        """Kafka's getOrMaybeSubscribeStaticConsumerGroupMember: a rejoining instance replaces
        its previous member (which a consumer-protocol member must have released with -2)."""
        existing = group.static_member(instance_id)
        if joining:
            if existing is None:
                log.info("group %s: static member %s (instance %s) joins", safe(group.group_id),
                         safe(member_id), safe(instance_id))
                return group.members.get(member_id) or ConsumerGroupMember(member_id)
            if not classic and not existing.uses_classic and \
                    existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                log.info("group %s: static member %s cannot join: instance %s is held by member %s",
                         safe(group.group_id), safe(member_id), safe(instance_id),
                         safe(existing.member_id))
                raise GroupError(E.UNRELEASED_INSTANCE_ID, f"Static member {member_id} with instance "
                                 f"id {instance_id} cannot join the group because the instance id "
                                 f"is owned by {existing.member_id} member.")
            new = existing.replace(member_id=member_id, member_epoch=0, previous_member_epoch=0)
            records += rec.member_tombstones(group.group_id, existing.member_id)
            records += [rec.member_subscription(group.group_id, new),
                        rec.target_member(group.group_id, member_id,
                                          group.target.get(existing.member_id, EMPTY)),
                        rec.current_assignment(group.group_id, new)]
            log.info("group %s: static member (instance %s) rejoins as %s, replacing %s",
                     safe(group.group_id), safe(instance_id), safe(member_id),
                     safe(existing.member_id))
            return new
        if existing is None:
            raise GroupError(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise GroupError(E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                             f"{instance_id} was fenced by member {existing.member_id}.")
        if not classic:
            _check_epoch(existing, epoch, owned)
        return existing

    def _new_target(self, out, now: int, group: ConsumerGroup, epoch: int, member: ConsumerGroupMember,
                    updated: ConsumerGroupMember, metadata, resolved, records):
        name = group.preferred_assignor(member, updated) or self.config.consumer_assignors[0]
        removed = None
        if updated.instance_id is not None:
            previous = group.static_members.get(updated.instance_id)
            if previous is not None and previous != updated.member_id:
                removed = previous
        try:
            assignment, target_records = build_target(group, epoch, ASSIGNORS[name], metadata,
                                                      self.image, resolved, updated, removed, now)
        except PartitionAssignorError as e:
            message = f"Failed to compute a new target assignment for epoch {epoch}: {e}"
            log.error("group %s: %s", safe(group.group_id), message)
            raise GroupError(E.UNKNOWN_SERVER_ERROR, message) from None
        records += target_records
        log.info("group %s: new target assignment for epoch %d with the %s assignor",
                 safe(group.group_id), epoch, name)
        if out.journal:
            topics = self.image.by_id
            out.note(now, Event.TARGET_ASSIGNMENT, group, updated.member_id, epoch=epoch,
                     assignor=name, members=sorted(assignment), assignment={
                         m: {topics[t].name if t in topics else kafka_uuid(t): sorted(ps)
                             for t, ps in parts.items()}
                         for m, parts in sorted(assignment.items())})
        return assignment.get(updated.member_id, EMPTY)

    def _leave(self, out: CoordinatorResult, now: int, req):
        """Kafka's consumerGroupLeave."""
        group = self.groups.get(req.group_id)
        if group is None:                   # Kafka's consumerGroup(groupId)
            raise GroupError(E.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a consumer group"
                             if self._classic_group(req.group_id) else f"Group {req.group_id} not found.")
        if req.instance_id is None:
            member = group.members.get(req.member_id)
            if member is None:
                raise GroupError(E.UNKNOWN_MEMBER_ID,
                                 f"Member {req.member_id} is not a member of group {req.group_id}.")
            log.info("group %s: member %s left the consumer group", safe(group.group_id),
                     safe(req.member_id))
        else:
            member = group.static_member(req.instance_id)
            if member is None:
                raise GroupError(E.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
            if member.member_id != req.member_id:
                raise GroupError(E.FENCED_INSTANCE_ID, f"Static member {req.member_id} with instance "
                                 f"id {req.instance_id} was fenced by member {member.member_id}.")
            if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                log.info("group %s: static member %s (instance %s) left temporarily",
                         safe(group.group_id), safe(member.member_id), safe(req.instance_id))
                # its partitions count as assigned at epoch 0 to the instance's next member:
                # commits of this member id are fenced from now on (KIP-1251)
                leaving = member.replace(member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                                         pending_revocation={},
                                         assigned_at=epochs_at(member.assigned, 0))
                self.apply(out, [rec.current_assignment(group.group_id, leaving)])
                out.note(now, Event.MEMBER_LEFT, group, member.member_id, instance_id=req.instance_id,
                         temporary=True)
                return HeartbeatResponse(error_code=E.NONE, member_id=member.member_id,
                                         member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH)
        self.fence(out, now, group, member)
        return HeartbeatResponse(error_code=E.NONE, member_id=req.member_id,
                                 member_epoch=req.member_epoch)

    def fence(self, out: CoordinatorResult, now: int, group: ConsumerGroup,
              member: ConsumerGroupMember, why: Expiry | None = None) -> None:
        """Kafka's consumerGroupFenceMember: consumerGroupFenceMembers of one member."""
        self.fence_members(out, now, group, [member], why)

    def fence_members(self, out: CoordinatorResult, now: int, group: ConsumerGroup,
                      members: list[ConsumerGroupMember], why: Expiry | None = None) -> None:
        """Kafka's consumerGroupFenceMembers: the (distinct) members' records go and the group
        epoch grows once; if only classic members remain, the group may become a classic group
        again. No members: nothing happens."""
        if not members:
            return
        gone = {m.member_id for m in members}
        for member in members:
            if why:
                out.note(now, Event.MEMBER_EXPIRED, group, member.member_id, reason=why)
            else:
                out.note(now, Event.MEMBER_LEFT, group, member.member_id)
        if classic_members.downgrade_allowed_fencing(self, group, gone):
            for member_id in gone:
                self.cancel_timers(group.group_id, member_id)
            self.to_classic(out, now, group, leaving=gone, rebalance=True,
                            reason=f"Downgrade group {group.group_id} from consumer to classic for "
                                   "member leaving.")
            return
        records = []
        for member in members:
            records += rec.member_tombstones(group.group_id, member.member_id)
        records += _unused_regexes(group, members, {m.subscribed_topic_regex for m in group.members.values()
                                                    if m.member_id not in gone})
        metadata = self.subscription_metadata(group.subscribed_topic_names(*members))
        if metadata != group.subscription_metadata:
            records.append(rec.partition_metadata(group.group_id, metadata))
        records.append(rec.group_epoch(group.group_id, group.group_epoch + 1))
        for member_id in gone:
            self.cancel_timers(group.group_id, member_id)
        out.note(now, Event.GROUP_EPOCH_BUMPED, group, members[0].member_id if len(members) == 1 else None,
                 epoch=group.group_epoch + 1, cause=Cause.MEMBER_LEFT if why is None else EXPIRY_CAUSES[why])
        self.apply(out, records)

    # --- timers -------------------------------------------------------------------------------
    def schedule_session(self, group_id: str, member_id: str, now: int,
                         timeout_ms: int | None = None) -> None:
        """(Re)arm a member's session: group.consumer.session.timeout.ms, or for a classic
        member the session timeout it joined with."""
        timeout = self.session_timeout_ms(group_id) if timeout_ms is None else timeout_ms
        self.schedule_fence(("consumer-session", group_id, member_id), group_id, member_id,
                            now + timeout, Expiry.SESSION)

    def schedule_fence(self, key, group_id: str, member_id: str, deadline: int, why: Expiry) -> None:
        """At ``deadline``, fence the member if it is still in the group."""
        def expire(out: CoordinatorResult, at: int) -> None:
            group = self.groups.get(group_id)
            member = group.members.get(member_id) if group is not None else None
            if member is not None:
                log.info("group %s: member %s fenced (%s)", safe(group_id), safe(member_id), why)
                self.fence(out, at, group, member, why)
        self.timers.schedule(key, deadline, expire)

    def _schedule_rebalance_timeout(self, group_id: str, member: ConsumerGroupMember, now: int) -> None:
        epoch, member_id = member.member_epoch, member.member_id

        def expire(out: CoordinatorResult, at: int) -> None:
            group = self.groups.get(group_id)
            current = group.members.get(member_id) if group is not None else None
            if current is not None and current.state == MemberState.UNREVOKED_PARTITIONS \
                    and current.member_epoch == epoch:
                log.info("group %s: member %s fenced: it did not revoke its partitions within its "
                         "rebalance timeout", safe(group_id), safe(member_id))
                self.fence(out, at, group, current, Expiry.REVOCATION)
        self.timers.schedule(("consumer-rebalance", group_id, member_id),
                             now + member.rebalance_timeout_ms, expire)

    def cancel_timers(self, group_id: str, member_id: str) -> None:
        for kind in ("consumer-session", "consumer-rebalance", "consumer-join", "consumer-sync"):
            self.timers.cancel((kind, group_id, member_id))

    # --- converting to a classic group ----------------------------------------------------------
    def to_classic(self, out: CoordinatorResult, now: int, group: ConsumerGroup, *,
                   leaving: set[str] | None, rebalance: bool, reason: str = "") -> None:
        """Kafka's convertToClassicGroup: the consumer group's tombstones, then the classic
        group's record (without the members ``leaving``); its members get classic sessions,
        and a rebalance starts (for ``reason``) if a member left or the target assignment is
        behind the group epoch (a static replacement otherwise keeps the assignment)."""
        classic = classic_members.classic_group_from(group, leaving, self.image, now)
        for member_id in group.members:
            self.cancel_timers(group.group_id, member_id)
        records = self.delete_records(group) + [self.classic.group_record(classic)]
        out.persist([encode_record(r) if not isinstance(r, Record) else r for r in records])
        for record in records[:-1]:
            self.replay(record)
        self.classic.groups[group.group_id] = classic
        log.info("group %s: the consumer group becomes a classic group (generation %d, %d members)",
                 safe(group.group_id), classic.generation, len(classic.members))
        out.note(now, Event.GROUP_CONVERTED, classic, None, to="classic",
                 members=list(classic.members))
        for member in classic.members.values():
            self.classic.schedule_session(classic, member, now)
        if rebalance:
            self.classic.prepare_rebalance(out, classic, now, reason)

    # --- records ------------------------------------------------------------------------------
    def apply(self, out: CoordinatorResult, records: list) -> None:
        """Persist the records, then replay them (a new group is materialized by its records)."""
        out.persist([encode_record(r) for r in records])
        for record in records:
            if isinstance(record, GroupRecord):
                self.replay(record)
            else:
                self.classic.replay(record)

    def replay(self, record: GroupRecord) -> None:
        """Kafka's GroupMetadataManager.replay for records 3-8 and 16: a group comes into being
        with its first record and goes with its epoch's tombstone."""
        group = self.groups.get(record.group)
        if group is None:
            if record.value is None:
                return                              # a tombstone for a group already gone
            group = self.groups[record.group] = ConsumerGroup(record.group)
            self.classic.drop_simple(record.group)     # its offsets came first (a compacted log)
        if record.type == rec.GROUP_EPOCH and record.value is None:
            del self.groups[record.group]
            return
        replay_into(group, record)

    def loaded(self, now: int) -> None:
        """After replay: every member gets a fresh session, and a member still revoking a fresh
        rebalance timeout (Kafka's onLoaded)."""
        for group in self.groups.values():
            for member in group.members.values():
                self.schedule_session(group.group_id, member.member_id, now,
                                      member.classic.session_timeout_ms if member.uses_classic else None)
                if member.state == MemberState.UNREVOKED_PARTITIONS:
                    self._schedule_rebalance_timeout(group.group_id, member, now)

    # --- admin --------------------------------------------------------------------------------
    def describe(self, out: CoordinatorResult, now: int, ctx: RequestContext, req) -> None:
        """ConsumerGroupDescribe (Kafka's consumerGroupDescribe)."""
        described = DescribeResponse.DescribedGroup
        groups = []
        for group_id in req.group_ids:
            group = self.groups.get(group_id)
            if not group_id:              # Kafka's service answers it before asking any shard
                groups.append(described(group_id="", error_code=E.INVALID_GROUP_ID))
            elif not self.owns(group_id):
                groups.append(described(group_id=group_id, error_code=E.NOT_COORDINATOR))
            elif group is None:
                message = (f"Group {group_id} is not a consumer group."
                           if self._classic_group(group_id) else f"Group {group_id} not found.")
                groups.append(described(group_id=group_id, error_code=E.GROUP_ID_NOT_FOUND,
                                        error_message=message))
            else:
                groups.append(self._described(ctx.version, group, req.include_authorized_operations))
        out.reply(ctx.token, ApiKey.CONSUMER_GROUP_DESCRIBE, ctx.version,
                  DescribeResponse(groups=tuple(groups)))

    def _described(self, version: int, group: ConsumerGroup, operations: bool):
        cls = DescribeResponse.DescribedGroup
        member_cls = cls.Member
        topics = self.image.by_id

        def assignment(parts, revoking=EMPTY):
            """A member's partitions by topic; those it is still revoking follow the ones it
            keeps, as it holds them until it has revoked them (Kafka 4.3, KAFKA-20431)."""
            return member_cls.Assignment(topic_partitions=tuple(
                member_cls.Assignment.TopicPartitions(
                    topic_id=t, topic_name=topics[t].name,
                    partitions=tuple(sorted(parts.get(t, ()))) + tuple(sorted(revoking.get(t, ()))))
                for t in dict.fromkeys([*parts, *revoking]) if t in topics))

        members = tuple(member_cls(
            member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
            member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
            subscribed_topic_names=tuple(sorted(m.subscribed_topic_names)),
            subscribed_topic_regex=m.subscribed_topic_regex or "",
            assignment=assignment(m.assigned, m.pending_revocation),
            target_assignment=assignment(group.target.get(m.member_id, EMPTY)),
            member_type=(0 if m.uses_classic else 1) if version >= 1 else -1)
            for m in group.members_in_kafka_order())
        return cls(error_code=E.NONE, group_id=group.group_id, group_state=group.state.value,
                   group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
                   assignor_name=group.preferred_assignor() or self.config.consumer_assignors[0],
                   members=members,
                   authorized_operations=r.GROUP_OPERATIONS if operations else -2147483648)

    def delete_records(self, group: ConsumerGroup) -> list:
        """Kafka's ConsumerGroup.createGroupTombstoneRecords, in its order."""
        gid, members = group.group_id, sorted(group.members)
        records = [rec.tombstone(rec.CURRENT, gid, m) for m in members]
        records += [rec.tombstone(rec.TARGET_MEMBER, gid, m) for m in members]
        records.append(rec.tombstone(rec.TARGET_EPOCH, gid))
        records += [rec.tombstone(rec.MEMBER, gid, m) for m in members]
        records += [rec.tombstone(rec.REGEX, gid, r) for r in sorted(group.resolved)]
        records.append(rec.tombstone(rec.PARTITION_METADATA, gid))
        records.append(rec.tombstone(rec.GROUP_EPOCH, gid))
        return records

    def validate_commit(self, group: ConsumerGroup, member_id: str, epoch: int, version: int,
                        partitions=(), *, transactional: bool = False,
                        instance_id: str | None = None) -> ErrorCode:
        """Kafka's ConsumerGroup.validateOffsetCommit: a consumer-protocol member commits with
        v9+ (unless transactionally); with its member epoch, or with an older one if each of
        the ``partitions`` ((topic name, partition)) is one it holds since that epoch or before
        (KIP-1251: its answer with the new epoch may still be on its way). A classic member's
        generation is its member epoch."""
        if epoch < 0 and not group.members:
            return E.NONE
        if transactional and epoch == -1 and member_id == "" and instance_id is None:
            return E.NONE           # a transactional commit need not name its member
        member = group.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        if not transactional and not member.uses_classic and version < 9:
            return E.UNSUPPORTED_VERSION
        if epoch == member.member_epoch:
            return E.NONE
        stale = E.ILLEGAL_GENERATION if member.uses_classic else E.STALE_MEMBER_EPOCH
        if epoch > member.member_epoch:
            return stale
        return self._assigned_since(member, epoch, partitions, stale, transactional)

    def _assigned_since(self, member: ConsumerGroupMember, epoch: int, partitions, stale: ErrorCode,
                        transactional: bool) -> ErrorCode:
        """Kafka's assignment-epoch validator: each partition must be one the member holds
        (assigned or still revoking), assigned at ``epoch`` or before. A transactional commit
        of a topic that does not exist is an illegal generation."""
        topics = self.image.topics
        for name, partition in partitions:
            topic = topics.get(name)
            if topic is None and transactional:
                return E.ILLEGAL_GENERATION
            assigned_at = None if topic is None else member.assignment_epoch(topic.topic_id, partition)
            if assigned_at is None or epoch < assigned_at:
                return stale
        return E.NONE

    def validate_fetch(self, group: ConsumerGroup, member_id: str | None, epoch: int) -> ErrorCode:
        """Kafka's ConsumerGroup.validateOffsetFetch."""
        if member_id is None and epoch < 0:
            return E.NONE
        member = group.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        return _epoch_error(member, epoch)

    def unload(self) -> None:
        self.groups.clear()


