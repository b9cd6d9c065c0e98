"""How a streams member moves towards its target tasks (Kafka's streams CurrentAssignmentBuilder).

As with consumer groups: a member first gives up the tasks it must revoke (UNREVOKED_TASKS, its
epoch unchanged), and only then gets the target epoch and its new tasks; a task still run
elsewhere (an active task by any process, a standby or warm-up task on its own process) is
withheld (UNRELEASED_TASKS) until it is released. New active tasks carry the target epoch, which
offset commits are checked against.
"""

from __future__ import annotations

from types import MappingProxyType

from protocol.errors import ErrorCode

from coordinator.errors import GroupError
from coordinator.streams.group import MemberState, StreamsGroup, StreamsMember
from coordinator.streams.tasks import TasksTuple, minus, task_set


def reconcile(group: StreamsGroup, member: StreamsMember, target_epoch: int, target: TasksTuple,
              owned: TasksTuple | None) -> StreamsMember:
    """The member after one step towards ``target``; ``owned``: the tasks its heartbeat reported
    (None unless it sent all three lists)."""
    state = member.state
    if state == MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(group, member, member.member_epoch, target_epoch, target, owned)
    if state == MemberState.UNREVOKED_TASKS:
        if owned is None or owned.overlaps(member.pending_revocation):
            return member
        return _next(group, member, member.member_epoch + 1, target_epoch, target, owned)
    if state == MemberState.UNRELEASED_TASKS:
        return _next(group, member, member.member_epoch, target_epoch, target, owned)
    if owned is None or not owned.is_empty():
        raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH, "The streams group member is in a unknown state. "
                         "The member must abandon all its tasks and rejoin.")
    return _next(group, member, target_epoch, target_epoch, target, owned)


def _next(group: StreamsGroup, member: StreamsMember, epoch: int, target_epoch: int, target: TasksTuple,
          owned: TasksTuple | None) -> StreamsMember:
    kept, revoke, add, unreleased = {}, {}, {}, False
    for kind, withheld in (("active", group.active_unreleased), ("standby", group.standby_unreleased),
                           ("warmup", group.standby_unreleased)):
        current, wanted = getattr(member.assigned, kind), getattr(target, kind)
        keep = task_set((s, ps & wanted.get(s, frozenset())) for s, ps in current.items())
        revoke[kind] = minus(current, keep)
        new = minus(wanted, keep)
        given = task_set((s, (p for p in ps if not withheld(member, (s, p)))) for s, ps in new.items())
        unreleased |= given != new
        kept[kind], add[kind] = keep, given
    kept, revoke, add = TasksTuple(**kept), TasksTuple(**revoke), TasksTuple(**add)
    epochs = dict(member.active_epochs)
    if not revoke.is_empty() and (owned is None or owned.overlaps(revoke)):
        return _moved(member, epochs, state=MemberState.UNREVOKED_TASKS, member_epoch=epoch, assigned=kept,
                      pending_revocation=revoke)
    if not add.is_empty():
        epochs.update({(s, p): target_epoch for s, ps in add.active.items() for p in ps})
        return _moved(member, epochs, state=MemberState.UNRELEASED_TASKS if unreleased else MemberState.STABLE,
                      member_epoch=target_epoch, assigned=kept.merged(add), pending_revocation=TasksTuple())
    return _moved(member, epochs, state=MemberState.UNRELEASED_TASKS if unreleased else MemberState.STABLE,
                  member_epoch=target_epoch, assigned=kept, pending_revocation=TasksTuple())


def _moved(member: StreamsMember, epochs: dict, *, member_epoch: int, **changes) -> StreamsMember:
    """Kafka's updateMemberEpoch (the previous epoch is the one it had) and the active tasks'
    epochs of what it now holds or revokes."""
    held = {(s, p) for tasks in (changes["assigned"], changes["pending_revocation"])
            for s, ps in tasks.active.items() for p in ps}
    return member.replace(member_epoch=member_epoch, previous_member_epoch=member.member_epoch,
                          active_epochs=MappingProxyType({t: e for t, e in epochs.items() if t in held}), **changes)
