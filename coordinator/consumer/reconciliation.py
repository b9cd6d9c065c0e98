"""How a member moves towards its target assignment (Kafka's CurrentAssignmentBuilder).

A member first gives up what it must revoke (UNREVOKED_PARTITIONS, its epoch unchanged), and
only then gets the target epoch and its new partitions; a partition another member still holds
is withheld (UNRELEASED_PARTITIONS) until that member has released it. So no partition ever
has two owners. Only topics the member subscribes to count: a partition of a topic it left is
revoked at once, even before a new target assignment exists (target assignments are batched).
Each partition keeps the epoch it was assigned at (KIP-1251), which commits are checked against.
"""

from __future__ import annotations

import uuid
from typing import Callable

from protocol.errors import ErrorCode

from coordinator.consumer.member import Assignment, ConsumerGroupMember, MemberState
from coordinator.errors import GroupError


def reconcile(member: ConsumerGroupMember, target_epoch: int, target: Assignment,
              partition_epoch: Callable[[uuid.UUID, int], int], owned, *,
              subscribed: frozenset[uuid.UUID], subscription_changed: bool = False) -> ConsumerGroupMember:
    """The member after one step towards ``target``; ``owned`` is the heartbeat's
    TopicPartitions (None when the member did not send them), ``subscribed`` the ids of the
    topics it subscribes to, ``subscription_changed`` whether this heartbeat changed them."""
    state = member.state
    if state == MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned,
                         subscribed)
        if subscription_changed:
            return _drop_unsubscribed(member, owned, subscribed)
        return member
    if state == MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            # still revoking; a topic it left meanwhile is revoked too
            return _drop_unsubscribed(member, owned, subscribed) if subscription_changed else member
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned,
                     subscribed)
    if state == MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned,
                     subscribed)
    # UNKNOWN: a state of a newer version; the member starts over from nothing
    if owned is None or owned:
        raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH, "The consumer group member is in a unknown "
                         "state. The member must abandon all its partitions and rejoin.")
    return _next(member, target_epoch, target_epoch, target, partition_epoch, owned, subscribed)


def _owns_any(owned, assignment: Assignment) -> bool:
    """Does the member still report one of these partitions? Unknown (None) counts as yes."""
    if owned is None:
        return True
    for tp in owned:
        pending = assignment.get(tp.topic_id)
        if pending and any(p in pending for p in tp.partitions):
            return True
    return False


def _epochs(member: ConsumerGroupMember, *assignments: Assignment) -> dict[tuple[uuid.UUID, int], int]:
    """The assignment epochs ``member`` has for the partitions of ``assignments``."""
    default = max(member.member_epoch, 0)
    return {(t, p): member.assigned_at.get((t, p), default)
            for assignment in assignments for t, ps in assignment.items() for p in ps}


def _drop_unsubscribed(member: ConsumerGroupMember, owned, subscribed) -> ConsumerGroupMember:
    """Kafka's updateCurrentAssignment: partitions of topics the member no longer subscribes to
    are revoked without waiting for a new target assignment; its epoch stays (but becomes its
    previous epoch too)."""
    epoch = member.member_epoch
    if not subscribed and not member.pending_revocation:
        assigned: dict = {}
        revoking = dict(member.assigned)
    else:
        assigned = {t: ps for t, ps in member.assigned.items() if t in subscribed}
        if len(assigned) == len(member.assigned):
            return member                   # it still subscribes to every topic it holds
        revoking = dict(member.pending_revocation)
        for t, ps in member.assigned.items():
            if t not in subscribed:
                revoking[t] = revoking.get(t, frozenset()) | ps
    if revoking and _owns_any(owned, revoking):
        return member.with_epoch(epoch, state=MemberState.UNREVOKED_PARTITIONS, assigned=assigned,
                                 pending_revocation=revoking,
                                 assigned_at=_epochs(member, assigned, revoking))
    return member.with_epoch(epoch, assigned=assigned,
                             assigned_at=_epochs(member, assigned, member.pending_revocation))


def _next(member: ConsumerGroupMember, revoking_epoch: int, target_epoch: int, target: Assignment,
          partition_epoch, owned, subscribed) -> ConsumerGroupMember:
    """Kafka's computeNextAssignment: keep what stays, revoke what goes (at ``revoking_epoch``,
    the member's own but for a member in an unknown state), then take the target epoch and every
    free partition of the target."""
    unreleased = False
    assigned: dict[uuid.UUID, frozenset[int]] = {}
    revoking: dict[uuid.UUID, frozenset[int]] = {}
    pending: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id in set(target) | set(member.assigned):
        wanted = target.get(topic_id, frozenset()) if topic_id in subscribed else frozenset()
        current = member.assigned.get(topic_id, frozenset())
        kept = current & wanted
        to_revoke = current - kept
        to_assign = wanted - kept
        revoked_by_it = member.pending_revocation.get(topic_id, frozenset())
        # a partition it is itself revoking is not held by another member
        free = frozenset(p for p in to_assign
                         if partition_epoch(topic_id, p) == -1 or p in revoked_by_it)
        unreleased = unreleased or free != to_assign
        if kept:
            assigned[topic_id] = kept
        if to_revoke:
            revoking[topic_id] = to_revoke
        if free:
            pending[topic_id] = free
    if revoking and _owns_any(owned, revoking):
        return member.with_epoch(revoking_epoch, state=MemberState.UNREVOKED_PARTITIONS,
                                 assigned=assigned, pending_revocation=revoking,
                                 assigned_at=_epochs(member, assigned, revoking))
    epochs = _epochs(member, assigned)
    for topic_id, partitions in pending.items():
        assigned[topic_id] = assigned.get(topic_id, frozenset()) | partitions
        epochs.update(((topic_id, p), target_epoch) for p in partitions)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return member.with_epoch(target_epoch, state=state, assigned=assigned, pending_revocation={},
                             assigned_at=epochs)
