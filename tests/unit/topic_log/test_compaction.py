"""Log compaction on real files: what survives, what is rewritten, and what is never touched.

Records are decoded with kafka-python's own reader (CRCs checked), so a batch the cleaner
rewrote must be one a client accepts.
"""

from __future__ import annotations

import dataclasses
import os

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from topic_log import InvalidRecord, TopicStore
from topic_log.compaction import CHECKPOINT_FILE, LogCleaner
from topic_log.verify import verify_partition
from protocol.errors import ErrorCode
from protocol.record_batch import DELETE_HORIZON, GZIP, LZ4, SNAPPY, ZSTD, build_batch, records_of
from protocol.records import read_batches

DAY = 86_400_000
NOW = 10 * DAY


def keyed(pairs, *, timestamp=1_000, compression=0, producer_id=-1, epoch=-1, sequence=-1) -> bytes:
    """One v2 batch of (key, value) records, record i stamped ``timestamp + i``."""
    builder = DefaultRecordBatchBuilder(2, compression, False, producer_id, epoch, sequence, 1 << 20)
    for i, (key, value) in enumerate(pairs):
        builder.append(i, timestamp=timestamp + i, key=key, value=value, headers=[])
    return bytes(builder.build())


def records(plog, start=None) -> list[tuple[int, bytes | None, bytes | None, int]]:
    """(offset, key, value, timestamp) of every record from ``start`` (the log start) on."""
    data = plog.read(plog.log_start_offset if start is None else start, 1 << 30)
    batches = MemoryRecords(data)
    out = []
    while (batch := batches.next_batch()) is not None:
        assert batch.validate_crc()
        out.extend((r.offset, r.key, r.value, r.timestamp) for r in batch)
    return out


def latest(rows) -> dict:
    """key -> (offset, value) of the last record of each key: what a changelog reader rebuilds."""
    return {key: (offset, value) for offset, key, value, _ in rows}


def headers_of(plog):
    return read_batches(plog.read(plog.log_start_offset, 1 << 30), verify_crc=False)


@pytest.fixture
def store(tmp_path):
    s = TopicStore(tmp_path, segment_bytes=400)
    s.create_topic("t", 1)
    yield s
    s.close()


def compacted(store, **settings):
    plog = store.partition("t", 0)
    plog.cleanup_policy = frozenset({"compact"})
    for name, value in settings.items():
        setattr(plog, name, value)
    return plog


def swap_in(cleaner, job, cleaned) -> bool:
    """What the broker's cleaner loop does after a cleaning: each group, then the checkpoint."""
    complete = True
    for group in cleaned.groups:
        complete = cleaner.swap_group(job, group, abandon=not complete) and complete
    cleaner.finish(job, cleaned, complete)
    return complete


def clean(store, cleaner, now=NOW) -> bool | None:
    """One round of the cleaner loop: None if nothing was cleanable, else whether it swapped."""
    job = cleaner.grab_filthiest(store, now)
    if job is None:
        return None
    cleaned = cleaner.clean(job)
    return cleaned is not None and swap_in(cleaner, job, cleaned)


def fill(plog, rounds, keys, *, tombstone=None, now=1_000):
    """``rounds`` batches, each a value for every key (round r's value of key k: b'k-r'),
    except ``tombstone`` = (round, key index), which gets a null value."""
    for r in range(rounds):
        pairs = [(b"k%d" % k, None if tombstone == (r, k) else b"%d-%d" % (k, r)) for k in range(keys)]
        plog.append(keyed(pairs, timestamp=now + r), now)


def seal(plog, now=1_000):
    """Append one-record batches of key b"filler" until the active segment rolls."""
    active = plog.segments()[-1].base_offset
    while plog.segments()[-1].base_offset == active:
        plog.append(keyed([(b"filler", b"f")], timestamp=now), now)


def test_latest_value_per_key_survives_at_its_offset(store, tmp_path):
    plog = compacted(store)
    fill(plog, 8, 4, tombstone=(5, 2))
    before = records(plog)
    active = plog.segments()[-1]
    active_bytes = open(active.path, "rb").read()
    assert clean(store, LogCleaner(str(tmp_path))) is True
    after = records(plog)
    assert latest(after) == latest(before)                   # a reader rebuilds the same state
    assert set(after) <= set(before)                          # offsets and timestamps unchanged
    cleaned = [r for r in after if r[0] < active.base_offset]
    assert len({key for _, key, _, _ in cleaned}) == len(cleaned)        # one record per key
    assert open(active.path, "rb").read() == active_bytes                # active segment untouched
    assert [r for r in after if r[0] >= active.base_offset] == \
        [r for r in before if r[0] >= active.base_offset]
    assert (plog.log_start_offset, plog.high_watermark) == (0, 32)
    assert verify_partition(plog.directory) == []


def test_reads_skip_the_gaps_and_offsets_are_never_reused(store, tmp_path):
    plog = compacted(store)
    fill(plog, 8, 4)
    assert clean(store, LogCleaner(str(tmp_path))) is True
    survivors = [o for o, *_ in records(plog)]
    gap = next(o for o in range(plog.high_watermark) if o not in survivors)
    assert records(plog, gap)[0][0] == min(o for o in survivors if o > gap)
    assert plog.append(keyed([(b"k0", b"new")]), 1_000).base_offset == 32


def test_tombstone_gets_a_delete_horizon_and_goes_after_it_on_a_later_cleaning(store, tmp_path):
    plog = compacted(store, delete_retention_ms=DAY, min_cleanable_dirty_ratio=0.01)
    fill(plog, 8, 4, tombstone=(7, 1))           # the tombstone is the latest of key k1
    cleaner = LogCleaner(str(tmp_path))
    seal(plog)
    assert clean(store, cleaner, now=NOW) is True
    (tombstone,) = [r for r in records(plog) if r[1] == b"k1"]
    assert tombstone[2] is None and tombstone[3] == 1_008        # its own timestamp is kept
    marked = [h for h in headers_of(plog) if h.attributes & DELETE_HORIZON]
    assert [h.base_timestamp for h in marked] == [NOW + DAY]
    seal(plog)                                   # new dirty data: another round
    assert clean(store, cleaner, now=NOW + DAY - 1) is True
    assert [r[2] for r in records(plog) if r[1] == b"k1"] == [None]     # not yet due
    seal(plog)
    assert clean(store, cleaner, now=NOW + DAY) is True
    assert [r for r in records(plog) if r[1] == b"k1"] == []
    assert set(latest(records(plog))) == {b"k0", b"k2", b"k3", b"filler"}


def compressed(pairs, codec: int, timestamp: int) -> bytes:
    """``keyed`` under any codec: kafka-python here has only gzip, so our builder compresses."""
    plain = keyed(pairs, timestamp=timestamp)
    like = dataclasses.replace(read_batches(plain)[0], attributes=codec)
    return build_batch(like, records_of(plain)[1])


def decoded(plog) -> list[tuple[int, bytes | None, bytes | None, int]]:
    """``records`` through our decoder (the only one here for snappy, lz4 and zstd)."""
    data = plog.read(plog.log_start_offset, 1 << 30)
    return [(r.offset, r.key, r.value, r.timestamp) for h in read_batches(data)
            for r in records_of(data[h.position:h.position + h.size])[1]]


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_rewritten_batches_keep_their_compression(store, tmp_path, codec):
    plog = compacted(store)
    for r in range(8):
        pairs = [(b"k%d" % k, b"%d-%d" % (k, r) + b"x" * 200) for k in range(r % 2, 6)]
        plog.append(compressed(pairs, codec, 1_000 + r), 1_000)
    seal(plog)
    before = decoded(plog)
    assert {h.compression for h in headers_of(plog) if h.base_offset < 44} == {codec}
    assert clean(store, LogCleaner(str(tmp_path))) is True
    kept = [h for h in headers_of(plog) if h.record_count and h.base_offset < 44]
    assert {h.compression for h in kept} == {codec}
    assert any(h.record_count == 1 for h in kept)            # partly superseded: rebuilt
    assert latest(decoded(plog)) == latest(before)
    assert set(decoded(plog)) <= set(before)


def test_a_batch_whose_records_all_survive_is_copied_byte_for_byte(store, tmp_path):
    plog = compacted(store)
    unique = keyed([(b"u%d" % i, b"v") for i in range(3)])
    plog.append(unique, 1_000)
    fill(plog, 8, 4)
    assert clean(store, LogCleaner(str(tmp_path))) is True
    assert plog.read(0, 1)[:len(unique)] == unique


def test_a_producers_last_batch_stays_as_an_empty_batch_and_keeps_its_sequence(store, tmp_path):
    plog = compacted(store)
    idempotent = keyed([(b"k0", b"a"), (b"k1", b"b")], producer_id=7, epoch=0, sequence=0)
    plog.append(idempotent, 1_000)
    fill(plog, 8, 4)                             # supersedes both of its records
    assert clean(store, LogCleaner(str(tmp_path))) is True
    first = headers_of(plog)[0]
    assert (first.base_offset, first.last_offset_delta, first.record_count) == (0, 1, 0)
    assert (first.producer_id, first.producer_epoch, first.base_sequence) == (7, 0, 0)
    assert first.compression == 0 and first.base_timestamp == -1
    plog.close()
    reopened = compacted(TopicStore(tmp_path, segment_bytes=400))
    assert reopened.append(idempotent, 1_000).base_offset == 0          # still known: a duplicate
    follow_up = keyed([(b"k0", b"c")], producer_id=7, epoch=0, sequence=2)
    assert reopened.append(follow_up, 1_000).base_offset == reopened.high_watermark - 1


def test_the_last_batch_of_each_group_stays_so_segments_end_where_the_next_begins(store, tmp_path):
    plog = compacted(store)
    fill(plog, 8, 4)
    sealed_ends = [s.base_offset for s in plog.segments()[1:]]
    assert clean(store, LogCleaner(str(tmp_path))) is True
    segments = plog.segments()
    assert [s.next_offset for s in segments[:-1]] == [s.base_offset for s in segments[1:]]
    assert set(s.base_offset for s in segments[1:]) <= set(sealed_ends)
    assert any(h.record_count == 0 for h in headers_of(plog))


def test_a_fetch_never_answers_only_the_empty_batches_of_superseded_groups(store, tmp_path):
    plog = compacted(store)
    fill(plog, 16, 4)
    seal(plog)
    plog.append(keyed([(b"k0", b"last")]), 1_000)
    assert clean(store, LogCleaner(str(tmp_path))) is True
    only_empty = [s for s in plog.segments()[:-1]
                  if all(h.record_count == 0 for h in headers_of_segment(plog, s))]
    assert len(only_empty) >= 3                  # groups whose every record was superseded
    offset, answers = plog.log_start_offset, 0
    while offset < plog.high_watermark:          # as a consumer fetches, a segment at a time
        batches = read_batches(plog.read(offset, 1 << 20, one_segment=True), verify_crc=True)
        assert any(b.record_count for b in batches), f"only empty batches at offset {offset}"
        offset = batches[-1].base_offset + batches[-1].last_offset_delta + 1
        answers += 1
    assert answers < len(plog.segments())


def headers_of_segment(plog, seg):
    with open(seg.path, "rb") as f:
        return read_batches(f.read(), verify_crc=False)


def test_min_compaction_lag_keeps_recent_segments_out(store, tmp_path):
    plog = compacted(store, min_compaction_lag_ms=1_000)
    fill(plog, 4, 4, now=10_000)                 # timestamps 10_000..10_006
    fill(plog, 4, 4, now=50_000)
    young = plog.segments()[plog._segment_index(16)].base_offset     # holds 50_000's first batch
    before = records(plog, young)
    cleaner = LogCleaner(str(tmp_path))
    job = cleaner.grab_filthiest(store, 50_500)
    assert job is not None and job.first_uncleanable == young       # it waits
    assert swap_in(cleaner, job, cleaner.clean(job))
    assert records(plog, young) == before
    assert clean(store, cleaner, now=60_000) is True
    assert [key for o, key, *_ in records(plog) if o < plog.segments()[-1].base_offset].count(b"k0") == 1


def test_dirty_ratio_decides_and_the_checkpoint_remembers_what_was_cleaned(store, tmp_path):
    plog = compacted(store, min_cleanable_dirty_ratio=1.0)
    fill(plog, 8, 4)
    cleaner = LogCleaner(str(tmp_path))
    assert clean(store, cleaner) is None         # all dirty is a ratio of 1.0: not above 1.0
    plog.min_cleanable_dirty_ratio = 0.5
    assert clean(store, cleaner) is True
    end = plog.segments()[-1].base_offset
    assert open(tmp_path / CHECKPOINT_FILE).read() == f"0\n1\nt 0 {end}\n"
    assert clean(store, cleaner) is None         # nothing dirty since
    assert clean(store, LogCleaner(str(tmp_path))) is None       # also after a restart


def test_max_compaction_lag_cleans_below_the_dirty_ratio(store, tmp_path):
    plog = compacted(store, min_cleanable_dirty_ratio=0.99)
    fill(plog, 8, 4)
    cleaner = LogCleaner(str(tmp_path))
    assert clean(store, cleaner) is True
    fill(plog, 2, 4, now=20_000)
    assert clean(store, cleaner, now=30_000) is None
    plog.max_compaction_lag_ms = 5_000
    assert clean(store, cleaner, now=30_000) is True


def test_a_compacted_log_also_rolls_when_max_compaction_lag_passes(store):
    plog = compacted(store, segment_bytes=1 << 20, max_compaction_lag_ms=5_000)
    plog.append(keyed([(b"k", b"v")], timestamp=1_000), 1_000)
    plog.append(keyed([(b"k", b"v")], timestamp=6_000), 6_000)
    assert len(plog.segments()) == 1
    plog.append(keyed([(b"k", b"v")], timestamp=6_001), 6_001)
    assert len(plog.segments()) == 2


def test_compacted_topic_refuses_records_without_a_key(store):
    plog = compacted(store)
    with pytest.raises(InvalidRecord) as err:
        plog.append(keyed([(b"k", b"v"), (None, b"v"), (None, b"w")]), 1_000)
    assert err.value.error_code == ErrorCode.INVALID_RECORD
    message = "Compacted topic cannot accept message without key in topic partition t-0"
    assert err.value.record_errors == [(1, message), (2, message)]
    assert str(err.value).startswith("One or more records have been rejected due to 2 record errors")
    assert plog.high_watermark == 0


def test_records_without_a_key_written_before_compaction_was_enabled_are_dropped(store, tmp_path):
    plog = store.partition("t", 0)
    plog.append(keyed([(None, b"legacy")]), 1_000)
    fill(plog, 8, 4)
    compacted(store)
    assert clean(store, LogCleaner(str(tmp_path))) is True
    assert all(key is not None for _, key, *_ in records(plog))


def test_compact_only_topic_is_not_cut_by_retention_but_compact_delete_is(store):
    plog = compacted(store, retention_ms=1)
    fill(plog, 8, 4)
    assert plog.apply_retention(NOW) == 0
    plog.cleanup_policy = frozenset({"compact", "delete"})
    assert plog.apply_retention(NOW) > 0


def test_retention_during_cleaning_abandons_the_swap_and_leaves_no_file(store, tmp_path):
    plog = compacted(store)
    fill(plog, 8, 4)
    cleaner = LogCleaner(str(tmp_path))
    job = cleaner.grab_filthiest(store, NOW)
    cleaned = cleaner.clean(job)
    plog.cleanup_policy, plog.retention_ms = frozenset({"compact", "delete"}), 1
    assert plog.apply_retention(NOW) > 0
    survivors = records(plog)
    assert swap_in(cleaner, job, cleaned) is False
    assert records(plog) == survivors
    assert not [n for n in os.listdir(plog.directory) if n.endswith((".swap", ".cleaned"))]


def test_a_cleaning_stopped_midway_leaves_no_file_and_changes_nothing(store, tmp_path, monkeypatch):
    plog = compacted(store)
    fill(plog, 8, 4)
    before = records(plog)
    cleaner = LogCleaner(str(tmp_path))
    job = cleaner.grab_filthiest(store, NOW)
    written = []
    real_filter = cleaner._filter

    def filter_then_stop(*args, **kwargs):        # the broker stops once a batch is written
        written.append([n for n in os.listdir(plog.directory) if n.endswith(".cleaned")])
        cleaner.stop()
        return real_filter(*args, **kwargs)

    monkeypatch.setattr(cleaner, "_filter", filter_then_stop)
    assert cleaner.clean(job) is None
    assert written[0]                              # it stopped with a cleaned file half written
    assert not [n for n in os.listdir(plog.directory) if n.endswith((".swap", ".cleaned"))]
    assert records(plog) == before


def test_a_compacted_log_reopens_the_same_after_clean_and_unclean_shutdowns(store, tmp_path):
    plog = compacted(store)
    fill(plog, 8, 4, tombstone=(6, 0))
    assert clean(store, LogCleaner(str(tmp_path))) is True
    expected = records(plog)
    store.close()
    for _ in range(2):                            # with the clean-shutdown marker, then without
        again = TopicStore(tmp_path, segment_bytes=400)
        assert records(again.partition("t", 0)) == expected
        assert again.partition("t", 0).high_watermark == 32
    again.close()


def test_aborted_transactions_are_removed_and_open_ones_hold_the_cleaner(store):
    """Kafka's cleaner drops the records of aborted transactions (never letting them replace
    older values) and keeps every marker; it cleans nothing at or past the last stable offset."""
    plog = compacted(store)
    plog.append(keyed([(b"a", b"kept")]), 1_000)
    txn = DefaultRecordBatchBuilder(2, 0, True, 7, 0, 0, 1 << 20)
    txn.append(0, timestamp=1_000, key=b"a", value=b"aborted", headers=[])
    plog.append(bytes(txn.build()), 1_000)
    plog.write_marker(7, 0, False, 0, 1_000)
    seal(plog)
    clean(store, LogCleaner(store.data_dir))
    rows = records(plog)
    assert latest(rows)[b"a"][1] == b"kept" and b"aborted" not in [v for _, _, v, _ in rows]
    assert any(h.is_control for h in headers_of(plog))                 # the marker stays
    open_txn = DefaultRecordBatchBuilder(2, 0, True, 8, 0, 0, 1 << 20)
    open_txn.append(0, timestamp=1_000, key=b"a", value=b"open", headers=[])
    plog.append(bytes(open_txn.build()), 1_000)
    stable = plog.last_stable_offset
    seal(plog)
    clean(store, LogCleaner(store.data_dir))
    assert b"kept" in [v for o, _, v, _ in records(plog) if o < stable]  # not replaced: still open
