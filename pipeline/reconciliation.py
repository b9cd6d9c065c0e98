"""How a KIP-848 consumer group's journal events become its group epochs and each member's
reconciliation, as plain Python (the job runs :func:`epoch_rows` once per group).

A group epoch E starts with its ``group_epoch_bumped`` (or, when the journal holds no bump,
with its ``target_assignment``). Every member in the group then has to reach E: it revokes
what it must give up (UNREVOKED_PARTITIONS), waits for partitions others still hold
(UNRELEASED_PARTITIONS), and is done at the ``member_reconciled`` that puts it in state STABLE
at member epoch E. Its reconciliation time runs from the start of E to that event. A member
that does not get there ends its way to E otherwise:

* ``superseded``: a newer epoch started first (the member now heads for that one);
* ``left``, ``expired``, ``fenced``, ``removed``: removed from the group first
  (``member_left``, ``member_expired``, ``member_fenced``, ``member_removed``);
* ``replaced``: a static member whose group.instance.id a new member took over;
* ``downgraded``: the group became a classic group (a classic rebalance started in it);
* ``deleted``: the group was deleted;
* ``unfinished``: none of that before the journal ends.

Which members have to reach E: those in the group when E starts (known from ``member_joined``
and from any event they caused), and any member seen reconciling towards E later. A member
still revoking or waiting when the next epoch starts takes that state with it: both epochs
count as spent revoking (or waiting).

Each member's way to E is a dict as in :data:`MEMBER_FIELDS`, each epoch a dict as in
:data:`EPOCH_FIELDS` whose ``reconciliations`` are its members' (its outcome: :func:`_conclude`).
Times are milliseconds.
"""

from __future__ import annotations

from coordinator.events import Event

#: the events a group needs for its epochs; ``CONSUMER_EVENTS`` are the ones only consumer
#: groups write
CONSUMER_EVENTS = (Event.GROUP_EPOCH_BUMPED, Event.TARGET_ASSIGNMENT, Event.MEMBER_RECONCILED)
MEMBERSHIP_EVENTS = (Event.MEMBER_JOINED, Event.MEMBER_LEFT, Event.MEMBER_EXPIRED, Event.MEMBER_FENCED,
                     Event.MEMBER_REMOVED, Event.REBALANCE_STARTED, Event.GROUP_DELETED)
#: the fields of an event :func:`epoch_rows` reads
EVENT_FIELDS = ("seq", "t", "event", "member", "epoch", "cause", "assignor", "target_members",
                "target_epoch", "state", "instance_id", "client_id", "protocol", "replaces",
                "replaced_by")

STABLE = "STABLE"
#: a member's states while it revokes and waits (a streams member's are of tasks)
REVOKING, WAITING = ("UNREVOKED_PARTITIONS", "UNREVOKED_TASKS"), ("UNRELEASED_PARTITIONS", "UNRELEASED_TASKS")
REMOVED = {Event.MEMBER_LEFT: "left", Event.MEMBER_EXPIRED: "expired", Event.MEMBER_FENCED: "fenced",
           Event.MEMBER_REMOVED: "removed"}

MEMBER_FIELDS = ("member", "client_id", "protocol", "joined", "start_ms", "target_ms",
                 "reconciled_ms", "end_ms", "steps", "revoking", "waiting", "outcome")
EPOCH_FIELDS = ("epoch", "start_ms", "bump_ms", "cause", "cause_member", "cause_client_id",
                "target_ms", "assignor", "target_members", "end_ms", "next_ms", "outcome",
                "reconciliations")


class _Group:
    """The state of one group while its events are read in order."""

    def __init__(self):
        self.epochs: list[dict] = []
        self.current: dict | None = None          # the latest epoch
        self.live: dict[str, str | None] = {}     # member -> instance id
        self.known: dict[str, dict] = {}          # member -> client_id, protocol (kept after it goes)
        self.joined: set[str] = set()             # joined since the current epoch started
        self.state: dict[str, str] = {}           # member -> its last reconciliation state
        self.open: dict[str, dict] = {}           # member -> its way to the current epoch

    def add(self, member: str | None, instance_id: str | None = None) -> None:
        if member is not None and member not in self.live:
            self.live[member] = instance_id

    def close(self, member: str, outcome: str, t: int) -> None:
        row = self.open.pop(member, None)
        if row is not None:
            row.update(outcome=outcome, end_ms=t)
            if outcome == "reconciled":
                row["reconciled_ms"] = t

    def close_all(self, outcome: str, t: int) -> None:
        for member in list(self.open):
            self.close(member, outcome, t)

    def remove(self, member: str, outcome: str, t: int) -> None:
        self.close(member, outcome, t)
        self.live.pop(member, None)
        self.state.pop(member, None)

    def begin(self, epoch: int, t: int | None) -> dict:
        """Epoch ``epoch`` starts at ``t`` (None: before the journal): every open way to an
        older epoch is superseded, and every member in the group is on its way to this one."""
        self.close_all("superseded", t)
        if self.current is not None and self.current["next_ms"] is None:
            self.current["next_ms"] = t
        self.current = dict(epoch=epoch, start_ms=t, bump_ms=None, cause=None, cause_member=None,
                            cause_client_id=None, target_ms=None, assignor=None, target_members=None,
                            end_ms=None, next_ms=None, ended=None, reconciliations=[])
        self.epochs.append(self.current)
        for member in self.live:
            self.follow(member)
        self.joined = set()
        return self.current

    def follow(self, member: str) -> dict:
        """Open ``member``'s way to the current epoch."""
        info = self.known.get(member, {})
        state = self.state.get(member)
        row = dict(member=member, client_id=info.get("client_id"), protocol=info.get("protocol"),
                   joined=member in self.joined, start_ms=self.current["start_ms"],
                   target_ms=self.current["target_ms"], reconciled_ms=None, end_ms=None, steps=0,
                   revoking=state in REVOKING, waiting=state in WAITING, outcome=None)
        self.current["reconciliations"].append(row)
        self.open[member] = row
        return row

    def epoch(self, epoch: int, t: int | None) -> dict:
        """The row of ``epoch``: the current one, or a new one if ``epoch`` is newer. (After a
        deletion, or a group made anew, epochs may start from 1 again.)"""
        if self.current is not None and self.current["epoch"] == epoch:
            return self.current
        return self.begin(epoch, t)


def epoch_rows(events) -> list[dict]:
    """The group epochs of one group from its journal events (dicts with
    :data:`EVENT_FIELDS`, in ``seq`` order); none for a group that never was a consumer group."""
    g = _Group()
    for e in events:
        kind, member, t = e["event"], e["member"], e["t"]
        if kind == Event.MEMBER_JOINED:
            instance = e["instance_id"]
            for other, other_instance in list(g.live.items()):
                if other != member and ((instance is not None and other_instance == instance)
                                        or other == e["replaces"]):
                    g.remove(other, "replaced", t)
            g.known[member] = {"client_id": e["client_id"], "protocol": e["protocol"]}
            g.add(member, instance)
            g.joined.add(member)
        elif kind in REMOVED:
            g.remove(member, REMOVED[kind], t)
            successor = e["replaced_by"]
            if successor is not None:            # a static member's new incarnation
                g.add(successor, e["instance_id"])
        elif kind == Event.GROUP_EPOCH_BUMPED:
            g.epoch(e["epoch"], t).update(bump_ms=t, cause=e["cause"], cause_member=member,
                                          cause_client_id=g.known.get(member, {}).get("client_id"))
        elif kind == Event.TARGET_ASSIGNMENT:
            g.add(member)
            row = g.epoch(e["epoch"], t)
            row.update(target_ms=t, assignor=e["assignor"], target_members=e["target_members"])
            for way in g.open.values():
                way["target_ms"] = t
        elif kind == Event.MEMBER_RECONCILED:
            target = e["target_epoch"]
            if g.current is not None and target < g.current["epoch"]:
                continue                         # towards an epoch already superseded
            g.add(member)
            if g.current is None or target > g.current["epoch"]:
                g.begin(target, None)            # the journal holds neither its bump nor its target
            way = g.open.get(member)
            if way is None:
                if any(r["member"] == member for r in g.current["reconciliations"]):
                    continue                     # already there (or gone): nothing to add
                way = g.follow(member)
            state = e["state"]
            g.state[member] = state
            way["steps"] += 1
            way["revoking"] = way["revoking"] or state in REVOKING
            way["waiting"] = way["waiting"] or state in WAITING
            if state == STABLE and e["epoch"] == target:
                g.close(member, "reconciled", t)
        elif kind in (Event.REBALANCE_STARTED, Event.GROUP_DELETED):
            # a classic rebalance in a consumer group: it became a classic group
            ended = "downgraded" if kind == Event.REBALANCE_STARTED else "deleted"
            if g.open:
                g.current["ended"] = ended
                g.close_all(ended, t)
            if kind == Event.GROUP_DELETED:
                g.current, g.live, g.state, g.joined = None, {}, {}, set()
    g.close_all("unfinished", None)
    for row in g.epochs:
        _conclude(row)
    return g.epochs


def _conclude(row: dict) -> None:
    """An epoch's outcome: ``empty`` (no member had to reach it), ``unfinished`` (one is still on
    its way), ``superseded`` (a newer epoch started before every member got there),
    ``downgraded`` or ``deleted``, else ``reconciled``: every member that stayed in the group
    reached it (``end_ms``: the last of them)."""
    ways = row.pop("reconciliations")
    outcomes = {w["outcome"] for w in ways}
    reached = [w["reconciled_ms"] for w in ways if w["outcome"] == "reconciled"]
    if not ways:
        outcome = "empty"
    elif "unfinished" in outcomes:
        outcome = "unfinished"
    elif "superseded" in outcomes:
        outcome = "superseded"
    elif row["ended"] is not None:
        outcome = row["ended"]
    elif reached:
        outcome = "reconciled"
        row["end_ms"] = max(reached)
    else:                                  # every member left before reaching it
        outcome = "superseded" if row["next_ms"] is not None else "empty"
    del row["ended"]
    row.update(outcome=outcome, reconciliations=ways)
