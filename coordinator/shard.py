"""One coordinator shard: the groups and offsets of one ``__consumer_offsets`` partition.

Pure logic, driven from outside:

* ``handle(now, ctx, request)`` answers one group-API request;
* ``tick(now)`` fires the timers that are due (session, join, sync, pending member, sweep);
* ``replay(record)`` rebuilds state from the offsets log, then ``loaded(now)`` arms timers.

Each returns the :mod:`coordinator.actions` to carry out. Time is milliseconds, passed in;
nothing here reads a clock, touches a file or a socket. The rebalance machinery below follows
Kafka's ``GroupMetadataManager`` (prepare, complete join, propagate assignment, expirations);
the API handlers live in :mod:`coordinator.membership`, :mod:`coordinator.offsets` and
:mod:`coordinator.admin`.
"""

from __future__ import annotations

import heapq
import logging
import uuid
from dataclasses import dataclass
from itertools import count
from typing import Callable

from offsets_log.errors import RecordTooLargeError
from offsets_log.records import (BATCH_OVERHEAD, GroupMetadata, GroupMetadataTombstone,
                                 MemberMetadata, OffsetCommit, OffsetCommitTombstone, Record,
                                 TypedRecord, batch_size, group_metadata_record)
from protocol.errors import ErrorCode
from protocol.logtext import safe, safe_list
from protocol.messages import DATA
from protocol.exceptions import DecodeError

from . import responses
from .actions import Action, Journal, Persist, Reply, RequestContext
from .config import CoordinatorConfig
from .events import Cause, Event, Expiry
from .group import ClassicGroup, Member
from .routing import shard_for
from .state import GroupState

log = logging.getLogger("groupbroker.coordinator")

S = GroupState


@dataclass(slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_ts: int
    expire_ts: int | None


class Shard:
    def __init__(self, shard_id: int, config: CoordinatorConfig | None = None, *,
                 new_uuid: Callable[[], str] = lambda: str(uuid.uuid4()), journal: bool = False):
        self.shard_id = shard_id
        self.journal = journal          # emit Journal actions (coordinator/events.py)
        self.config = config or CoordinatorConfig()
        self.new_uuid = new_uuid
        self.groups: dict[str, ClassicGroup] = {}
        self.offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        self._timers: dict[tuple, tuple[int, int, Callable[[int], None]]] = {}
        self._heap: list[tuple[int, int, tuple]] = []
        self._seq = count()
        self._out: list[Action] = []

    # --- driving ---------------------------------------------------------------------------
    def handle(self, now: int, ctx: RequestContext, request) -> list[Action]:
        _handlers()[ctx.api_key](self, now, ctx, request)
        return self._take()

    def intervene(self, now: int, fault: Callable, *args) -> tuple[object, list[Action]]:
        """Apply a fault from coordinator/interventions.py: its outcome and its actions."""
        return fault(self, now, *args), self._take()

    def tick(self, now: int) -> list[Action]:
        """Fire every timer due at ``now``, earliest first."""
        while self._heap and self._heap[0][0] <= now:
            deadline, seq, key = heapq.heappop(self._heap)
            entry = self._timers.get(key)
            if entry is None or entry[1] != seq:
                continue                       # cancelled or re-armed since
            del self._timers[key]
            entry[2](now)
        return self._take()

    def next_deadline(self) -> int | None:
        while self._heap:
            deadline, seq, key = self._heap[0]
            entry = self._timers.get(key)
            if entry is not None and entry[1] == seq:
                return deadline
            heapq.heappop(self._heap)
        return None

    def forget_topics(self, topics: set[str]) -> list[Action]:
        """Drop the committed offsets of deleted topics (tombstones), as Kafka does on deletion."""
        from .offsets import forget_topics
        forget_topics(self, topics)
        return self._take()

    def fresh(self) -> Shard:
        """An empty shard like this one: what reloading from the log starts from."""
        return type(self)(self.shard_id, self.config, new_uuid=self.new_uuid, journal=self.journal)

    def unload(self) -> list[Action]:
        """Give up this state (Kafka's onUnloaded): every parked JoinGroup and SyncGroup is
        answered NOT_COORDINATOR, every group is Dead, no timer fires any more."""
        for group in self.groups.values():
            for member in group.members.values():
                if member.join is not None:
                    self.reply(member.join.token, responses.JOIN_GROUP, member.join.version,
                               responses.join(member.join.version, ErrorCode.NOT_COORDINATOR,
                                              member_id=member.member_id))
                if member.sync is not None:
                    self.reply(member.sync.token, responses.SYNC_GROUP, member.sync.version,
                               responses.sync(member.sync.version, ErrorCode.NOT_COORDINATOR))
                member.join = member.sync = None
            group.state = S.DEAD
        self._timers.clear()
        self._heap.clear()
        return self._take()

    def owns(self, group_id: str) -> bool:
        return shard_for(group_id, self.config.offsets_topic_num_partitions) == self.shard_id

    # --- outputs ---------------------------------------------------------------------------
    def _take(self) -> list[Action]:
        out, self._out = self._out, []
        return out

    def abandon(self) -> list[Action]:
        """The actions queued by a step that failed midway: none of them may be carried out."""
        return self._take()

    def reply(self, token, api_key: int, version: int, response) -> None:
        self._out.append(Reply(token, api_key, version, response))

    def persist(self, records: list[Record]) -> None:
        """Queue records for the log; raises :class:`RecordTooLargeError`, queueing nothing,
        if one is over the offsets topic's max.message.bytes (Kafka's CoordinatorRuntime
        refuses such a batch with RecordTooLargeException)."""
        if records:
            limit = self.config.message_max_bytes - BATCH_OVERHEAD - 16   # below: surely fits
            for record in records:
                if len(record.key) + len(record.value or b"") > limit and \
                        batch_size(record) > self.config.message_max_bytes:
                    raise RecordTooLargeError(
                        f"a record batch of {batch_size(record)} bytes is over "
                        f"message.max.bytes ({self.config.message_max_bytes})")
            self._out.append(Persist(tuple(records)))

    def note(self, now: int, event: Event, group: ClassicGroup, member: str | None = None,
             **details) -> None:
        """Record a group event for the journal (only when the journal is on)."""
        if self.journal:
            self._out.append(Journal(event, now, self.shard_id, group.group_id, group.generation,
                                     member, details))

    def mark(self) -> int:
        """Where the next action will go (to insert a Persist ahead of replies already queued)."""
        return len(self._out)

    def persist_at(self, index: int, records: list[Record]) -> None:
        self._out.insert(index, Persist(tuple(records)))

    def wrote_since(self, index: int) -> bool:
        return any(isinstance(a, Persist) for a in self._out[index:])

    def drop_notes_since(self, index: int) -> None:
        """Forget the journal events queued since ``index`` (what they report was undone)."""
        self._out[index:] = [a for a in self._out[index:] if not isinstance(a, Journal)]

    # --- timers (keyed: scheduling a key again replaces it) -------------------------------
    def schedule(self, key: tuple, deadline: int, fn: Callable[[int], None]) -> None:
        seq = next(self._seq)
        self._timers[key] = (deadline, seq, fn)
        heapq.heappush(self._heap, (deadline, seq, key))

    def cancel(self, key: tuple) -> None:
        self._timers.pop(key, None)

    def has_timer(self, key: tuple) -> bool:
        return key in self._timers

    # --- replay ----------------------------------------------------------------------------
    def replay(self, record: TypedRecord) -> None:
        """Apply one log record (GroupMetadataManager/OffsetMetadataManager.replay).

        Live offset writes pass through here too. A commit for an unknown group creates a
        "simple" group; a group tombstone removes the group only (offsets have tombstones of
        their own, written ahead of it).
        """
        if isinstance(record, OffsetCommit):
            if record.group not in self.groups:
                self.groups[record.group] = ClassicGroup(record.group, current_state_ts=record.commit_ts)
            self.offsets.setdefault(record.group, {})[(record.topic, record.partition)] = \
                CommittedOffset(record.offset, record.leader_epoch, record.metadata,
                                record.commit_ts, record.expire_ts)
        elif isinstance(record, OffsetCommitTombstone):
            group_offsets = self.offsets.get(record.group, {})
            group_offsets.pop((record.topic, record.partition), None)
            if not group_offsets:
                self.offsets.pop(record.group, None)
        elif isinstance(record, GroupMetadata):
            self.groups[record.group] = self._group_from_record(record.group, record.value)
        elif isinstance(record, GroupMetadataTombstone):
            group = self.groups.pop(record.group, None)
            if group is not None:
                group.state = S.DEAD            # anything still holding it sees it gone

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

    def loaded(self, now: int) -> list[Action]:
        """After replay: members come back Stable with fresh session timers; start the sweep."""
        for group in list(self.groups.values()):
            log.info("shard %d: loaded group %s (%s, generation %d, %d members)", self.shard_id,
                     safe(group.group_id), group.state.value, group.generation, len(group.members))
            for member in group.members.values():
                self.schedule_session(group, member, now)
            if len(group.members) > self.config.group_max_size:
                self.prepare_rebalance(group, now, "group is over group.max.size after loading")
        self.schedule_sweep(now)
        return self._take()

    # --- records ---------------------------------------------------------------------------
    def group_record(self, group: ClassicGroup, assignments: dict[str, bytes] | None = None) -> Record:
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
        self.schedule(("session", gid, mid), now + timeout,
                      lambda t: self._session_expired(gid, mid, t))

    def _session_expired(self, group_id: str, member_id: str, now: int) -> None:
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group else None
        if member is None:
            return
        if (member.join or member.sync) and not member.is_new:
            # A parked request satisfies the heartbeat (Kafka's hasSatisfiedHeartbeat); the timer
            # is re-armed when the join or sync is answered.
            return
        self.remove_member_and_update(group, member, now, "session timeout expired")

    def remove_member_and_update(self, group: ClassicGroup, member: Member, now: int,
                                 reason: str) -> None:
        """Drop a member whose session expired (answering its parked requests), then
        rebalance or finish the join."""
        self.drop_member(group, member, ErrorCode.UNKNOWN_MEMBER_ID)
        log.info("group %s: removed member %s (%s)", safe(group.group_id), safe(member.member_id), reason)
        self.note(now, Event.MEMBER_EXPIRED, group, member.member_id, reason=Expiry.SESSION,
                  detail=reason)
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            self.prepare_rebalance(group, now, f"removing member {member.member_id}: {reason}",
                                   cause=Cause.SESSION_EXPIRY)
        elif group.is_in(S.PREPARING_REBALANCE) and group.all_members_joined():
            # Kafka's removeMemberAndUpdateClassicGroup: no initial-delay guard here.
            self.complete_join(group, now)

    def drop_member(self, group: ClassicGroup, member: Member, error: ErrorCode) -> None:
        if member.join is not None:
            self.reply(member.join.token, responses.JOIN_GROUP, member.join.version,
                       responses.join(member.join.version, error))
            member.join = None
        if member.sync is not None:
            self.reply(member.sync.token, responses.SYNC_GROUP, member.sync.version,
                       responses.sync(member.sync.version, error))
            member.sync = None
        self.cancel(("session", group.group_id, member.member_id))
        group.remove(member.member_id)

    # --- the rebalance ---------------------------------------------------------------------
    def transition(self, group: ClassicGroup, target: GroupState, now: int, why: str) -> None:
        before = group.state
        group.transition(target, now)
        log.info("group %s: %s -> %s (generation %d, members %s): %s", safe(group.group_id),
                 before.value, target.value, group.generation, safe_list(group.members), safe(why))

    def prepare_rebalance(self, group: ClassicGroup, now: int, reason: str,
                          cause: Cause = Cause.FORCED) -> None:
        self.note(now, Event.REBALANCE_STARTED, group, cause=cause, reason=reason,
                  state=group.state.value, members=list(group.members))
        if group.rebalance_started_ts is None:
            group.rebalance_started_ts = now
        if group.is_in(S.COMPLETING_REBALANCE):
            for m in group.members.values():     # the assignment being computed is void
                m.assignment = b""
                if m.sync is not None:
                    self.reply(m.sync.token, responses.SYNC_GROUP, m.sync.version,
                               responses.sync(m.sync.version, ErrorCode.REBALANCE_IN_PROGRESS))
                    m.sync = None
                    self.schedule_session(group, m, now)
        self.cancel(("sync", group.group_id))
        group.pending_sync.clear()
        initial = group.is_in(S.EMPTY)
        self.transition(group, S.PREPARING_REBALANCE, now, reason)
        gid = group.group_id
        if initial:
            delay = self.config.group_initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self.schedule(("join", gid), now + delay,
                          lambda t: self._initial_delay_over(gid, delay, remaining, t))
        elif group.all_members_joined():
            self.complete_join(group, now)
        else:
            self.schedule(("join", gid), now + group.rebalance_timeout_ms(),
                          lambda t: self._join_timeout(gid, t))

    def _initial_delay_over(self, group_id: str, delay: int, remaining: int, now: int) -> None:
        group = self.groups.get(group_id)
        if group is None or not group.is_in(S.PREPARING_REBALANCE):
            return
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            new_delay = min(self.config.group_initial_rebalance_delay_ms, remaining)
            new_remaining = max(remaining - delay, 0)
            self.schedule(("join", group_id), now + new_delay,
                          lambda t: self._initial_delay_over(group_id, new_delay, new_remaining, t))
        else:
            self.complete_join(group, now)

    def _join_timeout(self, group_id: str, now: int) -> None:
        group = self.groups.get(group_id)
        if group is not None:
            self.complete_join(group, now)

    def maybe_complete_join(self, group: ClassicGroup, now: int) -> None:
        """Finish the join phase early once everyone rejoined (never during the initial delay)."""
        if (group.is_in(S.PREPARING_REBALANCE) and group.all_members_joined()
                and group.previous_state != S.EMPTY):
            self.complete_join(group, now)

    def maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup, now: int, reason: str,
                                                 cause: Cause = Cause.FORCED):
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY):
            self.prepare_rebalance(group, now, reason, cause)
        elif group.is_in(S.PREPARING_REBALANCE):
            self.maybe_complete_join(group, now)

    def complete_join(self, group: ClassicGroup, now: int) -> None:
        if not group.is_in(S.PREPARING_REBALANCE):
            return
        gid = group.group_id
        self.cancel(("join", gid))
        for member in list(group.members.values()):
            if member.join is None and not member.is_static:
                self.drop_member(group, member, ErrorCode.UNKNOWN_MEMBER_ID)
                log.info("group %s: removed member %s (did not rejoin in time)", safe(gid),
                         safe(member.member_id))
                self.note(now, Event.MEMBER_EXPIRED, group, member.member_id, reason=Expiry.REJOIN)
        if group.members and not group.maybe_elect_joined_leader():
            # Only static members remain and none rejoined: wait another rebalance timeout.
            self.schedule(("join", gid), now + group.rebalance_timeout_ms(),
                          lambda t: self._join_timeout(gid, t))
            return
        group.generation += 1
        group.pending_sync.clear()
        if not group.members:
            group.protocol_name = None
            self.update_subscriptions(group)
            self.transition(group, S.EMPTY, now, "join phase completed with no members")
            self.note_completed(group, now)
            group.rebalance_started_ts = None
            self.persist([self.group_record(group)])
            return
        group.protocol_name = group.select_protocol()
        self.update_subscriptions(group)
        self.transition(group, S.COMPLETING_REBALANCE, now, "join phase completed")
        self.note_completed(group, now)
        for member in group.members.values():
            # Kafka re-arms every member's session here, static ones that did not rejoin too.
            if member.join is not None:
                self.answer_join(group, member)
            member.is_new = False
            self.schedule_session(group, member, now)
        group.pending_sync = set(group.members)
        self.schedule(("sync", gid), now + group.rebalance_timeout_ms(),
                      lambda t: self._pending_sync_expired(gid, t))

    def note_completed(self, group: ClassicGroup, now: int) -> None:
        self.note(now, Event.REBALANCE_COMPLETED, group, leader=group.leader_id,
                  members=list(group.members), protocol_type=group.protocol_type,
                  protocol=group.protocol_name, duration_ms=self.rebalance_ms(group, now))

    @staticmethod
    def rebalance_ms(group: ClassicGroup, now: int) -> int | None:
        """How long the group has been rebalancing (None if the start was not seen)."""
        return None if group.rebalance_started_ts is None else now - group.rebalance_started_ts

    def answer_join(self, group: ClassicGroup, member: Member) -> None:
        """Send a parked JoinGroup its answer for the current generation; the leader gets everyone."""
        parked = member.join
        member.join = None
        self.reply(parked.token, responses.JOIN_GROUP, parked.version,
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

    def _pending_sync_expired(self, group_id: str, now: int) -> None:
        group = self.groups.get(group_id)
        if group is None or not group.is_in(S.COMPLETING_REBALANCE, S.STABLE) or not group.pending_sync:
            return
        missing = sorted(group.pending_sync)
        for member_id in missing:
            member = group.members.get(member_id)
            if member is not None:
                self.drop_member(group, member, ErrorCode.UNKNOWN_MEMBER_ID)
                self.note(now, Event.MEMBER_EXPIRED, group, member_id, reason=Expiry.SYNC)
        self.prepare_rebalance(group, now, f"members {missing} did not send SyncGroup in time",
                               cause=Cause.SYNC_TIMEOUT)

    def sync_received(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            self.cancel(("sync", group.group_id))

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

    # --- offsets sweep -----------------------------------------------------------------------
    def schedule_sweep(self, now: int) -> None:
        self.schedule(("sweep",), now + self.config.offsets_retention_check_interval_ms,
                      self._sweep)

    def _sweep(self, now: int) -> None:
        from .offsets import expire_offsets
        expire_offsets(self, now)
        self.schedule_sweep(now)


def _handlers() -> dict:
    """The API handlers (their modules build on this one, so they load on first use)."""
    global _HANDLERS
    if _HANDLERS is None:
        from .dispatch import HANDLERS
        _HANDLERS = HANDLERS
    return _HANDLERS


_HANDLERS: dict | None = None
