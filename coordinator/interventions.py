"""Coordinator faults a test injects on purpose (Kafka has no API for these).

Each one does exactly what the coordinator does when the real cause happens, so clients see
what they would see against Kafka: a forced rebalance is a rebalance, an expired member is a
session expiry, a fenced static member is a new incarnation taking its group.instance.id.
Each checks everything before it changes anything, and raises :class:`InterventionError`
(with the reason) instead of half-applying.
"""

from __future__ import annotations

from coordinator.classic.group import ClassicGroup
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


def force_rebalance(groups: ClassicGroupManager, out: CoordinatorResult, now: int,
                    group_id: str) -> str:
    """Start a rebalance, as a new member or a metadata change would."""
    group = _group(groups, group_id)
    if group.is_in(S.EMPTY):
        raise InterventionError(f"group {group_id!r} is Empty: no members to rebalance")
    if group.is_in(S.PREPARING_REBALANCE):
        return f"group {group_id} is already rebalancing (generation {group.generation})"
    groups.prepare_rebalance(out, group, now, "rebalance forced by fault injection")
    return f"group {group_id} is rebalancing (generation {group.generation} ends)"


def expire_member(groups: ClassicGroupManager, out: CoordinatorResult, now: int,
                  group_id: str, member_id: str) -> str:
    """End a member's session now, exactly as a missed session timeout does."""
    group = _group(groups, group_id)
    member = group.members.get(member_id)
    if member is None:
        raise InterventionError(f"group {group_id!r} has no member {member_id!r}")
    groups.remove_member_and_update(out, group, member, now, "session expired (forced by fault injection)")
    return f"member {member_id} of group {group_id} expired"


def fence_instance(groups: ClassicGroupManager, out: CoordinatorResult, now: int,
                   group_id: str, instance_id: str) -> str:
    """Fence a static member: a new incarnation (which never shows up, so its session expires
    later) takes its group.instance.id; the old one gets FENCED_INSTANCE_ID from now on."""
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
