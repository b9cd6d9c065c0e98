"""A crash at every step of compaction's segment swap, simulated by leaving the files as that
step leaves them and opening the data directory again: nothing is lost, nothing comes back."""

from __future__ import annotations

import os

import pytest

from log_store import segments
from topic_log import TopicStore
from topic_log.compaction import LogCleaner
from topic_log.partition_log import FILES
from topic_log.verify import verify_partition
from tests.unit.topic_log.test_compaction import NOW, compacted, fill, latest, records, seal, swap_in

STEPS = ["cleaned file torn", "cleaned file whole", "swap file made", "one old segment removed",
         "all old segments removed", "swap renamed"]


def leftovers(directory) -> list[str]:
    return [n for n in os.listdir(directory) if n.endswith((segments.CLEANED, segments.SWAP))]


def prepared(tmp_path):
    """A compacted partition whose cleaning wrote its swap files (groups of two segments)."""
    store = TopicStore(tmp_path, segment_bytes=400)
    store.create_topic("t", 1)
    plog = compacted(store)
    fill(plog, 12, 4, tombstone=(9, 3))
    seal(plog)
    plog.segment_bytes = 700
    cleaner = LogCleaner(str(tmp_path))
    job = cleaner.grab_filthiest(store, NOW)
    cleaned = cleaner.clean(job)
    assert len(cleaned.groups) >= 2 and all(len(g.old) == 2 for g in cleaned.groups)
    return store, plog, cleaner, job, cleaned


def crash_at(step: str, directory: str, group) -> None:
    base = group.old[0].base_offset
    swap, cleaned = segments.swap_path(directory, base), segments.cleaned_path(directory, base)
    if step.startswith("cleaned file"):
        os.replace(swap, cleaned)
        if step == "cleaned file torn":
            os.truncate(cleaned, os.path.getsize(cleaned) // 2)
    elif step.endswith("removed"):
        for old in group.old[1:] if step.startswith("all") else group.old[1:2]:
            os.remove(old.path)
    elif step == "swap renamed":
        segments.install(FILES, directory, base, [s.base_offset for s in group.old])


@pytest.mark.parametrize("step", STEPS)
def test_a_crash_at_any_step_of_the_swap_loses_nothing(tmp_path, step):
    store, plog, _, _, cleaned = prepared(tmp_path)
    original, directory = records(plog), plog.directory
    first = cleaned.groups[0]
    crash_at(step, directory, first)              # the other groups' swaps are left as made
    reopened = TopicStore(tmp_path).partition("t", 0)            # no close: a crash
    after = records(reopened)
    assert leftovers(directory) == []
    assert latest(after) == latest(original)
    assert set(after) <= set(original)            # nothing invented, every offset as it was
    assert reopened.high_watermark == plog.high_watermark
    assert verify_partition(directory) == []
    start, end = first.old[0].base_offset, first.old[-1].next_offset
    in_group = [r for r in after if start <= r[0] < end]
    if step.startswith("cleaned file"):           # rolled back: the old segments as they were
        assert in_group == [r for r in original if start <= r[0] < end]
    else:                                          # rolled forward: one record per key at most
        assert len({key for _, key, *_ in in_group}) == len(in_group)


def test_a_swap_whose_segments_retention_deleted_is_discarded(tmp_path):
    store, plog, _, _, cleaned = prepared(tmp_path)
    first = cleaned.groups[0]
    kept = first.old[1]
    expected = [r for r in records(plog) if kept.base_offset <= r[0] < kept.next_offset]
    os.remove(first.old[0].path)                  # retention took the oldest segment meanwhile
    reopened = TopicStore(tmp_path).partition("t", 0)
    assert leftovers(plog.directory) == []
    assert reopened.log_start_offset == kept.base_offset
    assert [r for r in records(reopened) if r[0] < kept.next_offset] == expected


def test_a_failing_swap_reopens_the_log_which_completes_it(tmp_path, monkeypatch):
    store, plog, cleaner, job, cleaned = prepared(tmp_path)
    original = records(plog)
    real_fsync_dir, calls = FILES.fsync_dir, []

    def failing_once(path):
        calls.append(path)
        if len(calls) == 1:                        # after the first group's removals
            raise OSError(5, "injected EIO")
        real_fsync_dir(path)

    monkeypatch.setattr(FILES, "fsync_dir", failing_once)
    assert swap_in(cleaner, job, cleaned) is False              # abandoned: cleaned again later
    assert leftovers(plog.directory) == []
    assert latest(records(plog)) == latest(original)
    assert set(records(plog)) <= set(original)
    assert verify_partition(plog.directory) == []
