"""The group event journal: the writer's rotation, retention and torn tails (offsets_log/journal.py),
the coordinator's events (coordinator/events.py), and the broker's switch."""

from __future__ import annotations

import logging
import os

import pytest

from log_store.fs import FakeFS

from broker.config import BrokerConfig, ConfigError
from broker.journal.recorder import BrokerJournal
from coordinator.actions import Journal
from tests.support.coordinator_harness import Harness
from offsets_log.journal import JournalWriter, journal_dir, read_journal, segments
from offsets_log.records import OffsetCommit

DIR = "/data/journal"


def _writer(fs, now=1_000, **kw) -> JournalWriter:
    return JournalWriter(DIR, now, fs=fs, buffer_bytes=1, **kw)      # every append is written


def _seqs(fs) -> list[int]:
    return [e["seq"] for e in read_journal(DIR, fs)]


def test_rotates_by_size_and_numbers_events_across_segments_and_reopens():
    """A full segment rolls to one named by its first event; seq goes on across a reopen."""
    fs = FakeFS()
    w = _writer(fs, segment_bytes=100)
    for i in range(10):
        w.append({"t": 1_000 + i, "event": "x", "n": i})
    names = segments(DIR, fs)
    assert len(names) > 2
    assert all(fs.size(os.path.join(DIR, n)) <= 100 for _, _, n in names)
    assert [first for first, _, _ in names] == sorted(first for first, _, _ in names)
    assert _seqs(fs) == list(range(10))
    w = _writer(fs, now=5_000, segment_bytes=100)
    w.append({"t": 5_000, "event": "y"})
    assert _seqs(fs) == list(range(11))
    assert segments(DIR, fs)[-1][:2] == (10, 5_000)      # every open starts a new segment


def test_rotates_by_age_and_deletes_segments_past_retention():
    fs = FakeFS()
    w = _writer(fs, segment_ms=1_000, retention_ms=10_000)
    w.append({"t": 1_000, "event": "a"})
    w.append({"t": 1_500, "event": "b"})
    w.append({"t": 2_100, "event": "c"})                  # the segment is 1.1 s old: new one
    assert [created for _, created, _ in segments(DIR, fs)] == [1_000, 2_100]
    w.flush(now_ms=12_000)                                 # empty buffer, segment too old: roll
    w.append({"t": 12_200, "event": "d"})
    # the first segment's successor was created 9.9 s before the last roll: kept; one more roll
    # 0.2 s later deletes it (its newest event is now older than the retention).
    assert [e["event"] for e in read_journal(DIR, fs)] == ["a", "b", "c", "d"]
    w.flush(now_ms=13_300)
    w.append({"t": 13_300, "event": "e"})
    assert [e["event"] for e in read_journal(DIR, fs)] == ["c", "d", "e"]


def test_torn_tail_is_skipped_with_a_warning_and_writing_goes_on(caplog):
    fs = FakeFS()
    w = _writer(fs)
    for i in range(3):
        w.append({"t": 1_000, "event": "x", "n": i})
    path = os.path.join(DIR, segments(DIR, fs)[-1][2])
    fs.append(path, b'{"t":1000,"event":"x","n":3,"se')          # a crash mid-write
    with caplog.at_level(logging.WARNING):
        assert [e["n"] for e in read_journal(DIR, fs)] == [0, 1, 2]
    assert "line 4 is torn or corrupt" in caplog.text
    w = _writer(fs, now=2_000)
    w.append({"t": 2_000, "event": "x", "n": 4})
    assert _seqs(fs) == [0, 1, 2, 3]                   # the torn event never got a number


def test_buffered_events_reach_disk_on_flush_only():
    fs = FakeFS()
    w = JournalWriter(DIR, 1_000, fs=fs)
    w.append({"t": 1_000, "event": "x"})
    assert list(read_journal(DIR, fs)) == []
    w.flush()
    assert _seqs(fs) == [0]


# --- what the coordinator records --------------------------------------------------------------

def _journal(h: Harness) -> list[Journal]:
    return [a for a in h.actions if isinstance(a, Journal)]


def _scenario(journal: bool) -> Harness:
    """Two members join; the leader rejoins; one commits; one leaves; the last one expires."""
    h = Harness()
    h.shard.journal = journal
    (leader, other), gen = h.stable_group(2)
    h.advance(100)
    t = h.join(leader)
    h.join(other)
    assert h.replies[t].generation_id == gen + 1
    h.sync(leader, gen + 1, assignments={leader: b"a", other: b"b"})
    h.sync(other, gen + 1)
    h.commit(other, gen + 1, {("t", 0): 5, ("t", 1): 7})
    h.leave(other)
    t = h.join(leader)
    h.sync(leader, gen + 2, assignments={leader: b"a"})
    h.advance(20_000)                                      # no heartbeat: the session expires
    return h


def test_coordinator_events_and_causes():
    h = _scenario(journal=True)
    leader, other = h.replies[1].member_id, h.replies[2].member_id
    events = [(j.event, j.generation, j.member, j.details.get("cause") or j.details.get("reason"))
              for j in _journal(h)]
    assert events == [
        ("member_joined", 0, leader, None),
        ("rebalance_started", 0, None, "new_member"),
        ("member_joined", 0, other, None),
        ("rebalance_completed", 1, None, None),
        ("sync_completed", 1, leader, None),
        ("rebalance_started", 1, None, "leader_rejoin"),
        ("rebalance_completed", 2, None, None),
        ("sync_completed", 2, leader, None),
        ("offsets_committed", 2, other, None),
        ("member_left", 2, other, None),
        ("rebalance_started", 2, None, "member_left"),
        ("rebalance_completed", 3, None, None),
        ("sync_completed", 3, leader, None),
        ("member_expired", 3, leader, "session_timeout"),
        ("rebalance_started", 3, None, "session_expiry"),
        ("rebalance_completed", 4, None, None),
    ]
    by_kind = {j.event: j for j in _journal(h)}
    assert [(c.topic, c.partition, c.offset) for c in by_kind["offsets_committed"].details["offsets"]] \
        == [("t", 0, 5), ("t", 1, 7)]
    completed = [j for j in _journal(h) if j.event == "rebalance_completed"]
    assert completed[1].details["members"] == [leader, other] and completed[-1].details["members"] == []
    # the second member arrived during the initial delay, which ran twice
    assert completed[0].details["duration_ms"] == 2 * h.config.group_initial_rebalance_delay_ms
    assert all(j.shard == h.shard.shard_id and j.group == "g" for j in _journal(h))


def test_journal_off_emits_nothing_and_changes_no_answer():
    """The switch: without the journal the shard's other actions are exactly the same."""
    on, off = _scenario(journal=True), _scenario(journal=False)
    assert _journal(off) == []
    assert [a for a in on.actions if not isinstance(a, Journal)] == off.actions


def test_journal_settings_by_name():
    config = BrokerConfig.build({"groupbroker.journal.enable": "false",
                                 "groupbroker.journal.sample.interval.ms": "500",
                                 "groupbroker.journal.commit.interval.ms": "0",
                                 "groupbroker.journal.segment.bytes": "1000",
                                 "groupbroker.journal.segment.ms": "2000",
                                 "groupbroker.journal.retention.ms": "3000"})
    assert (config.journal_enable, config.journal_sample_ms, config.journal_commit_interval_ms,
            config.journal_segment_bytes, config.journal_segment_ms,
            config.journal_retention_ms) == (False, 500, 0, 1000, 2000, 3000)
    assert BrokerConfig().journal_enable
    with pytest.raises(ConfigError):
        BrokerConfig.build({"groupbroker.journal.enable": "maybe"})


@pytest.mark.parametrize("enabled", [True, False], ids=["on", "off"])
def test_broker_switch(start_broker, enabled):
    """A broker writes <data-dir>/journal/ (opened, samples) unless the switch is off."""
    b = start_broker({"groupbroker.journal.enable": str(enabled).lower()})
    assert b.stop() == 0
    directory = journal_dir(str(b.data_dir))
    assert os.path.isdir(directory) == enabled
    if enabled:
        assert [e["event"] for e in read_journal(directory)] == ["journal_opened"]


def _commit(t: int, member: str, offsets: dict) -> Journal:
    records = [OffsetCommit("g", topic, p, o, -1, "", t, None) for (topic, p), o in offsets.items()]
    return Journal("offsets_committed", t, 7, "g", 3, member, {"generation_sent": 3, "offsets": records})


@pytest.mark.parametrize("interval", [1000, 0], ids=["merged", "every-commit"])
def test_commits_of_a_member_are_merged_within_the_interval(tmp_path, interval):
    """A member's commits within the interval become one line: the last offset of each
    partition, the time of the last commit, how many there were. 0 writes each one."""
    config = BrokerConfig(data_dir=str(tmp_path), journal_commit_interval_ms=interval)
    journal = BrokerJournal(config, wall_clock=lambda: 1.0)
    journal.record(_commit(10, "m1", {("a", 0): 5, ("a", 1): 7}))
    journal.record(_commit(20, "m2", {("a", 2): 1}))
    journal.record(_commit(30, "m1", {("a", 0): 6, ("b", 0): 2}))
    journal.close()
    lines = [e for e in read_journal(journal_dir(str(tmp_path))) if e["event"] == "offsets_committed"]
    got = [(e["t"], e["member"], e["commits"], e["offsets"]) for e in lines]
    if interval:
        assert got == [(30, "m1", 2, [{"topic": "a", "partitions": [0, 1], "offsets": [6, 7]},
                                      {"topic": "b", "partitions": [0], "offsets": [2]}]),
                       (20, "m2", 1, [{"topic": "a", "partitions": [2], "offsets": [1]}])]
    else:
        assert [(t, m, n) for t, m, n, _ in got] == [(10, "m1", 1), (20, "m2", 1), (30, "m1", 1)]
    assert all(e["group"] == "g" and e["shard"] == 7 and e["generation"] == 3 for e in lines)


def test_static_replacement_and_changed_protocols():
    """A static member's new incarnation fences the old id (no rebalance: same protocols);
    a member rejoining with other protocols starts a rebalance caused by metadata_change."""
    h = Harness()
    h.shard.journal = True
    t = h.join(instance="i-1")
    h.advance(h.config.group_initial_rebalance_delay_ms)
    old, gen = h.replies[t].member_id, h.replies[t].generation_id
    h.sync(old, gen, instance="i-1", assignments={old: b"x"})
    t = h.join(instance="i-1")                                      # a restart: same instance id
    new = h.replies[t].member_id
    assert new != old and h.replies[t].generation_id == gen
    t = h.join(new, instance="i-1", protocols=(("range", b"other-subscription"),))
    events = [(j.event, j.member, j.details.get("cause"), j.details.get("replaced_by"),
               j.details.get("replaces")) for j in _journal(h)][4:]   # after generation 1
    assert events == [("member_fenced", old, None, new, None),
                      ("member_joined", new, None, None, old),
                      ("rebalance_started", None, "metadata_change", None, None),
                      ("rebalance_completed", None, None, None, None)]
