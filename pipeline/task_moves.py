"""How a streams group's tasks moved from one target assignment to the next, as plain Python
(the job runs :func:`move_rows` once per group).

Each ``target_assignment`` of a streams group (KIP-1071) names every member's active and standby
tasks ("subtopology_partition"). Against the group's previous target: an active task *moved*
when its owner changed, and is *new* when no member ran it before (the group's first target, or
a subtopology that grew); a standby task moved when it sits on a member that did not hold it as
a standby before. Sticky assignment keeps both counts low: a scale-out moves only what the new
members take, a scale-in only what the departed members held.
"""

from __future__ import annotations

#: the fields of each row :func:`move_rows` yields, in order
MOVE_FIELDS = ("epoch", "t", "members", "active_tasks", "standby_tasks", "active_moved", "active_new",
               "standby_moved", "cause_member", "placement")


def _owners(tasks: dict, kind: str) -> dict[str, set[str]]:
    owners: dict[str, set[str]] = {}
    for member, held in tasks.items():
        for task in held.get(kind) or ():
            owners.setdefault(task, set()).add(member)
    return owners


def move_rows(events) -> list[dict]:
    """One row per target assignment, in journal order (``events``: the group's
    ``target_assignment`` events that carry ``tasks``, sorted by ``seq``)."""
    rows, before_active, before_standby = [], {}, {}
    for e in events:
        tasks = e["tasks"] or {}
        active, standby = _owners(tasks, "active"), _owners(tasks, "standby")
        moved = sum(1 for task, owner in active.items() if task in before_active and owner != before_active[task])
        new = sum(1 for task in active if task not in before_active)
        standby_moved = sum(len(owners - before_standby.get(task, set())) for task, owners in standby.items())
        rows.append(dict(epoch=e["epoch"], t=e["t"], members=len(tasks), active_tasks=len(active),
                         standby_tasks=sum(len(o) for o in standby.values()), active_moved=moved, active_new=new,
                         standby_moved=standby_moved, cause_member=e["member"],
                         placement="; ".join(f"{m}: {len(h.get('active') or ())}+{len(h.get('standby') or ())}"
                                             for m, h in sorted(tasks.items()))))
        before_active, before_standby = active, standby
    return rows
