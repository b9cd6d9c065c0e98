"""How a consumer group's journal events become group epochs and member reconciliations
(pipeline.reconciliation.epoch_rows), on hand-written event sequences: the plain case, then the
ways a member can fail to reach an epoch, and the journal beginning or the group ending
mid-way. Last, the same through Spark from hand-written journal lines (the consumer_epochs and
member_reconciliations tables, and the two types of ``members``)."""

from __future__ import annotations

import datetime as dt

from offsets_log.journal import JournalWriter, journal_dir
from pipeline.job import build_tables
from pipeline.reconciliation import EVENT_FIELDS, epoch_rows


def ev(seq: int, event: str, member: str | None = None, **fields) -> dict:
    return (dict.fromkeys(EVENT_FIELDS) | {"seq": seq, "t": seq * 100, "event": event, "member": member}
            | fields)


def joined(seq, member, client=None, instance=None):
    return ev(seq, "member_joined", member, client_id=client or member.upper(), instance_id=instance,
              protocol="consumer")


def bumped(seq, epoch, cause, member=None):
    return ev(seq, "group_epoch_bumped", member, epoch=epoch, cause=cause)


def target(seq, epoch, member, members=1):
    return ev(seq, "target_assignment", member, epoch=epoch, assignor="uniform", target_members=members)


def step(seq, member, epoch, target_epoch, state="STABLE"):
    return ev(seq, "member_reconciled", member, epoch=epoch, target_epoch=target_epoch, state=state)


def ways(epoch: dict) -> dict[str, dict]:
    return {w["member"]: w for w in epoch["reconciliations"]}


def summary(rows) -> list[tuple]:
    return [(r["epoch"], r["outcome"], {m: w["outcome"] for m, w in ways(r).items()}) for r in rows]


def test_join_revoke_wait_and_leave():
    """a alone (epoch 1); b joins (2): a revokes, b waits for a's partitions; b leaves (3) and
    the target comes with a's next heartbeat. Times run from the bump; the joiner is marked."""
    rows = epoch_rows([
        joined(1, "a"), bumped(2, 1, "new_member", "a"), target(3, 1, "a"), step(4, "a", 1, 1),
        joined(10, "b"), bumped(11, 2, "new_member", "b"), target(12, 2, "b", 2),
        step(13, "b", 2, 2, "UNRELEASED_PARTITIONS"), step(15, "a", 1, 2, "UNREVOKED_PARTITIONS"),
        step(17, "a", 2, 2), step(20, "b", 2, 2),
        ev(30, "member_left", "b"), bumped(31, 3, "member_left", "b"), target(34, 3, "a"),
        step(35, "a", 3, 3),
    ])
    assert summary(rows) == [(1, "reconciled", {"a": "reconciled"}),
                             (2, "reconciled", {"a": "reconciled", "b": "reconciled"}),
                             (3, "reconciled", {"a": "reconciled"})]
    one, two, three = rows
    assert (one["start_ms"], one["bump_ms"], one["target_ms"], one["end_ms"], one["next_ms"]) == (
        200, 200, 300, 400, 1100)
    assert (two["cause"], two["cause_member"], two["cause_client_id"], two["assignor"],
            two["target_members"]) == ("new_member", "b", "B", "uniform", 2)
    a, b = ways(two)["a"], ways(two)["b"]
    assert (a["reconciled_ms"] - a["start_ms"], a["steps"], a["revoking"], a["waiting"],
            a["joined"]) == (600, 2, True, False, False)
    assert (b["reconciled_ms"] - b["start_ms"], b["steps"], b["revoking"], b["waiting"],
            b["joined"]) == (900, 2, False, True, True)
    assert two["end_ms"] == 2000
    assert (three["start_ms"], three["target_ms"], three["cause"]) == (3100, 3400, "member_left")
    assert ways(three)["a"]["reconciled_ms"] - ways(three)["a"]["start_ms"] == 400
    assert ways(three)["a"]["target_ms"] == 3400


def test_superseded_while_revoking_counts_both_epochs():
    """a is still revoking for epoch 2 when c's join starts epoch 3: its way to 2 is
    superseded, and it reaches 3 directly; it spent both epochs revoking. b never gets its
    partitions (unfinished at the end of the journal)."""
    rows = epoch_rows([
        joined(1, "a"), joined(2, "b"), bumped(3, 1, "new_member", "b"), target(4, 1, "b", 2),
        step(5, "a", 1, 1), step(6, "b", 1, 1),
        bumped(10, 2, "metadata_change", "b"), target(11, 2, "b", 2),
        step(12, "a", 1, 2, "UNREVOKED_PARTITIONS"), step(13, "b", 2, 2, "UNRELEASED_PARTITIONS"),
        joined(20, "c"), bumped(21, 3, "new_member", "c"), target(22, 3, "c", 3),
        step(23, "c", 3, 3), step(25, "a", 3, 3),
    ])
    assert summary(rows)[1:] == [
        (2, "superseded", {"a": "superseded", "b": "superseded"}),
        (3, "unfinished", {"a": "reconciled", "b": "unfinished", "c": "reconciled"})]
    two, three = rows[1:]
    assert ways(two)["a"]["end_ms"] == 2100 and ways(two)["a"]["reconciled_ms"] is None
    assert (ways(three)["a"]["revoking"], ways(three)["a"]["steps"]) == (True, 1)
    assert (ways(three)["b"]["waiting"], ways(three)["b"]["steps"], ways(three)["b"]["end_ms"]) == (
        True, 0, None)
    assert ways(three)["c"]["joined"] and not ways(three)["a"]["joined"]
    assert three["end_ms"] is None and three["next_ms"] is None and two["next_ms"] == 2100


def test_removed_members_end_their_way():
    """Left, expired, and a static member replaced by its next incarnation (same instance id)
    each end their way to the epoch; a forced bump names no member."""
    rows = epoch_rows([
        joined(1, "a"), joined(2, "b"), joined(3, "s1", instance="i"), bumped(4, 1, "new_member", "s1"),
        bumped(10, 2, "forced"),
        ev(11, "member_left", "a"), ev(12, "member_expired", "b", reason="session_timeout"),
        joined(13, "s2", instance="i"), step(14, "s2", 2, 2),
    ])
    assert summary(rows) == [
        (1, "superseded", {"a": "superseded", "b": "superseded", "s1": "superseded"}),
        (2, "reconciled", {"a": "left", "b": "expired", "s1": "replaced", "s2": "reconciled"})]
    two = rows[1]
    assert (two["cause"], two["cause_member"], two["target_ms"], two["assignor"]) == (
        "forced", None, None, None)
    assert ways(two)["s2"]["joined"] and ways(two)["s2"]["start_ms"] == 1000
    assert two["end_ms"] == 1400            # every member still in the group reached it


def test_journal_begins_mid_epoch_and_a_target_without_bump():
    """Epoch 7 began before the journal: its members' steps are there, its start is not (no
    reconciliation time). Epoch 8's bump is missing too, but its target assignment starts it."""
    rows = epoch_rows([
        step(1, "a", 6, 7, "UNREVOKED_PARTITIONS"), step(2, "a", 7, 7), step(3, "b", 7, 7),
        target(10, 8, "b", 2), step(11, "b", 8, 8), step(12, "a", 8, 8),
    ])
    assert summary(rows) == [(7, "reconciled", {"a": "reconciled", "b": "reconciled"}),
                             (8, "reconciled", {"a": "reconciled", "b": "reconciled"})]
    seven, eight = rows
    assert seven["start_ms"] is None and seven["end_ms"] == 300
    assert ways(seven)["a"]["revoking"] and ways(seven)["a"]["start_ms"] is None
    assert (eight["start_ms"], eight["bump_ms"], eight["cause"], eight["target_ms"]) == (
        1000, None, None, 1000)
    assert ways(eight)["a"]["reconciled_ms"] - ways(eight)["a"]["start_ms"] == 200


def test_empty_epoch_deletion_and_a_group_made_anew():
    """The last member leaves: an empty epoch. The group is deleted and made anew: epochs
    start from 1 again, as new rows."""
    rows = epoch_rows([
        joined(1, "a"), bumped(2, 1, "new_member", "a"), step(3, "a", 1, 1),
        ev(4, "member_left", "a"), bumped(5, 2, "member_left", "a"),
        ev(6, "group_deleted", reason="delete_groups"),
        joined(7, "z"), bumped(8, 1, "new_member", "z"), step(9, "z", 1, 1, "UNRELEASED_PARTITIONS"),
    ])
    assert summary(rows) == [(1, "reconciled", {"a": "reconciled"}), (2, "empty", {}),
                             (1, "unfinished", {"z": "unfinished"})]
    assert rows[2]["start_ms"] == 800 and ways(rows[2])["z"]["waiting"]


def test_downgrade_to_classic_and_classic_groups():
    """A classic rebalance in a consumer group (it became a classic group) ends the ways still
    open; a group that only ever was classic has no epochs."""
    rows = epoch_rows([
        joined(1, "a"), joined(2, "b"), bumped(3, 1, "new_member", "b"), step(4, "a", 1, 1),
        ev(9, "rebalance_started", cause="member_left"),
    ])
    assert summary(rows) == [(1, "downgraded", {"a": "reconciled", "b": "downgraded"})]
    assert epoch_rows([joined(1, "a"), ev(2, "rebalance_started", cause="new_member"),
                       ev(3, "member_left", "a")]) == []


def test_tables_from_journal_lines(spark, tmp_path):
    """Hand-written journal lines through Spark: a consumer group beside a classic one, whose
    ``members`` (a list) and the target assignment's (a count) are both read; per member,
    the epochs it spent revoking and waiting."""
    w = JournalWriter(journal_dir(str(tmp_path)), 0)
    lines = [
        {"event": "journal_opened", "node": 1},
        {"event": "member_joined", "member": "a", "client_id": "A", "instance_id": None,
         "protocol": "consumer"},
        {"event": "group_epoch_bumped", "member": "a", "epoch": 1, "cause": "new_member"},
        {"event": "target_assignment", "member": "a", "epoch": 1, "assignor": "uniform", "members": ["a"]},
        {"event": "member_reconciled", "member": "a", "epoch": 1, "previous_epoch": 0, "target_epoch": 1,
         "state": "STABLE"},
        {"event": "member_joined", "member": "b", "client_id": "B", "instance_id": None,
         "protocol": "consumer"},
        {"event": "group_epoch_bumped", "member": "b", "epoch": 2, "cause": "new_member"},
        {"event": "target_assignment", "member": "b", "epoch": 2, "assignor": "uniform", "members": ["a", "b"]},
        {"event": "member_reconciled", "member": "b", "epoch": 2, "previous_epoch": 0, "target_epoch": 2,
         "state": "UNRELEASED_PARTITIONS"},
        {"event": "member_reconciled", "member": "a", "epoch": 1, "previous_epoch": 1, "target_epoch": 2,
         "state": "UNREVOKED_PARTITIONS"},
        {"event": "member_reconciled", "member": "a", "epoch": 2, "previous_epoch": 1, "target_epoch": 2,
         "state": "STABLE"},
        {"event": "rebalance_started", "group": "old", "generation": 0, "member": "x",
         "cause": "new_member", "reason": "", "state": "Empty", "members": ["x"]},
        {"event": "rebalance_completed", "group": "old", "generation": 1, "member": None,
         "members": ["x"], "leader": "x", "protocol_type": "consumer", "protocol": "range",
         "duration_ms": 100},
        {"event": "sync_completed", "group": "old", "generation": 1, "member": None, "members": ["x"],
         "protocol": "range", "duration_ms": 150},
    ]
    for i, line in enumerate(lines):
        w.append({"t": 1000 + 100 * i, "shard": 0, "group": "new", "generation": 0} | line
                 if line["event"] != "journal_opened" else {"t": 1000} | line)
    w.close()
    tables, events = build_tables(spark, [str(tmp_path)])
    try:
        assert events.count() == len(lines)                    # nothing taken for a corrupt line
        epochs = {r["epoch"]: r.asDict() for r in tables["consumer_epochs"].collect()}
        assert {e: (r["group"], r["cause"], r["cause_client_id"], r["target_members"], r["members"],
                    r["revoking_members"], r["waiting_members"], r["duration_ms"], r["outcome"])
                for e, r in epochs.items()} == {
            1: ("new", "new_member", "A", 1, ["a"], 0, 0, 200, "reconciled"),
            2: ("new", "new_member", "B", 2, ["a", "b"], 1, 1, None, "unfinished")}
        assert epochs[2]["start_time"] == dt.datetime(1970, 1, 1, 0, 0, 1, 600_000)
        ways = {(r["epoch"], r["member"]): r.asDict()
                for r in tables["member_reconciliations"].collect()}
        assert {k: (r["reconcile_ms"], r["since_target_ms"], r["steps"], r["outcome"])
                for k, r in ways.items()} == {
            (1, "a"): (200, 100, 1, "reconciled"), (2, "a"): (400, 300, 2, "reconciled"),
            (2, "b"): (None, None, 1, "unfinished")}
        assert {m: (r["member_epochs"], r["member_epochs_revoking"], r["member_epochs_waiting"],
                    r["member_unfinished"]) for (_, m), r in ways.items()} == {
            "a": (2, 1, 0, 0), "b": (1, 0, 1, 1)}
        [classic] = tables["rebalances"].collect()
        assert (classic["group"], classic["members_after"], classic["outcome"]) == (
            "old", ["x"], "stable")
    finally:
        events.unpersist()
