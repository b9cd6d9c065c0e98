"""Coordinator faults a test injects on purpose (Kafka has no API for these).

Each one does exactly what the coordinator does when the real cause happens, so clients see
what they would see against Kafka: a forced rebalance is a rebalance (for a consumer group, a
group epoch bump), an expired member is a session expiry, a fenced static member is a new
incarnation taking its group.instance.id. Two exist for consumer and streams groups only: a
fenced member is removed as a missed rebalance timeout removes it; held revocations keep members
that must revoke partitions (tasks) from completing it, so the new owners wait and the rebalance
timeout can fire.
Each checks everything before it changes anything, and raises :class:`InterventionError`
(with the reason) instead of half-applying. Each takes the shard (coordinator/shard.py).

What lasts beyond the operation is the runtime's to keep, never a condition in the protocol
logic: it answers a fenced member's next heartbeat FENCED_MEMBER_EPOCH (Kafka would say
UNKNOWN_MEMBER_ID to a member it removed; both make the client give up its partitions and
rejoin), and it passes a held group's heartbeats through :func:`as_unrevoked`.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from protocol.api_keys import ApiKey
from protocol.messages import REQUESTS

from coordinator.classic.group import ClassicGroup
from coordinator.consumer import records as rec
from coordinator.share import records as share_records
from coordinator.streams import records as streams_records
from coordinator.streams.group import MemberState as StreamsMemberState
from coordinator.consumer.group import ConsumerGroup
from coordinator.consumer.member import ConsumerGroupMember, MemberState, new_member_id
from coordinator.events import Cause, Event, Expiry
from coordinator.classic.manager import S, ClassicGroupManager
from coordinator.classic.membership import fence_static_member
from coordinator.result import CoordinatorResult


class InterventionError(Exception):
    """The fault cannot be applied to the group as it is (the message says why)."""


def _group(groups: ClassicGroupManager, group_id: str) -> ClassicGroup:
    group = groups.groups.get(group_id)
    if group is None or group.is_in(S.DEAD):
        raise InterventionError(f"group {group_id!r} does not exist")
    return group


def _consumer_group(shard, group_id: str) -> ConsumerGroup:
    group = shard.consumer.groups.get(group_id)
    if group is None:
        kind = "a classic group" if group_id in shard.classic.groups else "not a group"
        raise InterventionError(f"{group_id!r} is {kind}: this fault applies to consumer and streams groups")
    return group


def _consumer_member(shard, group_id: str, member_id: str) -> tuple[ConsumerGroup, ConsumerGroupMember]:
    group = _consumer_group(shard, group_id)
    member = group.members.get(member_id)
    if member is None:
        raise InterventionError(f"group {group_id!r} has no member {member_id!r}")
    return group, member


def _member_of(groups: dict, group_id: str, member_id: str):
    group = groups[group_id]
    member = group.members.get(member_id)
    if member is None:
        raise InterventionError(f"group {group_id!r} has no member {member_id!r}")
    return group, member


def force_rebalance(shard, out: CoordinatorResult, now: int, group_id: str) -> str:
    """Start a rebalance, as a new member or a metadata change would."""
    streams = shard.streams.groups.get(group_id)
    if streams is not None:
        if streams.is_empty():
            raise InterventionError(f"group {group_id!r} is Empty: no members to rebalance")
        epoch = streams.group_epoch + 1
        out.note(now, Event.GROUP_EPOCH_BUMPED, streams, None, epoch=epoch, cause=Cause.FORCED)
        shard.streams.apply(out, [streams_records.group_epoch(
            streams, epoch, streams.metadata_hash, streams.validated_topology_epoch, streams.last_assignment_configs)])
        return f"streams group {group_id}: group epoch bumped to {epoch}; members reconcile on their next heartbeat"
    share = shard.share.groups.get(group_id)
    if share is not None:
        if share.is_empty():
            raise InterventionError(f"group {group_id!r} is Empty: no members to rebalance")
        epoch = share.group_epoch + 1
        out.note(now, Event.GROUP_EPOCH_BUMPED, share, None, epoch=epoch, cause=Cause.FORCED)
        shard.share.apply(out, [share_records.group_epoch(group_id, epoch, share.metadata_hash)])
        return f"share group {group_id}: group epoch bumped to {epoch}; members get a new assignment"
    consumer = shard.consumer.groups.get(group_id)
    if consumer is not None:
        if consumer.is_empty():
            raise InterventionError(f"group {group_id!r} is Empty: no members to rebalance")
        epoch = consumer.group_epoch + 1
        out.note(now, Event.GROUP_EPOCH_BUMPED, consumer, None, epoch=epoch, cause=Cause.FORCED)
        shard.consumer.apply(out, [rec.group_epoch(group_id, epoch)])
        return f"group {group_id}: group epoch bumped to {epoch}; members reconcile on their next heartbeat"
    groups = shard.classic
    group = _group(groups, group_id)
    if group.is_in(S.EMPTY):
        raise InterventionError(f"group {group_id!r} is Empty: no members to rebalance")
    if group.is_in(S.PREPARING_REBALANCE):
        return f"group {group_id} is already rebalancing (generation {group.generation})"
    groups.prepare_rebalance(out, group, now, "rebalance forced by fault injection")
    return f"group {group_id} is rebalancing (generation {group.generation} ends)"


def expire_member(shard, out: CoordinatorResult, now: int, group_id: str, member_id: str) -> str:
    """End a member's session now, exactly as a missed session timeout does."""
    for kind, manager in (("share", shard.share), ("streams", shard.streams)):
        if group_id in manager.groups:
            group, member = _member_of(manager.groups, group_id, member_id)
            manager.fence(out, now, group, member, Expiry.SESSION)
            return f"member {member_id} of {kind} group {group_id} expired"
    if group_id in shard.consumer.groups:
        group, member = _consumer_member(shard, group_id, member_id)
        shard.consumer.fence(out, now, group, member, Expiry.SESSION)
        return f"member {member_id} of group {group_id} expired"
    groups = shard.classic
    group = _group(groups, group_id)
    member = group.members.get(member_id)
    if member is None:
        raise InterventionError(f"group {group_id!r} has no member {member_id!r}")
    groups.remove_member_and_update(out, group, member, now, "session expired (forced by fault injection)")
    return f"member {member_id} of group {group_id} expired"


def fence_instance(shard, out: CoordinatorResult, now: int, group_id: str, instance_id: str) -> str:
    """Fence a static member: a new incarnation (which never shows up, so its session expires
    later) takes its group.instance.id; the old one gets FENCED_INSTANCE_ID from now on."""
    if group_id in shard.consumer.groups:
        return _fence_consumer_instance(shard, out, now, group_id, instance_id)
    groups = shard.classic
    group = _group(groups, group_id)
    old_id = group.static_member_id(instance_id)
    if old_id is None:
        raise InterventionError(f"group {group_id!r} has no static member {instance_id!r}")
    new_id = f"{instance_id}-{groups.new_uuid()}"
    fence_static_member(groups, out, now, group, old_id, new_id)
    if group.is_in(S.STABLE, S.EMPTY):
        out.persist([groups.group_record(group)])
    elif group.is_in(S.COMPLETING_REBALANCE):
        groups.prepare_rebalance(out, group, now, f"static member {instance_id} fenced by fault injection")
    return f"static member {instance_id} of group {group_id}: {old_id} fenced, now {new_id}"


def _fence_consumer_instance(shard, out: CoordinatorResult, now: int, group_id: str,
                             instance_id: str) -> str:
    group = _consumer_group(shard, group_id)
    old = group.static_member(instance_id)
    if old is None:
        raise InterventionError(f"group {group_id!r} has no static member {instance_id!r}")
    new = old.replace(member_id=new_member_id())
    records = rec.member_tombstones(group_id, old.member_id)
    records += [rec.member_subscription(group_id, new),
                rec.target_member(group_id, new.member_id, group.target.get(old.member_id, {})),
                rec.current_assignment(group_id, new)]
    shard.consumer.cancel_timers(group_id, old.member_id)
    shard.consumer.apply(out, records)
    shard.consumer.schedule_session(group_id, new.member_id, now)
    out.note(now, Event.MEMBER_FENCED, group, old.member_id, instance_id=instance_id,
             replaced_by=new.member_id)
    return f"static member {instance_id} of group {group_id}: {old.member_id} fenced, now {new.member_id}"


class FencedMember(NamedTuple):
    outcome: str
    epoch: int          # the member epoch it had


def fence_member(shard, out: CoordinatorResult, now: int, group_id: str, member_id: str) -> FencedMember:
    """Remove a consumer- or streams-group member as a missed rebalance timeout does."""
    if group_id in shard.streams.groups:
        group, member = _member_of(shard.streams.groups, group_id, member_id)
        shard.streams.fence(out, now, group, member, Expiry.REVOCATION)
    else:
        group, member = _consumer_member(shard, group_id, member_id)
        shard.consumer.fence(out, now, group, member, Expiry.REVOCATION)
    return FencedMember(f"member {member_id} of group {group_id} fenced at epoch {member.member_epoch}; "
                        "its next heartbeat gets FENCED_MEMBER_EPOCH", member.member_epoch)


def fenced_member_error(epoch: int, received: int, kind: str = "consumer") -> str:
    """What a fenced member's next heartbeat is told: Kafka's message for an epoch it has
    moved past (the member's ``epoch`` was bumped when it was fenced)."""
    return (f"The {kind} group member has a smaller member epoch ({received}) than the one known "
            f"by the group coordinator ({epoch + 1}). The member must abandon all its partitions "
            "and rejoin.")


def hold_revocations(shard, out: CoordinatorResult, now: int, group_id: str, hold: bool = True) -> str:
    """Check that a group's revocations can be held (or released): it must be a consumer or a
    streams group. While they are held the runtime passes its heartbeats through
    :func:`as_unrevoked`, so members that must give up partitions (tasks) stay in
    UNREVOKED_PARTITIONS (UNREVOKED_TASKS), the new owners wait and each holder is fenced when
    its rebalance timeout expires."""
    if group_id not in shard.streams.groups:
        _consumer_group(shard, group_id)
    return f"group {group_id}: revocations {'held' if hold else 'released'}"


_OwnedPartitions = REQUESTS[ApiKey.CONSUMER_GROUP_HEARTBEAT].cls.TopicPartitions


def as_unrevoked(shard, req):
    """The ConsumerGroupHeartbeat ``req`` as its member would send it had it not revoked
    anything yet: a member that must revoke reports every partition it holds (a slow client).
    Any other heartbeat is returned as it is; a streams member likewise reports the tasks it
    must revoke."""
    if isinstance(req, _StreamsHeartbeat):
        return _as_unrevoked_tasks(shard, req)
    group = shard.consumer.groups.get(req.group_id)
    member = group.members.get(req.member_id) if group is not None else None
    if member is None or member.state != MemberState.UNREVOKED_PARTITIONS or req.topic_partitions is None:
        return req
    held = {}
    for topic_id, partition in member.owned_partitions():
        held.setdefault(topic_id, []).append(partition)
    owned = tuple(_OwnedPartitions(topic_id=t, partitions=tuple(sorted(ps))) for t, ps in held.items())
    return dataclasses.replace(req, topic_partitions=owned)


_StreamsHeartbeat = REQUESTS[ApiKey.STREAMS_GROUP_HEARTBEAT].cls


def _as_unrevoked_tasks(shard, req):
    group = shard.streams.groups.get(req.group_id)
    member = group.members.get(req.member_id) if group is not None else None
    if member is None or member.state != StreamsMemberState.UNREVOKED_TASKS or req.active_tasks is None:
        return req
    held = member.assigned.merged(member.pending_revocation)
    ids = _StreamsHeartbeat.TaskIds
    return dataclasses.replace(req, **{f"{kind}_tasks": tuple(
        ids(subtopology_id=s, partitions=tuple(sorted(ps))) for s, ps in sorted(getattr(held, kind).items()))
        for kind in ("active", "standby", "warmup")})
