"""The classic group protocol's rebalance machinery (Kafka's GroupMetadataManager, classic part).

It owns the shard's classic groups (consumer groups of JoinGroup/SyncGroup, and "simple"
groups that only commit offsets) and every rule about when they change: prepare the rebalance,
complete the join, propagate the assignment, expire sessions and pending members. The request
handlers of :mod:`coordinator.classic.membership` call it; every method that decides something
writes it to the operation's :class:`~coordinator.result.CoordinatorResult`.
"""

from __future__ import annotations

import logging
from typing import Callable

from offsets_log.records import (GroupMetadata, GroupMetadataTombstone, MemberMetadata, Record,
                                 TypedRecord, group_metadata_record)
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.exceptions import DecodeError
from protocol.logtext import safe, safe_list
from protocol.messages import DATA

from coordinator import responses
from coordinator.classic.group import ClassicGroup, Member
from coordinator.classic.state import GroupState
from coordinator.config import CoordinatorConfig
from coordinator.events import Cause, Event, Expiry
from coordinator.result import CoordinatorResult
from coordinator.routing import shard_for
from coordinator.timers import Timers

log = logging.getLogger("groupbroker.coordinator")

S = GroupState


class ClassicGroupManager:
    def __init__(self, shard_id: int, config: CoordinatorConfig, timers: Timers,
                 new_uuid: Callable[[], str]):
        self.shard_id, self.config, self.timers, self.new_uuid = shard_id, config, timers, new_uuid
        self.groups: dict[str, ClassicGroup] = {}

    # --- replay ----------------------------------------------------------------------------
    def replay(self, record: TypedRecord) -> None:
        """Apply a group record (GroupMetadataManager.replay); a tombstone removes the group only
        (its offsets have tombstones of their own, written ahead of it)."""
        if isinstance(record, GroupMetadata):
            self.groups[record.group] = self._group_from_record(record.group, record.value)
        elif isinstance(record, GroupMetadataTombstone):
            group = self.groups.pop(record.group, None)
            if group is not None:
                group.state = S.DEAD            # anything still holding it sees it gone

    def group_for_commit(self, group_id: str, now: int) -> ClassicGroup:
        """The group an offset commit belongs to; a commit for an unknown group creates a
        "simple" group (Kafka's getOrMaybeCreateClassicGroup)."""
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ClassicGroup(group_id, current_state_ts=now)
        return group

    def drop_simple(self, group_id: str) -> None:
        """A consumer or streams group's record replaces the "simple" group its offsets made
        when they were replayed first (Kafka's replay replaces a simple classic group)."""
        group = self.groups.get(group_id)
        if group is not None and not group.protocol_type and not group.members:
            del self.groups[group_id]

    def _group_from_record(self, group_id: str, value) -> ClassicGroup:
        """A group as persisted: Stable with its members (only the selected protocol), or Empty."""
        group = ClassicGroup(group_id, generation=value.generation,
                             protocol_type=value.protocol_type, protocol_name=value.protocol,
                             leader_id=value.leader, current_state_ts=value.current_state_timestamp)
        for m in value.members:
            rebalance = m.rebalance_timeout if m.rebalance_timeout != -1 else m.session_timeout
            group.add(Member(m.member_id, m.group_instance_id, m.client_id, m.client_host, rebalance,
                             m.session_timeout, value.protocol_type,
                             [(value.protocol, bytes(m.subscription))], bytes(m.assignment)))
        group.state = S.STABLE if group.members else S.EMPTY
        self.update_subscriptions(group)
        return group

    def loaded(self, out: CoordinatorResult, now: int) -> None:
        """After replay: members come back Stable with fresh session timers."""
        for group in list(self.groups.values()):
            # a "simple" group (offsets only, no protocol) is logged at DEBUG: a shard may hold
            # thousands, and a line each made a restart's log (and its load) that much longer
            log.log(logging.INFO if group.protocol_type else logging.DEBUG,
                    "shard %d: loaded group %s (%s, generation %d, %d members)", self.shard_id,
                    safe(group.group_id), group.state.value, group.generation, len(group.members))
            for member in group.members.values():
                self.schedule_session(group, member, now)
            if len(group.members) > self.config.group_max_size:
                self.prepare_rebalance(out, group, now, "group is over group.max.size after loading")

    # --- records ---------------------------------------------------------------------------
    def group_record(self, group: ClassicGroup,
                     assignments: dict[str, bytes] | None = None) -> Record:
        """The GroupMetadata record of ``group`` (GroupCoordinatorRecordHelpers), with
        ``assignments`` instead of the members' own if given (to check it before storing them).

        A group that never completed a join with members has no selected protocol, so nothing
        about its members can be written: a group being created is written as Kafka's empty
        record (protocol type "", generation 0), an Empty group keeps its type and generation.
        """
        if group.protocol_name is None:
            empty = group.is_in(S.EMPTY)
            return group_metadata_record(
                group.group_id, protocol_type=group.protocol_type if empty else "",
                generation=group.generation if empty else 0, protocol=None, leader=None,
                current_state_ts=group.current_state_ts)
        members = [
            MemberMetadata(member_id=m.member_id, group_instance_id=m.group_instance_id,
                           client_id=m.client_id, client_host=m.client_host,
                           rebalance_timeout=m.rebalance_timeout_ms, session_timeout=m.session_timeout_ms,
                           subscription=m.metadata(group.protocol_name),
                           assignment=m.assignment if assignments is None
                           else assignments.get(m.member_id, b""))
            for m in group.members.values()]
        return group_metadata_record(
            group.group_id, protocol_type=group.protocol_type, generation=group.generation,
            protocol=group.protocol_name, leader=group.leader_id,
            current_state_ts=group.current_state_ts, members=members)

    # --- sessions --------------------------------------------------------------------------
    def schedule_session(self, group: ClassicGroup, member: Member, now: int,
                         timeout_ms: int | None = None) -> None:
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        gid, mid = group.group_id, member.member_id
        self.timers.schedule(("session", gid, mid), now + timeout,
                      lambda out, t: self._session_expired(out, gid, mid, t))

    def _session_expired(self, out: CoordinatorResult,
                         group_id: str, member_id: str, now: int) -> None:
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group else None
        if member is None:
            return
        if (member.join or member.sync) and not member.is_new:
            # A parked request satisfies the heartbeat (Kafka's hasSatisfiedHeartbeat); the timer
            # is re-armed when the join or sync is answered.
            return
        self.remove_member_and_update(out, group, member, now, "session timeout expired")

    def remove_member_and_update(self, out: CoordinatorResult,
                                 group: ClassicGroup, member: Member, now: int,
                                 reason: str) -> None:
        """Drop a member whose session expired (answering its parked requests), then
        rebalance or finish the join."""
        self.drop_member(out, group, member, ErrorCode.UNKNOWN_MEMBER_ID)
        log.info("group %s: removed member %s (%s)", safe(group.group_id), safe(member.member_id), reason)
        out.note(now, Event.MEMBER_EXPIRED, group, member.member_id, reason=Expiry.SESSION,
                 detail=reason)
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            self.prepare_rebalance(out, group, now, f"removing member {member.member_id}: {reason}",
                                   cause=Cause.SESSION_EXPIRY)
        elif group.is_in(S.PREPARING_REBALANCE) and group.all_members_joined():
            # Kafka's removeMemberAndUpdateClassicGroup: no initial-delay guard here.
            self.complete_join(out, group, now)

    def drop_member(self, out: CoordinatorResult,
                    group: ClassicGroup, member: Member, error: ErrorCode) -> None:
        if member.join is not None:
            out.reply(member.join.token, ApiKey.JOIN_GROUP, member.join.version,
                      responses.join(member.join.version, error))
            member.join = None
        if member.sync is not None:
            out.reply(member.sync.token, ApiKey.SYNC_GROUP, member.sync.version,
                      responses.sync(member.sync.version, error))
            member.sync = None
        self.timers.cancel(("session", group.group_id, member.member_id))
        group.remove(member.member_id)

    # --- the rebalance ---------------------------------------------------------------------
    def transition(self, group: ClassicGroup, target: GroupState, now: int, why: str) -> None:
        before = group.state
        group.transition(target, now)
        log.info("group %s: %s -> %s (generation %d, members %s): %s", safe(group.group_id),
                 before.value, target.value, group.generation, safe_list(group.members), safe(why))

    def prepare_rebalance(self, out: CoordinatorResult, group: ClassicGroup, now: int, reason: str,
                          cause: Cause = Cause.FORCED) -> None:
        out.note(now, Event.REBALANCE_STARTED, group, cause=cause, reason=reason,
                 state=group.state.value, members=list(group.members))
        if group.rebalance_started_ts is None:
            group.rebalance_started_ts = now
        if group.is_in(S.COMPLETING_REBALANCE):
            for m in group.members.values():     # the assignment being computed is void
                m.assignment = b""
                if m.sync is not None:
                    out.reply(m.sync.token, ApiKey.SYNC_GROUP, m.sync.version,
                              responses.sync(m.sync.version, ErrorCode.REBALANCE_IN_PROGRESS))
                    m.sync = None
                    self.schedule_session(group, m, now)
        self.timers.cancel(("sync", group.group_id))
        group.pending_sync.clear()
        initial = group.is_in(S.EMPTY)
        self.transition(group, S.PREPARING_REBALANCE, now, reason)
        gid = group.group_id
        if initial:
            delay = self.config.group_initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self.timers.schedule(("join", gid), now + delay,
                          lambda out, t: self._initial_delay_over(out, gid, delay, remaining, t))
        elif group.all_members_joined():
            self.complete_join(out, group, now)
        else:
            self.timers.schedule(("join", gid), now + group.rebalance_timeout_ms(),
                          lambda out, t: self._join_timeout(out, gid, t))

    def _initial_delay_over(self, out: CoordinatorResult,
                            group_id: str, delay: int, remaining: int, now: int) -> None:
        group = self.groups.get(group_id)
        if group is None or not group.is_in(S.PREPARING_REBALANCE):
            return
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            new_delay = min(self.config.group_initial_rebalance_delay_ms, remaining)
            new_remaining = max(remaining - delay, 0)
            self.timers.schedule(("join", group_id), now + new_delay,
                          lambda out, t: self._initial_delay_over(out, group_id, new_delay, new_remaining, t))
        else:
            self.complete_join(out, group, now)

    def _join_timeout(self, out: CoordinatorResult, group_id: str, now: int) -> None:
        group = self.groups.get(group_id)
        if group is not None:
            self.complete_join(out, group, now)

    def maybe_complete_join(self, out: CoordinatorResult, group: ClassicGroup, now: int) -> None:
        """Finish the join phase early once everyone rejoined (never during the initial delay)."""
        if (group.is_in(S.PREPARING_REBALANCE) and group.previous_state != S.EMPTY
                and group.all_members_joined()):
            self.complete_join(out, group, now)

    def maybe_prepare_rebalance_or_complete_join(self, out: CoordinatorResult,
                                                 group: ClassicGroup, now: int, reason: str,
                                                 cause: Cause = Cause.FORCED):
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY):
            self.prepare_rebalance(out, group, now, reason, cause)
        elif group.is_in(S.PREPARING_REBALANCE):
            self.maybe_complete_join(out, group, now)

    def complete_join(self, out: CoordinatorResult, group: ClassicGroup, now: int) -> None:
        if not group.is_in(S.PREPARING_REBALANCE):
            return
        gid = group.group_id
        self.timers.cancel(("join", gid))
        for member in list(group.members.values()):
            if member.join is None and not member.is_static:
                self.drop_member(out, group, member, ErrorCode.UNKNOWN_MEMBER_ID)
                log.info("group %s: removed member %s (did not rejoin in time)", safe(gid),
                         safe(member.member_id))
                out.note(now, Event.MEMBER_EXPIRED, group, member.member_id, reason=Expiry.REJOIN)
        if group.members and not group.maybe_elect_joined_leader():
            # Only static members remain and none rejoined: wait another rebalance timeout.
            self.timers.schedule(("join", gid), now + group.rebalance_timeout_ms(),
                          lambda out, t: self._join_timeout(out, gid, t))
            return
        group.generation += 1
        group.pending_sync.clear()
        if not group.members:
            group.protocol_name = None
            self.update_subscriptions(group)
            self.transition(group, S.EMPTY, now, "join phase completed with no members")
            self.note_completed(out, group, now)
            group.rebalance_started_ts = None
            out.persist([self.group_record(group)])
            return
        group.protocol_name = group.select_protocol()
        self.update_subscriptions(group)
        self.transition(group, S.COMPLETING_REBALANCE, now, "join phase completed")
        self.note_completed(out, group, now)
        for member in group.members.values():
            # Kafka re-arms every member's session here, static ones that did not rejoin too.
            if member.join is not None:
                self.answer_join(out, group, member)
            member.is_new = False
            self.schedule_session(group, member, now)
        group.pending_sync = set(group.members)
        self.timers.schedule(("sync", gid), now + group.rebalance_timeout_ms(),
                      lambda out, t: self._pending_sync_expired(out, gid, t))

    def note_completed(self, out: CoordinatorResult, group: ClassicGroup, now: int) -> None:
        out.note(now, Event.REBALANCE_COMPLETED, group, leader=group.leader_id,
                 members=list(group.members), protocol_type=group.protocol_type,
                 protocol=group.protocol_name, duration_ms=self.rebalance_ms(group, now))

    @staticmethod
    def rebalance_ms(group: ClassicGroup, now: int) -> int | None:
        """How long the group has been rebalancing (None if the start was not seen)."""
        return None if group.rebalance_started_ts is None else now - group.rebalance_started_ts

    def answer_join(self, out: CoordinatorResult, group: ClassicGroup, member: Member) -> None:
        """Send a parked JoinGroup its answer for the current generation; the leader gets everyone."""
        parked = member.join
        member.join = None
        out.reply(parked.token, ApiKey.JOIN_GROUP, parked.version,
                  self.join_response(group, member, parked.version))

    def join_response(self, group: ClassicGroup, member: Member, version: int, *,
                      leader: str | None = None, skip_assignment: bool = False,
                      with_members: bool | None = None):
        is_leader = member.member_id == group.leader_id if with_members is None else with_members
        member_cls = responses.JoinGroupResponse.JoinGroupResponseMember
        members = [member_cls(member_id=m.member_id,
                              group_instance_id=m.group_instance_id if version >= 5 else None,
                              metadata=m.metadata(group.protocol_name))
                   for m in group.members.values()] if is_leader else []
        return responses.join(version, ErrorCode.NONE, member_id=member.member_id,
                              generation=group.generation, protocol_type=group.protocol_type,
                              protocol_name=group.protocol_name,
                              leader=group.leader_id if leader is None else leader,
                              members=members, skip_assignment=skip_assignment)

    def _pending_sync_expired(self, out: CoordinatorResult, group_id: str, now: int) -> None:
        group = self.groups.get(group_id)
        if group is None or not group.is_in(S.COMPLETING_REBALANCE, S.STABLE) or not group.pending_sync:
            return
        missing = sorted(group.pending_sync)
        for member_id in missing:
            member = group.members.get(member_id)
            if member is not None:
                self.drop_member(out, group, member, ErrorCode.UNKNOWN_MEMBER_ID)
                out.note(now, Event.MEMBER_EXPIRED, group, member_id, reason=Expiry.SYNC)
        self.prepare_rebalance(out, group, now, f"members {missing} did not send SyncGroup in time",
                               cause=Cause.SYNC_TIMEOUT)

    def sync_received(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            self.timers.cancel(("sync", group.group_id))

    def update_subscriptions(self, group: ClassicGroup) -> None:
        """Learn the topics a "consumer" group reads (ClassicGroup.computeSubscribedTopics).

        Every member's metadata is read as ConsumerProtocolSubscription v0, the prefix of all
        versions; ``None`` (unknown) when the group is not "consumer", has no protocol yet, or
        some metadata does not parse.
        """
        if group.protocol_type != "consumer":
            group.subscribed_topics = None
            return
        if not group.members:
            group.subscribed_topics = frozenset()
            return
        if group.protocol_name is None:
            group.subscribed_topics = None
            return
        topics: set[str] = set()
        schema = DATA["ConsumerProtocolSubscription"].codec(0)
        try:
            for m in group.members.values():
                metadata = m.metadata(group.protocol_name)
                if len(metadata) < 2:
                    raise DecodeError("no version header", api="ConsumerProtocolSubscription")
                topics.update(schema.decode_prefix(metadata, 2).topics)
        except DecodeError as e:
            log.warning("group %s: cannot parse the consumer subscriptions (%s); every topic "
                        "counts as subscribed", safe(group.group_id), e)
            group.subscribed_topics = None
            return
        group.subscribed_topics = frozenset(topics)

    def unload(self, out: CoordinatorResult) -> None:
        """Give up this state (Kafka's onUnloaded): every parked JoinGroup and SyncGroup is
        answered NOT_COORDINATOR, every group is Dead, no timer fires any more."""
        for group in self.groups.values():
            for member in group.members.values():
                if member.join is not None:
                    out.reply(member.join.token, ApiKey.JOIN_GROUP, member.join.version,
                              responses.join(member.join.version, ErrorCode.NOT_COORDINATOR,
                                             member_id=member.member_id))
                if member.sync is not None:
                    out.reply(member.sync.token, ApiKey.SYNC_GROUP, member.sync.version,
                              responses.sync(member.sync.version, ErrorCode.NOT_COORDINATOR))
                member.join = member.sync = None
            group.state = S.DEAD

    def owns(self, group_id: str) -> bool:
        return shard_for(group_id, self.config.offsets_topic_num_partitions) == self.shard_id
