"""The Burrow-style lag rules (pipeline/lag_rules.py) on hand-made windows, then the lag_status
table built by Spark from a hand-made journal with one group per status."""

from __future__ import annotations

import pytest

from offsets_log.journal import JournalWriter, journal_dir
from pipeline.job import build_tables
from pipeline.lag_rules import Commit, evaluate, worst


def window(*commits: tuple[int, int, int | None]) -> list[Commit]:
    return [Commit(*c) for c in commits]


@pytest.mark.parametrize("commits, now, lag, status, rule", [
    # 1. no lag now: OK whatever came before
    ([(1000, 5, 40), (2000, 5, 50)], 90_000, 0, "OK", "caught up"),
    # 2. the log end is unknown
    ([(1000, 5, None)], 1500, None, "ERR", "log end is unknown"),
    # 3. silent longer than the window spans, with lag: STOP (even after keeping up earlier)
    ([(1000, 10, 0), (2000, 20, 0)], 3001, 4, "STOP", "no commit for 1001 ms"),
    ([(1000, 10, 3)], 1001, 3, "STOP", "longer than the window's 0 ms"),
    # ... but not while the silence is within the window's span
    ([(1000, 10, 0), (2000, 20, 0)], 3000, 4, "OK", "kept up"),
    # 4. offsets went backwards
    ([(1000, 20, 5), (2000, 10, 15), (3000, 15, 10)], 3000, 10, "ERR", "rewound"),
    # 5. kept up at some point in the window
    ([(1000, 10, 0), (2000, 20, 3), (3000, 30, 6)], 3000, 6, "OK", "kept up"),
    # 6. committing the same offset while lagging
    ([(1000, 10, 5), (2000, 10, 8), (3000, 10, 9)], 3000, 9, "STALL", "3 commits of offset 10"),
    # 7. moving, but the lag never goes down
    ([(1000, 10, 5), (2000, 20, 5), (3000, 30, 9)], 3000, 9, "WARN", "5 -> 9"),
    # 8. the lag is coming down
    ([(1000, 10, 30), (2000, 20, 20), (3000, 30, 10)], 3000, 10, "OK", "coming down"),
    ([(1000, 10, 5)], 1000, 5, "OK", "coming down"),          # one commit: nothing to judge yet
])
def test_rules(commits, now, lag, status, rule):
    got_status, got_rule = evaluate(window(*commits), now, lag)
    assert got_status == status and rule in got_rule, got_rule


def test_worst():
    assert worst(["OK", "STALL", "WARN"]) == "STALL"
    assert worst(["OK", "ERR", "STOP"]) == "ERR"
    assert worst([]) == "OK"


#: group -> [(t, offset, log end sampled just before the commit)], on its own topic (partition 0)
GROUPS = {
    "ok": [(1000, 10, 10), (2000, 20, 20), (3000, 30, 30)],
    "warn": [(1000, 10, 15), (2000, 20, 30), (3000, 30, 50)],
    "stall": [(1000, 10, 20), (2000, 10, 25), (3000, 10, 30)],
    "stop": [(1000, 10, 20), (1500, 20, 30)],
    "rewind": [(1000, 20, 30), (2000, 10, 30), (3000, 15, 30)],
    "recovering": [(1000, 10, 40), (2000, 20, 40), (3000, 30, 40)],
}
STATUS = {"ok": "OK", "warn": "WARN", "stall": "STALL", "stop": "STOP", "rewind": "ERR", "recovering": "OK"}


def test_lag_status_table(spark, tmp_path):
    """One journal, six groups: each gets its status; the lag now comes from the last log-end
    sample (t=3500), which is also the evaluation time."""
    w = JournalWriter(journal_dir(str(tmp_path)), 0)
    w.append({"t": 0, "event": "journal_opened", "node": 1})
    for group, commits in GROUPS.items():
        for t, offset, end in commits:                     # a sample, then the commit it precedes
            w.append({"t": t, "event": "log_end_offset", "topic": f"t-{group}", "partition": 0,
                      "offset": end, "log_start": 0})
            w.append({"t": t, "shard": 0, "event": "offsets_committed", "group": group, "generation": 1,
                      "member": "m", "generation_sent": 1, "commits": 1,
                      "offsets": [{"topic": f"t-{group}", "partitions": [0], "offsets": [offset]}]})
    for group, commits in GROUPS.items():
        w.append({"t": 3500, "event": "log_end_offset", "topic": f"t-{group}", "partition": 0,
                  "offset": commits[-1][2], "log_start": 0})
    w.close()
    tables, events = build_tables(spark, [str(tmp_path)])
    rows = {r["group"]: r for r in tables["lag_status"].collect()}
    assert {g: r["status"] for g, r in rows.items()} == STATUS
    assert {g: r["current_lag"] for g, r in rows.items()} == {
        g: c[-1][2] - c[-1][1] for g, c in GROUPS.items()}
    assert rows["warn"]["window_lags"] == [5, 10, 20]
    assert {r["group_status"] for r in rows.values()} == set(STATUS.values())
    assert {r["evaluated_at"].timestamp() for r in rows.values()} == {3.5}
    assert tables["rebalances"].count() == 0 and tables["committed_offsets"].count() == 0
    events.unpersist()
