"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup, with Kafka's checks in Kafka's order.

Each handler validates, then either answers at once or parks the request on the member
(``member.join`` / ``member.sync``) for the rebalance machinery of
:class:`~coordinator.classic.manager.ClassicGroupManager` to answer later.
"""

from __future__ import annotations

from offsets_log.errors import RecordError
from offsets_log.records import group_metadata_record, string_too_long
from protocol.api_keys import ApiKey, api_name
from protocol.errors import ErrorCode
from protocol.logtext import safe

from coordinator import responses as r
from coordinator.actions import RequestContext
from coordinator.classic.group import ClassicGroup, Member, Parked
from coordinator.classic.manager import S, ClassicGroupManager, log
from coordinator.config import NEW_MEMBER_JOIN_TIMEOUT_MS
from coordinator.events import Cause, Event
from coordinator.result import CoordinatorResult

E = ErrorCode

#: What a new member id adds to the client id or group.instance.id it is made from: "-" + a UUID.
MEMBER_ID_SUFFIX = 37


def unstorable(ctx: RequestContext, what: str,
               error: ErrorCode = E.UNKNOWN_SERVER_ERROR) -> ErrorCode:
    """Log why a request cannot be carried out (a record it needs cannot be written) and
    return the error it gets: what Kafka answers when a write operation throws."""
    log.warning("%s v%d from %s: %s; answered %s", api_name(ctx.api_key), ctx.version,
                ctx.client_host, what, error.name)
    return error


def validate_member(group: ClassicGroup, member_id: str, instance_id: str | None) -> ErrorCode:
    """Kafka's static-membership fencing, then plain membership (ClassicGroup.validateMember)."""
    if instance_id is not None:
        current = group.static_members.get(instance_id)
        if current is None:
            return E.UNKNOWN_MEMBER_ID
        if current != member_id:
            return E.FENCED_INSTANCE_ID
    if member_id not in group.members:
        return E.UNKNOWN_MEMBER_ID
    return E.NONE


# --- JoinGroup --------------------------------------------------------------------------------

def join_group(groups: ClassicGroupManager, out: CoordinatorResult, now: int, ctx: RequestContext,
               req) -> None:
    v = ctx.version

    def fail(error: ErrorCode, member_id: str = req.member_id) -> None:
        out.reply(ctx.token, ApiKey.JOIN_GROUP, v, join_error(v, error, member_id))

    cfg = groups.config
    if req.group_id == "":
        return fail(E.INVALID_GROUP_ID)
    if not cfg.group_min_session_timeout_ms <= req.session_timeout_ms <= cfg.group_max_session_timeout_ms:
        return fail(E.INVALID_SESSION_TIMEOUT)
    if not groups.owns(req.group_id):
        return fail(E.NOT_COORDINATOR)
    problem = _unstorable_join(ctx, req)
    if problem is not None:
        return fail(unstorable(ctx, problem), member_id="")
    group = groups.groups.get(req.group_id)
    start = out.mark()
    created = group is None
    if created:
        if req.member_id != "":
            return fail(E.UNKNOWN_MEMBER_ID)
        group = groups.groups[req.group_id] = ClassicGroup(req.group_id, current_state_ts=now)
    if not _accepts_joining_member(group, req.member_id, cfg.group_max_size):
        _evict(groups, out, now, group, req.member_id)
        fail(E.GROUP_MAX_SIZE_REACHED, member_id="")
    elif group.is_in(S.DEAD):
        fail(E.COORDINATOR_NOT_AVAILABLE)
    elif not group.supports(req.protocol_type, [p.name for p in req.protocols]):
        fail(E.INCONSISTENT_GROUP_PROTOCOL)
    elif req.member_id == "":
        _join_unknown_member(groups, out, now, ctx, req, group)
    elif req.member_id in group.pending_members and req.group_instance_id is not None:
        fail(E.UNKNOWN_SERVER_ERROR, member_id="")      # Kafka's coordinator throws: a pending member is never static
    elif req.member_id in group.pending_members:
        group.pending_members.discard(req.member_id)
        groups.timers.cancel(("pending", group.group_id, req.member_id))
        _add_member_and_rebalance(groups, out, now, ctx, req, group, req.member_id)
    else:
        _join_existing_member(groups, out, now, ctx, req, group)
    if created and not out.wrote_since(start):
        out.persist_at(start, [_empty_group_record(group)])


def _unstorable_join(ctx: RequestContext, req) -> str | None:
    """Why the records this join leads to could not be written, if they could not: the group
    id, or the member id a new member would get, is longer than a STRING holds. Kafka's
    serializer throws there (its write fails, or its answer cannot be sent); nothing changes."""
    if string_too_long(req.group_id):
        return f"a group id of {len(req.group_id)} characters is too long to store"
    if req.member_id == "":
        base, name = ((ctx.client_id, "client id") if req.group_instance_id is None
                      else (req.group_instance_id, "group.instance.id"))
        if string_too_long(base, MEMBER_ID_SUFFIX):
            return f"a member id made from a {name} of {len(base)} characters is too long to store"
    return None


def _empty_group_record(group: ClassicGroup):
    """What Kafka writes to commit a group a JoinGroup just created (newEmptyGroupMetadataRecord):
    always generation 0, no protocol, no members, whatever the join did in memory."""
    return group_metadata_record(group.group_id, protocol_type="", generation=0, protocol=None,
                                 leader=None, current_state_ts=group.current_state_ts, members=[])


def _evict(groups: ClassicGroupManager, out: CoordinatorResult, now: int, group: ClassicGroup,
           member_id: str) -> None:
    """A join refused for group.max.size also drops that member (or pending id) from the group,
    as Kafka does; the rebalance in progress then completes without it."""
    group.pending_members.discard(member_id)
    groups.timers.cancel(("pending", group.group_id, member_id))
    if member_id in group.members:
        groups.drop_member(out, group, group.members[member_id], E.UNKNOWN_MEMBER_ID)
        out.note(now, Event.MEMBER_REMOVED, group, member_id, reason="group_max_size")


def join_error(version: int, error: ErrorCode, member_id: str):
    """A JoinGroup error as Kafka builds most of them: ProtocolName keeps its schema default ""
    (only member-validation failures and fencing send null at v7+)."""
    return r.join(version, error, member_id=member_id)


def _rebalance_timeout(ctx: RequestContext, req) -> int:
    return req.rebalance_timeout_ms if ctx.version >= 1 else req.session_timeout_ms


def _accepts_joining_member(group: ClassicGroup, member_id: str, max_size: int) -> bool:
    member = group.members.get(member_id)
    if group.is_in(S.EMPTY, S.DEAD):
        return True
    if group.is_in(S.PREPARING_REBALANCE):
        return (member is not None and member.join is not None) or len(group.members) < max_size \
            or len(group.awaiting_join()) < max_size
    return member is not None or len(group.members) < max_size


def _join_unknown_member(groups: ClassicGroupManager, out: CoordinatorResult, now: int,
                         ctx: RequestContext, req, group: ClassicGroup):
    if req.group_instance_id is not None:
        return _join_new_static_member(groups, out, now, ctx, req, group)
    member_id = f"{ctx.client_id}-{groups.new_uuid()}"
    if ctx.version >= 4:
        # KIP-394: hand out an id and make the member come back with it.
        group.pending_members.add(member_id)
        gid = group.group_id
        groups.timers.schedule(("pending", gid, member_id), now + req.session_timeout_ms,
                       lambda out, t: _pending_member_expired(groups, out, gid, member_id, t))
        out.reply(ctx.token, ApiKey.JOIN_GROUP, ctx.version,
                  join_error(ctx.version, E.MEMBER_ID_REQUIRED, member_id))
        return
    _add_member_and_rebalance(groups, out, now, ctx, req, group, member_id)


def _pending_member_expired(groups: ClassicGroupManager, out: CoordinatorResult, group_id: str,
                            member_id: str, now: int) -> None:
    """Kafka's removePendingMemberAndUpdateClassicGroup: no initial-delay guard here."""
    group = groups.groups.get(group_id)
    if group is not None and member_id in group.pending_members:
        group.pending_members.discard(member_id)
        if group.is_in(S.PREPARING_REBALANCE) and group.all_members_joined():
            groups.complete_join(out, group, now)


def _new_member(ctx: RequestContext, req, member_id: str) -> Member:
    return Member(member_id, req.group_instance_id, ctx.client_id, ctx.client_host,
                  _rebalance_timeout(ctx, req), req.session_timeout_ms, req.protocol_type,
                  [(p.name, bytes(p.metadata)) for p in req.protocols],
                  join=Parked(ctx.token, ctx.version), is_new=True)


def _add_member_and_rebalance(groups: ClassicGroupManager, out: CoordinatorResult, now: int,
                              ctx: RequestContext, req, group: ClassicGroup,
                              member_id: str) -> None:
    member = _new_member(ctx, req, member_id)
    if group.is_in(S.PREPARING_REBALANCE) and group.previous_state == S.EMPTY:
        group.new_member_added = True          # extends the initial delay (section 2.4)
    group.add(member)
    out.note(now, Event.MEMBER_JOINED, group, member_id, instance_id=req.group_instance_id,
             client_id=ctx.client_id, client_host=ctx.client_host,
             session_timeout_ms=member.session_timeout_ms,
             rebalance_timeout_ms=member.rebalance_timeout_ms, protocols=member.protocol_names())
    # A new member cannot heartbeat while its JoinGroup is parked: bound it by the fixed timeout.
    groups.schedule_session(group, member, now, NEW_MEMBER_JOIN_TIMEOUT_MS)
    groups.maybe_prepare_rebalance_or_complete_join(out, 
        group, now, f"adding member {member_id} (instance {req.group_instance_id})", Cause.NEW_MEMBER)


def _update_member(group: ClassicGroup, member: Member, ctx: RequestContext, req, parked: bool) -> None:
    """Kafka's ClassicGroup.updateMember: client id and host stay those of the first join."""
    group.set_protocols(member, [(p.name, bytes(p.metadata)) for p in req.protocols])
    member.rebalance_timeout_ms = _rebalance_timeout(ctx, req)
    member.session_timeout_ms = req.session_timeout_ms
    if parked:
        _park_join(member, ctx)


def _park_join(member: Member, ctx: RequestContext) -> None:
    member.join = Parked(ctx.token, ctx.version)


def _supersede(groups: ClassicGroupManager, out: CoordinatorResult, member: Member) -> None:
    """A member's second JoinGroup replaces its first; the first is told to rejoin."""
    if member.join is not None:
        out.reply(member.join.token, ApiKey.JOIN_GROUP, member.join.version,
                  join_error(member.join.version, E.REBALANCE_IN_PROGRESS, member.member_id))
        member.join = None


def _same_protocols(member: Member, req) -> bool:
    return member.protocols == [(p.name, bytes(p.metadata)) for p in req.protocols]


def _join_existing_member(groups: ClassicGroupManager, out: CoordinatorResult, now: int,
                          ctx: RequestContext, req, group: ClassicGroup):
    error = validate_member(group, req.member_id, req.group_instance_id)
    if error != E.NONE:
        out.reply(ctx.token, ApiKey.JOIN_GROUP, ctx.version,
                  r.join(ctx.version, error, member_id=req.member_id, protocol_name=None))
        return
    member = group.members[req.member_id]
    reason = f"member {member.member_id} rejoined"
    if group.is_in(S.PREPARING_REBALANCE):
        _supersede(groups, out, member)
        _update_member(group, member, ctx, req, parked=True)
        groups.maybe_prepare_rebalance_or_complete_join(out, group, now, reason)
    elif group.is_in(S.COMPLETING_REBALANCE):
        if _same_protocols(member, req):
            # It may have missed the JoinGroup answer: give it the current generation again.
            out.reply(ctx.token, ApiKey.JOIN_GROUP, ctx.version,
                      groups.join_response(group, member, ctx.version))
        else:
            _update_member(group, member, ctx, req, parked=True)
            groups.prepare_rebalance(out, group, now, f"{reason} with new protocols",
                                     Cause.METADATA_CHANGE)
    elif group.is_in(S.STABLE):
        if member.member_id == group.leader_id or not _same_protocols(member, req):
            cause = Cause.LEADER_REJOIN if _same_protocols(member, req) else Cause.METADATA_CHANGE
            _update_member(group, member, ctx, req, parked=True)
            groups.prepare_rebalance(out, group, now, f"{reason} (leader or changed protocols)", cause)
        else:
            out.reply(ctx.token, ApiKey.JOIN_GROUP, ctx.version,
                      groups.join_response(group, member, ctx.version))
    else:
        out.reply(ctx.token, ApiKey.JOIN_GROUP, ctx.version,
                  join_error(ctx.version, E.UNKNOWN_MEMBER_ID, req.member_id))


def _join_new_static_member(groups: ClassicGroupManager, out: CoordinatorResult, now: int,
                            ctx: RequestContext, req, group: ClassicGroup):
    instance = req.group_instance_id
    new_id = f"{instance}-{groups.new_uuid()}"
    old_id = group.static_member_id(instance)
    if old_id is None:
        return _add_member_and_rebalance(groups, out, now, ctx, req, group, new_id)
    was_leader = group.leader_id == old_id
    start = out.mark()
    member = fence_static_member(groups, out, now, group, old_id, new_id)
    if group.is_in(S.STABLE):
        before = (member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms)
        _update_member(group, member, ctx, req, parked=False)
        if group.select_protocol() != group.protocol_name:
            _park_join(member, ctx)
            groups.prepare_rebalance(out, group, now, f"static member {instance} rejoined with other protocols",
                                     Cause.METADATA_CHANGE)
            return
        # Same protocol: no rebalance. Persist the new id, then answer for the current generation.
        try:
            out.persist([groups.group_record(group)])
        except RecordError as e:
            error = unstorable(ctx, f"group {safe(group.group_id)}: static member {safe(instance)} "
                                    f"cannot be stored ({e})")
            return _static_rejoin_not_stored(groups, out, now, ctx, group, member, old_id, before,
                                             start, error)
        if ctx.version >= 9 and was_leader:
            response = groups.join_response(group, member, ctx.version, skip_assignment=True)
        else:
            response = groups.join_response(group, member, ctx.version, with_members=False,
                                            leader=old_id if was_leader else group.leader_id)
        out.reply(ctx.token, ApiKey.JOIN_GROUP, ctx.version, response)
    elif group.is_in(S.COMPLETING_REBALANCE):
        _update_member(group, member, ctx, req, parked=True)
        groups.prepare_rebalance(out, group, now,
                                 f"static member {instance} replaced during CompletingRebalance")
    elif group.is_in(S.PREPARING_REBALANCE):
        _update_member(group, member, ctx, req, parked=True)
        groups.maybe_complete_join(out, group, now)
    else:
        out.reply(ctx.token, ApiKey.JOIN_GROUP, ctx.version,
                  join_error(ctx.version, E.UNKNOWN_MEMBER_ID, new_id))


def _static_rejoin_not_stored(groups: ClassicGroupManager, out: CoordinatorResult, now: int,
                              ctx: RequestContext, group: ClassicGroup,
                              member: Member, old_id: str, before: tuple, start: int,
                              error: ErrorCode) -> None:
    """Kafka reverts a static member's replacement whose record cannot be written: the old
    member id is valid again (with its protocols and timeouts), and the new incarnation is
    told so with no member id."""
    protocols, member.rebalance_timeout_ms, member.session_timeout_ms = before
    group.set_protocols(member, protocols)
    groups.timers.cancel(("session", group.group_id, member.member_id))
    group.replace_static(member.member_id, old_id)
    groups.schedule_session(group, member, now)
    out.drop_notes_since(start)
    out.reply(ctx.token, ApiKey.JOIN_GROUP, ctx.version,
              r.join(ctx.version, error, generation=group.generation, protocol_type=group.protocol_type,
                       protocol_name=group.protocol_name, leader=group.leader_id))


def fence_static_member(groups: ClassicGroupManager, out: CoordinatorResult, now: int,
                        group: ClassicGroup, old_id: str, new_id: str) -> Member:
    """KIP-345 replacement: a new incarnation takes the old one's place (assignment,
    leadership) under ``new_id``; the old one is fenced (FENCED_INSTANCE_ID from now on)."""
    old = group.members[old_id]
    for parked, api in ((old.join, ApiKey.JOIN_GROUP), (old.sync, ApiKey.SYNC_GROUP)):
        if parked is not None:
            answer = (r.join(parked.version, E.FENCED_INSTANCE_ID, member_id=old_id, protocol_name=None)
                      if api == ApiKey.JOIN_GROUP
                      else r.sync(parked.version, E.FENCED_INSTANCE_ID))
            out.reply(parked.token, api, parked.version, answer)
    old.join = old.sync = None
    groups.timers.cancel(("session", group.group_id, old_id))
    member = group.replace_static(old_id, new_id)
    log.info("group %s: static member %s (instance %s) replaced by %s; the old member id is fenced",
             safe(group.group_id), safe(old_id), safe(member.group_instance_id), safe(new_id))
    out.note(now, Event.MEMBER_FENCED, group, old_id, instance_id=member.group_instance_id,
             replaced_by=new_id)
    out.note(now, Event.MEMBER_JOINED, group, new_id, instance_id=member.group_instance_id,
             replaces=old_id)
    groups.schedule_session(group, member, now)
    return member


def _check_member(groups: ClassicGroupManager, req) -> tuple[ClassicGroup | None, ErrorCode]:
    """SyncGroup's and Heartbeat's shared checks, in Kafka's order: group, member, generation."""
    if req.group_id == "":
        return None, E.INVALID_GROUP_ID
    if not groups.owns(req.group_id):
        return None, E.NOT_COORDINATOR
    group = groups.groups.get(req.group_id)
    if group is None:
        return None, E.UNKNOWN_MEMBER_ID
    if group.is_in(S.DEAD):
        return group, E.COORDINATOR_NOT_AVAILABLE
    error = validate_member(group, req.member_id, req.group_instance_id)
    if error == E.NONE and req.generation_id != group.generation:
        error = E.ILLEGAL_GENERATION
    return group, error


# --- SyncGroup --------------------------------------------------------------------------------

def sync_group(groups: ClassicGroupManager, out: CoordinatorResult, now: int, ctx: RequestContext,
               req) -> None:
    v = ctx.version

    def fail(error: ErrorCode) -> None:
        out.reply(ctx.token, ApiKey.SYNC_GROUP, v, r.sync(v, error))

    if v >= 5 and (req.protocol_type is None or req.protocol_name is None):
        return fail(E.INCONSISTENT_GROUP_PROTOCOL)    # KafkaApis checks this before anything else
    group, error = _check_member(groups, req)
    if error != E.NONE:
        return fail(error)
    if _inconsistent(req.protocol_type, group.protocol_type or None) or \
            _inconsistent(req.protocol_name, group.protocol_name):
        return fail(E.INCONSISTENT_GROUP_PROTOCOL)
    member = group.members[req.member_id]
    if group.is_in(S.PREPARING_REBALANCE):
        return fail(E.REBALANCE_IN_PROGRESS)
    groups.sync_received(group, member.member_id)
    if group.is_in(S.COMPLETING_REBALANCE):
        if member.sync is not None:
            out.reply(member.sync.token, ApiKey.SYNC_GROUP, member.sync.version,
                      r.sync(member.sync.version, E.REBALANCE_IN_PROGRESS))
        member.sync = Parked(ctx.token, v)
        if member.member_id == group.leader_id:
            _propagate_assignment(groups, out, now, ctx, group, req)
    elif group.is_in(S.STABLE):
        out.reply(ctx.token, ApiKey.SYNC_GROUP, v, _sync_answer(group, member, v))
    else:
        fail(E.UNKNOWN_MEMBER_ID)


def _inconsistent(requested: str | None, current: str | None) -> bool:
    """Only two known values can disagree (Kafka's isProtocolInconsistent)."""
    return requested is not None and current is not None and requested != current


def _sync_answer(group: ClassicGroup, member: Member, version: int):
    return r.sync(version, E.NONE, member.assignment, protocol_type=group.protocol_type,
                  protocol_name=group.protocol_name)


def _assignment_not_stored(groups: ClassicGroupManager, out: CoordinatorResult, now: int,
                           group: ClassicGroup, error: ErrorCode) -> None:
    """Kafka's answer when the leader's assignment cannot be written: every waiting SyncGroup
    gets the error, assignments are cleared, and the group rebalances again."""
    for m in group.members.values():
        m.assignment = b""
        if m.sync is not None:
            parked, m.sync = m.sync, None
            out.reply(parked.token, ApiKey.SYNC_GROUP, parked.version, r.sync(parked.version, error))
            groups.schedule_session(group, m, now)
    groups.maybe_prepare_rebalance_or_complete_join(out, 
        group, now, f"error {error.name} when storing the group assignment during SyncGroup")


def _propagate_assignment(groups: ClassicGroupManager, out: CoordinatorResult, now: int,
                          ctx: RequestContext, group: ClassicGroup, req) -> None:
    """The leader's assignment: persist it, move to Stable, answer every parked SyncGroup."""
    assignments = {a.member_id: bytes(a.assignment) for a in req.assignments}
    try:
        out.persist([groups.group_record(group, assignments)])
    except RecordError as e:
        error = unstorable(ctx, f"group {safe(group.group_id)}: the assignment cannot be stored ({e})")
        return _assignment_not_stored(groups, out, now, group, error)
    for m in group.members.values():
        m.assignment = assignments.get(m.member_id, b"")
    groups.transition(group, S.STABLE, now, "leader's assignment persisted")
    out.note(now, Event.SYNC_COMPLETED, group, group.leader_id, members=list(group.members),
             protocol=group.protocol_name, duration_ms=groups.rebalance_ms(group, now))
    group.rebalance_started_ts = None
    for m in group.members.values():
        if m.sync is not None:
            parked, m.sync = m.sync, None
            out.reply(parked.token, ApiKey.SYNC_GROUP, parked.version,
                      _sync_answer(group, m, parked.version))
            groups.schedule_session(group, m, now)


# --- Heartbeat --------------------------------------------------------------------------------

def heartbeat(groups: ClassicGroupManager, out: CoordinatorResult, now: int, ctx: RequestContext,
              req) -> None:
    group, error = _check_member(groups, req)
    if error == E.NONE:
        if group.is_in(S.EMPTY):
            error = E.UNKNOWN_MEMBER_ID
        else:
            groups.schedule_session(group, group.members[req.member_id], now)
            if group.is_in(S.PREPARING_REBALANCE):
                error = E.REBALANCE_IN_PROGRESS
    out.reply(ctx.token, ApiKey.HEARTBEAT, ctx.version, r.heartbeat(error))


# --- LeaveGroup -------------------------------------------------------------------------------

def leave_group(groups: ClassicGroupManager, out: CoordinatorResult, now: int, ctx: RequestContext,
                req) -> None:
    v = ctx.version
    leaving = [(req.member_id, None)] if v < 3 else [(m.member_id, m.group_instance_id) for m in req.members]

    def answer(results, error=E.NONE) -> None:
        out.reply(ctx.token, ApiKey.LEAVE_GROUP, v, r.leave(v, results, error))

    if req.group_id == "":
        return answer([], E.INVALID_GROUP_ID)
    if not groups.owns(req.group_id):
        return answer([], E.NOT_COORDINATOR)
    group = groups.groups.get(req.group_id)
    if group is None:
        return answer([(m, i, E.UNKNOWN_MEMBER_ID) for m, i in leaving])
    if group.is_in(S.DEAD):
        return answer([], E.COORDINATOR_NOT_AVAILABLE)
    results = []
    left = False
    for member_id, instance_id in leaving:
        if member_id == "" and instance_id is not None:
            target = group.static_member_id(instance_id)      # admin removal by instance id
            error = E.NONE if target is not None else E.UNKNOWN_MEMBER_ID
        elif member_id in group.pending_members:
            group.pending_members.discard(member_id)
            groups.timers.cancel(("pending", group.group_id, member_id))
            results.append((member_id, instance_id, E.NONE))
            left = True
            continue
        else:
            target, error = member_id, validate_member(group, member_id, instance_id)
        if error == E.NONE:
            groups.drop_member(out, group, group.members[target], E.UNKNOWN_MEMBER_ID)
            out.note(now, Event.MEMBER_LEFT, group, target, instance_id=instance_id)
            left = True
        results.append((member_id, instance_id, error))
    if left:
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            groups.prepare_rebalance(out, group, now, "members left the group", Cause.MEMBER_LEFT)
        elif group.is_in(S.PREPARING_REBALANCE):
            groups.maybe_complete_join(out, group, now)
    answer(results)
