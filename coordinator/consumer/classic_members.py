"""Groups mixing both protocols (KIP-848's interoperability, Kafka 4.0).

A classic member (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) may join a consumer group: the
coordinator answers it from the consumer group's state — its JoinGroup is the consumer
protocol's heartbeat step, answered at once with its member epoch as the generation; its
SyncGroup hands it the partitions it holds, in the consumer protocol's assignment bytes; its
Heartbeat says REBALANCE_IN_PROGRESS when it must rejoin to move on. Under
``group.consumer.migration.policy`` a live classic group becomes a consumer group when a
consumer-protocol member joins (upgrade), and a consumer group whose last consumer-protocol
member leaves becomes a classic group again (downgrade).
"""

from __future__ import annotations

import logging

from offsets_log.errors import RecordError
from offsets_log.records import GroupMetadataTombstone
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.exceptions import DecodeError
from protocol.logtext import safe
from protocol.messages import DATA, REQUESTS
from protocol.payloads import decode_payload, encode_payload

from coordinator import responses as r
from coordinator.actions import RequestContext
from coordinator.classic.group import ClassicGroup, Member
from coordinator.classic.membership import unstorable
from coordinator.classic.state import GroupState as ClassicState
from coordinator.consumer import records as rec
from coordinator.consumer.group import ConsumerGroup
from coordinator.consumer.member import (ClassicMetadata, ConsumerGroupMember, MemberState,
                                         epochs_at, new_member_id)
from coordinator.consumer.replay import replay_into
from coordinator.errors import GroupError
from coordinator.events import Event, Expiry
from coordinator.result import CoordinatorResult

log = logging.getLogger("groupbroker.coordinator")

E = ErrorCode
PROTOCOL_TYPE = "consumer"
SUBSCRIPTION = DATA["ConsumerProtocolSubscription"]
ASSIGNMENT = DATA["ConsumerProtocolAssignment"]
OwnedPartitions = REQUESTS[ApiKey.CONSUMER_GROUP_HEARTBEAT].cls.TopicPartitions


# --- the consumer protocol's embedded bytes --------------------------------------------------

def parse_subscription(metadata: bytes):
    """A ConsumerProtocolSubscription (any version; later fields ignored). Kafka 4.3.1 fails
    the JoinGroup of a malformed one with an IllegalStateException, which answers
    UNKNOWN_SERVER_ERROR (INCONSISTENT_GROUP_PROTOCOL is KAFKA-20662, after 4.3.1)."""
    try:
        return decode_payload(SUBSCRIPTION, metadata)[1]
    except DecodeError as e:
        raise GroupError(E.UNKNOWN_SERVER_ERROR, "Malformed embedded consumer protocol in "
                         f"subscription deserialization ({e}).") from None


def encode_assignment(assignment, image, metadata: bytes) -> bytes:
    """A member's partitions as ConsumerProtocolAssignment bytes, at the version of its
    subscription (clamped to what the schema knows), topic ids named from the image."""
    version = int.from_bytes(metadata[:2], "big", signed=True) if len(metadata) >= 2 else 0
    version = min(max(version, ASSIGNMENT.min_version), ASSIGNMENT.max_version)
    cls = ASSIGNMENT.cls
    topics = image.by_id
    return encode_payload(ASSIGNMENT, version, cls(assigned_partitions=tuple(
        cls.TopicPartition(topic=topics[t].name, partitions=tuple(sorted(ps)))
        for t, ps in assignment.items() if t in topics), user_data=None))


def owned_partitions(subscription, image):
    """The owned partitions a subscription reports, as a heartbeat's TopicPartitions (Kafka's
    toTopicPartitions: topics unknown to the image are left out)."""
    return [OwnedPartitions(topic_id=image.topics[tp.topic].topic_id, partitions=tuple(tp.partitions))
            for tp in (subscription.owned_partitions or ()) if tp.topic in image.topics]


# --- JoinGroup, SyncGroup, Heartbeat, LeaveGroup from classic members ------------------------

def join(mgr, out: CoordinatorResult, now: int, ctx: RequestContext, req, group: ConsumerGroup) -> None:
    """Kafka's classicGroupJoinToConsumerGroup."""
    v = ctx.version
    member_id = req.member_id
    unknown = member_id == ""
    if unknown:
        member_id = new_member_id()
    try:
        if not mgr.config.upgrade_enabled and not mgr.config.downgrade_enabled:
            # with no migration allowed a group never mixes protocols (Kafka 4.3, KAFKA-20640)
            log.info("group %s: a classic member cannot join the consumer group: the group migration "
                     "is disabled", safe(group.group_id))
            raise GroupError(E.INCONSISTENT_GROUP_PROTOCOL, f"Cannot join the consumer group "
                             f"{group.group_id} with the classic protocol because the group "
                             "migration is disabled.")
        mgr.check_group_size(group, member_id)
        names = [p.name for p in req.protocols]
        if not group.supports_classic_protocols(req.protocol_type, names):
            raise GroupError(E.INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not supported.")
        if unknown and v >= 4 and req.group_instance_id is None:
            log.info("group %s: a dynamic classic member joins the consumer group: asking it to "
                     "rejoin as %s", safe(group.group_id), safe(member_id))
            out.reply(ctx.token, ApiKey.JOIN_GROUP, v, r.join(v, E.MEMBER_ID_REQUIRED, member_id=member_id))
            return
        records: list = []
        if req.group_instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                member = ConsumerGroupMember(member_id)
                log.info("group %s: member %s joins the consumer group with the classic protocol",
                         safe(group.group_id), safe(member_id))
        else:
            member = mgr.static_member(group, member_id, req.group_instance_id, unknown, -1, [],
                                       records, classic=True)
        protocols = tuple((p.name, bytes(p.metadata)) for p in req.protocols)
        subscription = parse_subscription(protocols[0][1])
        updated = member.replace(
            instance_id=req.group_instance_id if req.group_instance_id is not None else member.instance_id,
            rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=req.rebalance_timeout_ms if v >= 1 and req.rebalance_timeout_ms != -1
            else (member.rebalance_timeout_ms if v >= 1 else req.session_timeout_ms),
            subscribed_topic_names=frozenset(subscription.topics),
            client_id=ctx.client_id, client_host=ctx.client_host,
            classic=ClassicMetadata(req.session_timeout_ms, protocols))
        replaced = group.static_members.get(req.group_instance_id) \
            if req.group_instance_id is not None else None
        downgrade = replaced is not None and replaced != member_id and \
            downgrade_allowed(mgr, group, replaced)
        reconciled = mgr.step(out, now, group, member, updated,
                              owned_partitions(subscription, mgr.image), records, downgrading=downgrade)
        mgr.apply(out, records)
        if downgrade:
            # a target behind the group epoch (the subscription changed, or the next assignment
            # was still waiting) makes the classic group rebalance (Kafka 4.3, KAFKA-20273)
            converted = mgr.groups[group.group_id]
            stale = converted.assignment_epoch < converted.group_epoch
            mgr.to_classic(out, now, converted, leaving=None, rebalance=stale,
                           reason=f"Downgrade group {group.group_id} from consumer to classic with "
                                  "stale assignment.")
        else:
            mgr.timers.cancel(("consumer-join", group.group_id, member_id))
            mgr.schedule_session(group.group_id, member_id, now, req.session_timeout_ms)
            _schedule_sync_timeout(mgr, group.group_id, member_id, now, updated.rebalance_timeout_ms)
        out.reply(ctx.token, ApiKey.JOIN_GROUP, v, r.join(
            v, E.NONE, member_id=reconciled.member_id, generation=reconciled.member_epoch,
            protocol_type=PROTOCOL_TYPE, protocol_name=protocols[0][0]))
    except GroupError as e:         # Kafka's failed operation: an answer with no member id
        out.reply(ctx.token, ApiKey.JOIN_GROUP, v, r.join(v, e.code))
    except RecordError as e:        # its records cannot be written: nothing was applied
        error = unstorable(ctx, f"group {safe(group.group_id)}: the member's records cannot be stored ({e})")
        out.reply(ctx.token, ApiKey.JOIN_GROUP, v, r.join(v, error))


def _classic_member(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
    """Kafka's validateConsumerGroupMember, then throwIfMemberDoesNotUseClassicProtocol."""
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise GroupError(E.UNKNOWN_MEMBER_ID,
                             f"Member {member_id} is not a member of group {group.group_id}.")
    else:
        member = group.static_member(instance_id)
        if member is None:
            raise GroupError(E.UNKNOWN_MEMBER_ID, f"Member with instance id {instance_id} is not a "
                             f"member of group {group.group_id}.")
        if member.member_id != member_id:
            raise GroupError(E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                             f"{instance_id} was fenced by member {member.member_id}.")
    if not member.uses_classic:
        raise GroupError(E.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic protocol.")
    return member


def _check_generation(member: ConsumerGroupMember, generation: int) -> None:
    if member.member_epoch != generation:
        raise GroupError(E.ILLEGAL_GENERATION, f"The request generation id {generation} is not equal "
                         f"to the member epoch {member.member_epoch} of member {member.member_id}.")


def sync(mgr, out: CoordinatorResult, now: int, ctx: RequestContext, req, group: ConsumerGroup) -> None:
    """Kafka's classicGroupSyncToConsumerGroup: the member's current partitions, at once."""
    v = ctx.version
    try:
        member = _classic_member(group, req.member_id, req.group_instance_id)
        _check_generation(member, req.generation_id)
        name = member.classic.protocol_name
        if req.protocol_type is not None and req.protocol_type != PROTOCOL_TYPE:
            raise GroupError(E.INCONSISTENT_GROUP_PROTOCOL)
        if req.protocol_name is not None and req.protocol_name != name:
            raise GroupError(E.INCONSISTENT_GROUP_PROTOCOL)
        _throw_if_rebalancing(mgr, group, member, now)
        mgr.timers.cancel(("consumer-sync", group.group_id, member.member_id))
        mgr.schedule_session(group.group_id, member.member_id, now, member.classic.session_timeout_ms)
        assignment = encode_assignment(member.assigned, mgr.image, member.classic.protocols[0][1])
        out.reply(ctx.token, ApiKey.SYNC_GROUP, v, r.sync(
            v, E.NONE, assignment, protocol_type=req.protocol_type, protocol_name=req.protocol_name))
    except GroupError as e:
        out.reply(ctx.token, ApiKey.SYNC_GROUP, v, r.sync(v, e.code))


def _throw_if_rebalancing(mgr, group: ConsumerGroup, member: ConsumerGroupMember, now: int) -> None:
    """A newer target assignment makes the member rejoin, unless it is still revoking (a group
    epoch whose assignment is still to be computed does not: Kafka 4.3, KAFKA-20272)."""
    if group.assignment_epoch > member.member_epoch and member.state != MemberState.UNREVOKED_PARTITIONS:
        _schedule_join_timeout(mgr, group.group_id, member, now)
        raise GroupError(E.REBALANCE_IN_PROGRESS)


def heartbeat(mgr, out: CoordinatorResult, now: int, ctx: RequestContext, req, group: ConsumerGroup) -> None:
    """Kafka's classicGroupHeartbeatToConsumerGroup."""
    try:
        member = _classic_member(group, req.member_id, req.group_instance_id)
        _check_generation(member, req.generation_id)
        mgr.schedule_session(group.group_id, member.member_id, now, member.classic.session_timeout_ms)
        error = E.NONE
        if member.member_epoch < group.assignment_epoch or member.state == MemberState.UNREVOKED_PARTITIONS \
                or (member.state == MemberState.UNRELEASED_PARTITIONS
                    and not _waiting_on_unreleased(group, member)):
            error = E.REBALANCE_IN_PROGRESS
            _schedule_join_timeout(mgr, group.group_id, member, now)
    except GroupError as e:
        error = e.code
    out.reply(ctx.token, ApiKey.HEARTBEAT, ctx.version, r.heartbeat(error))


def _waiting_on_unreleased(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
    """Some partition of its target is still held by another member."""
    for topic_id, partitions in group.target.get(member.member_id, {}).items():
        held = member.assigned.get(topic_id, frozenset())
        if any(p not in held and group.current_partition_epoch(topic_id, p) != -1 for p in partitions):
            return True
    return False


def leave(mgr, out: CoordinatorResult, now: int, ctx: RequestContext, req, group: ConsumerGroup) -> None:
    """Kafka's classicGroupLeaveToConsumerGroup: every member named leaves, whichever protocol
    it uses (the Admin's removeMembersFromConsumerGroup names consumer-protocol members too),
    all fenced together: the group epoch grows once. Each answer echoes the identity named."""
    v = ctx.version
    leaving = [(req.member_id, None)] if v < 3 else [(m.member_id, m.group_instance_id) for m in req.members]
    results, gone = [], {}
    for member_id, instance_id in leaving:
        try:
            if instance_id is None:
                member = group.members.get(member_id)
                if member is None:
                    raise GroupError(E.UNKNOWN_MEMBER_ID,
                                     f"Member {member_id} is not a member of group {group.group_id}.")
            else:
                member = group.static_member(instance_id)
                if member is None:
                    raise GroupError(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
                # an administrative removal names the instance alone, with no member id
                if member_id != "" and member.member_id != member_id:
                    raise GroupError(E.FENCED_INSTANCE_ID)
            log.info("group %s: member %s (instance %s) left the consumer group through LeaveGroup",
                     safe(group.group_id), safe(member.member_id), safe(instance_id))
            gone[member.member_id] = member
            results.append((member_id, instance_id, E.NONE))
        except GroupError as e:
            results.append((member_id, instance_id, e.code))
    mgr.fence_members(out, now, group, list(gone.values()))
    out.reply(ctx.token, ApiKey.LEAVE_GROUP, v, r.leave(v, results))


# --- timers of classic members ---------------------------------------------------------------

def _schedule_join_timeout(mgr, group_id: str, member: ConsumerGroupMember, now: int) -> None:
    """A classic member asked to rejoin must do so within its rebalance timeout (if not already
    waiting for one)."""
    key = ("consumer-join", group_id, member.member_id)
    if key not in mgr.timers:
        mgr.schedule_fence(key, group_id, member.member_id, now + member.rebalance_timeout_ms,
                           Expiry.REJOIN)


def _schedule_sync_timeout(mgr, group_id: str, member_id: str, now: int, timeout_ms: int) -> None:
    mgr.schedule_fence(("consumer-sync", group_id, member_id), group_id, member_id, now + timeout_ms,
                       Expiry.SYNC)


# --- converting groups -----------------------------------------------------------------------

def upgrade_allowed(mgr, classic: ClassicGroup) -> bool:
    """Kafka's validateOnlineUpgrade."""
    gid = safe(classic.group_id)
    if not mgr.config.upgrade_enabled:
        log.info("group %s: cannot become a consumer group: the online upgrade is disabled", gid)
        return False
    if classic.protocol_type != PROTOCOL_TYPE:
        log.info("group %s: cannot become a consumer group: it does not use the consumer "
                 "embedded protocol", gid)
        return False
    if len(classic.members) > mgr.config.group_consumer_max_size:
        log.info("group %s: cannot become a consumer group: it has more members than "
                 "group.consumer.max.size", gid)
        return False
    return True


def to_consumer(mgr, out: CoordinatorResult, now: int, classic: ClassicGroup,
                records: list) -> ConsumerGroup:
    """Kafka's convertToConsumerGroup: the classic group's parked requests are answered
    REBALANCE_IN_PROGRESS, its tombstone and the consumer group's records are added to
    ``records``; returns the consumer group as those records make it (not yet registered)."""
    for m in classic.members.values():
        if m.join is not None:
            out.reply(m.join.token, ApiKey.JOIN_GROUP, m.join.version,
                      r.join(m.join.version, E.REBALANCE_IN_PROGRESS, member_id=m.member_id))
            m.join = None
        if m.sync is not None:
            out.reply(m.sync.token, ApiKey.SYNC_GROUP, m.sync.version,
                      r.sync(m.sync.version, E.REBALANCE_IN_PROGRESS))
            m.sync = None
    gid, generation = classic.group_id, classic.generation
    if classic.protocol_name is None:
        # Kafka reads the members' metadata of the selected protocol, which a group still in
        # its first rebalance does not have: its conversion throws (NoSuchElementException),
        # answered UNKNOWN_SERVER_ERROR; the member retries once the first generation exists.
        log.info("group %s: cannot become a consumer group before its first rebalance completes",
                 safe(gid))
        raise GroupError(E.UNKNOWN_SERVER_ERROR, "No value present")
    members = []
    for m in classic.members.values():
        try:
            subscription = parse_subscription(m.metadata(classic.protocol_name))
            assignment = decode_payload(ASSIGNMENT, m.assignment)[1] if m.assignment else None
        except (GroupError, DecodeError) as e:
            log.warning("group %s: cannot become a consumer group: member %s's embedded consumer "
                        "protocol is malformed (%s)", safe(gid), safe(m.member_id), e)
            raise GroupError(E.GROUP_ID_NOT_FOUND, f"Cannot upgrade the classic group {gid} to consumer "
                             "group because the embedded consumer protocol is malformed.") from None
        topics = mgr.image.topics
        assigned = {}
        for tp in (assignment.assigned_partitions if assignment else ()):
            if tp.topic in topics and tp.partitions:
                tid = topics[tp.topic].topic_id
                assigned[tid] = assigned.get(tid, frozenset()) | frozenset(tp.partitions)
        members.append(ConsumerGroupMember(
            m.member_id, instance_id=m.group_instance_id, rack_id=subscription.rack_id,
            client_id=m.client_id, client_host=m.client_host,
            subscribed_topic_names=frozenset(subscription.topics),
            rebalance_timeout_ms=m.rebalance_timeout_ms, member_epoch=generation,
            previous_member_epoch=generation, state=MemberState.STABLE, assigned=assigned,
            assigned_at=epochs_at(assigned, generation),
            classic=ClassicMetadata(m.session_timeout_ms, tuple(m.protocols))))
    converted = [GroupMetadataTombstone(gid)]
    converted += [rec.member_subscription(gid, m) for m in members]
    converted.append(rec.group_epoch(gid, generation))
    converted += [rec.target_member(gid, m.member_id, m.assigned) for m in members]
    converted.append(rec.target_epoch(gid, generation))
    converted += [rec.current_assignment(gid, m) for m in members]
    group = ConsumerGroup(gid)
    for record in converted[1:]:
        replay_into(group, record)
    records += converted
    log.info("group %s: the classic group (generation %d, %d members) becomes a consumer group",
             safe(gid), generation, len(members))
    out.note(now, Event.GROUP_CONVERTED, group, None, to="consumer", members=[m.member_id for m in members])
    return group


def downgrade_allowed(mgr, group: ConsumerGroup, member_id: str) -> bool:
    """Kafka's validateOnlineDowngradeWithReplacedMember: every other member uses the classic
    protocol (the replaced one does not), and the policy and group.max.size allow it."""
    others_classic = sum(1 for m in group.members.values() if m.uses_classic) == len(group.members) - 1
    member = group.members.get(member_id)
    if not others_classic or member is None or member.uses_classic:
        return False
    return _downgrade_permitted(mgr, group, len(group.members))


def downgrade_allowed_fencing(mgr, group: ConsumerGroup, fenced: set[str]) -> bool:
    """Kafka's validateOnlineDowngradeWithFencedMembers: every member but the ``fenced`` uses
    the classic protocol (whichever protocol the fenced use), one at least remains, and the
    policy and group.max.size allow it."""
    remaining = [m for member_id, m in group.members.items() if member_id not in fenced]
    if not all(m.uses_classic for m in remaining) or not remaining:
        return False
    return _downgrade_permitted(mgr, group, len(remaining))


def _downgrade_permitted(mgr, group: ConsumerGroup, size: int) -> bool:
    gid = safe(group.group_id)
    if not mgr.config.downgrade_enabled:
        log.info("group %s: cannot become a classic group: the online downgrade is disabled", gid)
        return False
    if size > mgr.config.group_max_size:
        log.info("group %s: cannot become a classic group: it has more members than "
                 "group.max.size", gid)
        return False
    return True


def classic_group_from(group: ConsumerGroup, leaving: set[str] | None, image, now: int) -> ClassicGroup:
    """Kafka's ClassicGroup.fromConsumerGroup: the classic members (but those ``leaving``),
    Stable at the group epoch, each with its target assignment in consumer-protocol bytes."""
    classic = ClassicGroup(group.group_id, state=ClassicState.STABLE, generation=group.group_epoch,
                           protocol_type=PROTOCOL_TYPE, current_state_ts=now)
    for member_id, m in group.members.items():
        if leaving and member_id in leaving:
            continue
        classic.add(Member(member_id, m.instance_id, m.client_id, m.client_host,
                           m.rebalance_timeout_ms, m.classic.session_timeout_ms, PROTOCOL_TYPE,
                           list(m.classic.protocols)))
    classic.protocol_name = classic.select_protocol()
    for member in classic.members.values():
        member.assignment = encode_assignment(group.target.get(member.member_id, {}), image,
                                              member.metadata(classic.protocol_name))
    return classic
