"""Coordinator faults a test injects on purpose (Kafka has no API for these).

Each one does exactly what the coordinator does when the real cause happens, so clients see
what they would see against Kafka: a forced rebalance is a rebalance (for a consumer group, a
group epoch bump), an expired member is a session expiry, a fenced static member is a new
incarnation taking its group.instance.id. Two exist for consumer groups only: a fenced member
is removed as a missed rebalance timeout removes it, and its next heartbeat is answered
FENCED_MEMBER_EPOCH (Kafka would say UNKNOWN_MEMBER_ID to a member it removed; both make the
client give up its partitions and rejoin); held revocations keep members that must revoke
partitions from completing it, so the new owners wait and the rebalance timeout can fire.
Each checks everything before it changes anything, and raises :class:`InterventionError`
(with the reason) instead of half-applying. Each takes the shard (coordinator/shard.py).
"""

from __future__ import annotations

from coordinator.classic.group import ClassicGroup
from coordinator.consumer import records as rec
from coordinator.consumer.group import ConsumerGroup
from coordinator.consumer.member import ConsumerGroupMember, new_member_id
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
        raise InterventionError(f"{group_id!r} is {kind}: this fault applies to consumer groups")
    return group


def _consumer_member(shard, group_id: str, member_id: str) -> tuple[ConsumerGroup, ConsumerGroupMember]:
    group = _consumer_group(shard, group_id)
    member = group.members.get(member_id)
    if member is None:
        raise InterventionError(f"group {group_id!r} has no member {member_id!r}")
    return group, member


def force_rebalance(shard, out: CoordinatorResult, now: int, group_id: str) -> str:
    """Start a rebalance, as a new member or a metadata change would."""
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


def fence_member(shard, out: CoordinatorResult, now: int, group_id: str, member_id: str) -> str:
    """Remove a consumer-group member as a missed rebalance timeout does; its next heartbeat
    is answered FENCED_MEMBER_EPOCH, and it rejoins."""
    group, member = _consumer_member(shard, group_id, member_id)
    shard.consumer.fenced_once[(group_id, member_id)] = member.member_epoch
    shard.consumer.fence(out, now, group, member, Expiry.REVOCATION)
    return (f"member {member_id} of group {group_id} fenced at epoch {member.member_epoch}; "
            "its next heartbeat gets FENCED_MEMBER_EPOCH")


def hold_revocations(shard, out: CoordinatorResult, now: int, group_id: str, hold: bool = True) -> str:
    """Hold (or release) a consumer group's revocations: members that must give up partitions
    stay in UNREVOKED_PARTITIONS whatever they report, so the new owners wait and each
    holder is fenced when its rebalance timeout expires."""
    _consumer_group(shard, group_id)
    held = shard.consumer.held_revocations
    if hold:
        held.add(group_id)
        return f"group {group_id}: revocations held"
    held.discard(group_id)
    return f"group {group_id}: revocations released"
