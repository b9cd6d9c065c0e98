"""How journal events become rebalance rows (pipeline.tables.rebalance_rows), on hand-made
event sequences: one per outcome, and the cases the broker's restarts and the journal's start
create."""

from __future__ import annotations

from pipeline.tables import rebalance_rows


def ev(seq: int, event: str, generation: int, **fields) -> dict:
    base = {"seq": seq, "t": seq * 100, "event": event, "generation": generation, "member": None,
            "cause": None, "reason": None, "members": None, "protocol": None, "leader": None}
    return base | fields


def started(seq, generation, cause="new_member", members=("a",)):
    return ev(seq, "rebalance_started", generation, cause=cause, members=list(members))


def formed(seq, generation, members=("a",)):
    return ev(seq, "rebalance_completed", generation, members=list(members), protocol="range",
              leader=members[0] if members else None)


def synced(seq, generation):
    return ev(seq, "sync_completed", generation)


def rows(events, runs=(0,)):
    columns = ("source", "group", "generation", "start_ms", "joined_ms", "end_ms", "cause", "causes",
               "reason", "members_before", "members_after", "removed", "protocol", "leader", "outcome")
    return [dict(zip(columns, r)) for r in rebalance_rows("d", "g", events, list(runs))]


def test_stable_then_restarted_rebalance_then_empty():
    """A rebalance that restarts before its generation forms is one row with both causes;
    the group emptied by a leave forms a generation with no members."""
    got = rows([
        started(1, 0), formed(2, 1), synced(3, 1),
        ev(4, "member_expired", 1, member="a", reason="session_timeout"),
        started(5, 1, "session_expiry", members=()), started(6, 1, "new_member", members=("b",)),
        formed(7, 2, members=("b",)), synced(8, 2),
        ev(9, "member_left", 2, member="b"), started(10, 2, "member_left", members=()),
        formed(11, 3, members=()),
    ])
    assert [(r["generation"], r["outcome"], r["start_ms"], r["end_ms"]) for r in got] == [
        (1, "stable", 100, 300), (2, "stable", 500, 800), (3, "empty", 1000, 1100)]
    assert [r["causes"] for r in got] == [["new_member"], ["session_expiry", "new_member"], ["member_left"]]
    assert [r["members_before"] for r in got] == [[], ["a"], ["b"]]
    assert got[1]["removed"] == [("a", "member_expired", "session_timeout")]
    assert got[2]["removed"] == [("b", "member_left", None)]


def test_superseded_generation_ends_where_the_next_rebalance_starts():
    """Generation 2 formed but never synced: the next start ends it (the stop goes on)."""
    got = rows([started(1, 0), formed(2, 1), synced(3, 1), started(4, 1), formed(5, 2),
                ev(6, "member_expired", 2, member="a", reason="sync_timeout"),
                started(7, 2, "sync_timeout"), formed(8, 3), synced(9, 3)])
    assert [(r["generation"], r["outcome"], r["end_ms"]) for r in got] == [
        (1, "stable", 300), (2, "superseded", 700), (3, "stable", 900)]
    assert got[2]["removed"] == [("a", "member_expired", "sync_timeout")]


def test_restart_interrupts_and_the_journal_may_begin_mid_rebalance():
    """A broker restart (a journal_opened at seq 10) cuts the open rebalance; a journal that
    begins inside one knows its end but not its start; the last one is still going."""
    got = rows([formed(2, 5), synced(3, 5), started(4, 5), started(11, 5), formed(12, 6),
                synced(13, 6), started(14, 6)], runs=(0, 10))
    assert [(r["generation"], r["outcome"], r["start_ms"], r["end_ms"]) for r in got] == [
        (5, "stable", None, 300), (6, "interrupted", 400, None), (6, "stable", 1100, 1300),
        (7, "in_progress", 1400, None)]
    assert got[0]["members_before"] is None and got[2]["members_before"] == ["a"]
