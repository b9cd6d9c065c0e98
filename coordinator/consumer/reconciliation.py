"""How a member moves towards its target assignment (Kafka's CurrentAssignmentBuilder).

A member first gives up what it must revoke (UNREVOKED_PARTITIONS, its epoch unchanged), and
only then gets the new epoch and its new partitions; a partition another member still holds
is withheld (UNRELEASED_PARTITIONS) until that member has released it. So no partition ever
has two owners.
"""

from __future__ import annotations

import uuid
from typing import Callable

from protocol.errors import ErrorCode

from coordinator.consumer.member import Assignment, ConsumerGroupMember, MemberState
from coordinator.errors import GroupError


def reconcile(member: ConsumerGroupMember, target_epoch: int, target: Assignment,
              partition_epoch: Callable[[uuid.UUID, int], int], owned) -> ConsumerGroupMember:
    """The member after one step towards ``target``; ``owned`` is the heartbeat's
    TopicPartitions (None when the member did not send them)."""
    state = member.state
    if state == MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
        return member
    if state == MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            return member                   # still revoking: nothing changes
        return _next(member, member.member_epoch + 1, target_epoch, target, partition_epoch, owned)
    if state == MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    # UNKNOWN
    if owned is None or owned:
        raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH, "The consumer group member is in a unknown "
                         "state. The member must abandon all its partitions and rejoin.")
    return _next(member, target_epoch, target_epoch, target, partition_epoch, owned)


def _owns_any(owned, assignment: Assignment) -> bool:
    """Does the member still report one of these partitions? Unknown (None) counts as yes."""
    if owned is None:
        return True
    for tp in owned:
        pending = assignment.get(tp.topic_id)
        if pending and any(p in pending for p in tp.partitions):
            return True
    return False


def _next(member: ConsumerGroupMember, revoking_epoch: int, target_epoch: int, target: Assignment,
          partition_epoch, owned) -> ConsumerGroupMember:
    """Kafka's computeNextAssignment."""
    unreleased = False
    assigned: dict[uuid.UUID, frozenset[int]] = {}
    revoking: dict[uuid.UUID, frozenset[int]] = {}
    pending: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id in set(target) | set(member.assigned):
        wanted = target.get(topic_id, frozenset())
        current = member.assigned.get(topic_id, frozenset())
        kept = current & wanted
        to_revoke = current - kept
        to_assign = wanted - kept
        free = frozenset(p for p in to_assign if partition_epoch(topic_id, p) == -1)
        unreleased = unreleased or free != to_assign
        if kept:
            assigned[topic_id] = kept
        if to_revoke:
            revoking[topic_id] = to_revoke
        if free:
            pending[topic_id] = free
    if revoking and _owns_any(owned, revoking):
        return member.with_epoch(revoking_epoch, state=MemberState.UNREVOKED_PARTITIONS,
                                 assigned=assigned, pending_revocation=revoking)
    for topic_id, partitions in pending.items():
        assigned[topic_id] = assigned.get(topic_id, frozenset()) | partitions
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return member.with_epoch(target_epoch, state=state, assigned=assigned, pending_revocation={})
