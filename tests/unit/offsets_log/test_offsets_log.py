"""offsets_log: framing, recovery after torn/corrupt writes, crash-safe compaction, durability."""

from __future__ import annotations

import copy
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsets_log.compaction import compact
from log_store.fs import SimulatedCrash
from offsets_log.errors import LogFailedError
from log_store.fs import FakeFS, RealFS
from offsets_log.flush import flush_pass
from offsets_log.log import ShardLog, shard_dir, verify
from offsets_log.records import (Record, group_metadata_record, offset_commit_record,
                                 tombstone)
from offsets_log.segment import HEADER, _frame, encode_marker, encode_record, scan
from offsets_log.tools import compact_all, dump, verify_all

DIR = "/data/__consumer_offsets-0"
RETENTION = 86_400_000


def commit(partition: int, offset: int, group: str = "g") -> Record:
    return offset_commit_record(group, "t", partition, offset, -1, "", 1000 + offset)


def workload() -> list[Record]:
    """Overwrites, a group record, and tombstones: every kind of record compaction must handle."""
    out = [commit(p % 3, p) for p in range(9)]
    out.append(group_metadata_record("g", protocol_type="consumer", generation=1,
                                     protocol="range", leader="m"))
    out.append(tombstone(commit(1, 0).key))
    out += [commit(p, 100 + p, group="h") for p in range(3)]
    out.append(tombstone(commit(0, 0, group="h").key))
    out.append(commit(2, 200))
    return out


def replay(pairs) -> dict[bytes, bytes]:
    """What a shard rebuilds: the latest value per key, tombstones removing keys."""
    state: dict[bytes, bytes] = {}
    for _, r in pairs:
        if r.value is None:
            state.pop(r.key, None)
        else:
            state[r.key] = r.value
    return state


def build(records, *, segment_bytes=250, fs=None, now_ms=0, **kw) -> tuple[FakeFS, ShardLog]:
    fs = fs or FakeFS()
    log = ShardLog(DIR, fs, segment_bytes=segment_bytes, **kw)
    for r in records:
        log.append([r], now_ms)
    log.sync()
    return fs, log


def records_of(log: ShardLog) -> list[Record]:
    return [r for _, r in log.read_all()]


# --- framing ------------------------------------------------------------------------------

def test_frame_layout():
    frame = encode_record(5, 7, b"k", None)
    length, _crc, fmt = HEADER.unpack_from(frame)
    assert fmt == 1 and length == len(frame) - 8
    frames, valid = scan(frame + encode_marker(6))
    assert valid == len(frame) + len(encode_marker(6))
    assert [(f.offset, f.key, f.value, f.is_marker) for f in frames] == [
        (5, b"k", None, False), (6, None, None, True)]


def test_scan_stops_at_zero_length():
    good = encode_record(0, 0, b"k", b"v")
    assert scan(good + bytes(20))[1] == len(good)


frames_strategy = st.lists(st.tuples(st.binary(max_size=12), st.none() | st.binary(max_size=12)),
                           max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.one_of(
    st.binary(max_size=200),
    # CRC-valid frames whose payload is nonsense must stop the scan too, never raise
    st.lists(st.builds(_frame, st.integers(0, 3), st.binary(max_size=40)), max_size=4).map(
        b"".join),
    st.builds(lambda recs, cut, flip: _mangle(recs, cut, flip), frames_strategy,
              st.integers(0, 400), st.none() | st.tuples(st.integers(0, 400), st.integers(1, 255)))))
def test_scan_never_raises_and_is_idempotent_on_its_valid_prefix(buf):
    frames, valid = scan(buf)
    assert 0 <= valid <= len(buf)
    assert scan(buf[:valid]) == (frames, valid)
    assert all(f.position < valid for f in frames)


def _mangle(recs, cut, flip) -> bytes:
    buf = bytearray(b"".join(encode_record(i, i, k, v) for i, (k, v) in enumerate(recs)))
    if flip is not None and buf:
        buf[flip[0] % len(buf)] ^= flip[1]
    return bytes(buf[:cut])


@settings(max_examples=100, deadline=None)
@given(frames_strategy)
def test_scan_reads_back_what_was_encoded(recs):
    buf = b"".join(encode_record(i, 10 * i, k, v) for i, (k, v) in enumerate(recs))
    frames, valid = scan(buf)
    assert valid == len(buf)
    assert [(f.offset, f.append_ms, f.key, f.value) for f in frames] == [
        (i, 10 * i, k, v) for i, (k, v) in enumerate(recs)]


# --- layout, rolling, reading --------------------------------------------------------------

def test_directory_and_segment_names_follow_kafka(tmp_path):
    log = ShardLog.for_shard(str(tmp_path), 37, segment_bytes=120)
    for i in range(4):
        log.append([commit(0, i)], now_ms=0)
    log.sync()
    names = sorted(os.listdir(shard_dir(str(tmp_path), 37)))
    assert os.path.basename(shard_dir(str(tmp_path), 37)) == "__consumer_offsets-37"
    assert names[0] == "00000000000000000000.log" and len(names) > 1
    assert all(len(n) == 24 and n.endswith(".log") for n in names)
    log.close()


def test_append_returns_offsets_and_read_all_replays_in_order():
    fs, log = build([])
    assert log.append([commit(0, 1), commit(1, 2)], now_ms=5) == [0, 1]
    assert log.append([commit(2, 3)], now_ms=5) == [2]
    assert [o for o, _ in log.read_all()] == [0, 1, 2]
    assert log.append([], now_ms=5) == []


def test_segments_roll_at_the_configured_size():
    fs, log = build(workload(), segment_bytes=250)
    assert len(log.bases) > 3
    sizes = [fs.size(os.path.join(DIR, f"{b:020d}.log")) for b in log.bases]
    assert all(s <= 250 for s in sizes)
    assert records_of(ShardLog(DIR, fs)) == workload()


# --- recovery: torn tails and corruption ----------------------------------------------------

def _files(fs: FakeFS) -> list[tuple[str, bytes]]:
    return [(n, fs.read(os.path.join(DIR, n))) for n in fs.listdir(DIR)]


def test_truncation_at_every_byte_recovers_a_prefix_and_appends_work():
    records = workload()
    fs, log = build(records, segment_bytes=300)
    files = _files(fs)
    total = 0
    for index, (name, data) in enumerate(files):
        for cut in range(len(data) + 1):
            broken = FakeFS()
            broken.makedirs(DIR)
            for n, d in files[:index] + [(name, data[:cut])] + files[index + 1:]:
                broken.create(os.path.join(DIR, n))
                broken.append(os.path.join(DIR, n), d)
            got = records_of(ShardLog(DIR, broken, segment_bytes=300))
            assert got == records[:len(got)], (name, cut)
            reopened = ShardLog(DIR, broken, segment_bytes=300)
            extra = commit(9, 999)
            offset, = reopened.append([extra], now_ms=0)
            reopened.sync()
            after = ShardLog(DIR, broken, segment_bytes=300).read_all()
            assert [r for _, r in after] == got + [extra], (name, cut)
            assert after[-1][0] == offset and verify(DIR, broken) == []
            total += 1
    assert total > 500


def test_flipped_byte_is_named_by_verify_and_recovery_stops_before_it():
    records = workload()
    fs, log = build(records, segment_bytes=10_000)        # one segment
    (name, data), = _files(fs)
    starts = [f.position for f in scan(data)[0]]
    for pos in range(len(data)):
        frame_start = max(s for s in starts if s <= pos)
        broken = FakeFS()
        broken.makedirs(DIR)
        path = os.path.join(DIR, name)
        broken.create(path)
        broken.append(path, data[:pos] + bytes([data[pos] ^ 0x5A]) + data[pos + 1:])
        problems = verify(DIR, broken)
        assert [(p.segment, p.position) for p in problems] == [(name, frame_start)], pos
        got = records_of(ShardLog(DIR, broken))
        assert got == records[:starts.index(frame_start)], pos


def test_corruption_in_an_earlier_segment_discards_the_later_ones():
    records = workload()
    fs, log = build(records, segment_bytes=250)
    first = os.path.join(DIR, f"{log.bases[0]:020d}.log")
    data = bytearray(fs.read(first))
    data[-3] ^= 1                     # last record of the first segment
    fs.truncate(first, 0)
    fs.append(first, bytes(data))
    n_first = len(scan(bytes(data))[0]) + 1
    assert verify(DIR, fs)[0].segment == f"{log.bases[0]:020d}.log"
    got = records_of(ShardLog(DIR, fs))
    assert got == records[:n_first - 1]
    assert any(n.endswith(".discarded") for n in fs.listdir(DIR))


def test_out_of_order_offsets_are_reported():
    fs = FakeFS()
    fs.makedirs(DIR)
    path = os.path.join(DIR, f"{0:020d}.log")
    fs.create(path)
    fs.append(path, encode_record(0, 0, b"a", b"1") + encode_record(0, 0, b"b", b"2"))
    assert [p.position for p in verify(DIR, fs)] == [len(encode_record(0, 0, b"a", b"1"))]
    assert [r.key for r in records_of(ShardLog(DIR, fs))] == [b"a"]


def test_leftovers_are_removed_on_open():
    fs, log = build(workload())
    for name in ("x.tmp", f"{0:020d}.log.cleaned"):
        fs.create(os.path.join(DIR, name))
    assert verify(DIR, fs)
    assert records_of(ShardLog(DIR, fs)) == workload()
    assert verify(DIR, fs) == []
    assert not [n for n in fs.listdir(DIR) if not n.endswith(".log")]


# --- crashes, faults and durability ---------------------------------------------------------

def test_crash_keeps_exactly_what_was_fsynced():
    fs, log = build(workload()[:4])
    log.append([commit(5, 5)], now_ms=0)        # acknowledged by nobody: not fsynced
    fs.crash()
    assert records_of(ShardLog(DIR, fs)) == workload()[:4]


def test_crash_after_roll_keeps_the_rolled_segments():
    fs, log = build(workload(), segment_bytes=200)
    fs.crash()
    assert records_of(ShardLog(DIR, fs)) == workload()


def test_failed_write_fails_the_log_until_reopened():
    fs, log = build(workload()[:3])
    fs.fail_next_write, fs.fail_partial = True, 7       # torn write
    with pytest.raises(LogFailedError):
        log.append([commit(0, 50)], now_ms=0)
    with pytest.raises(LogFailedError):
        log.append([commit(0, 51)], now_ms=0)
    reopened = ShardLog(DIR, fs)
    assert records_of(reopened) == workload()[:3]
    reopened.append([commit(0, 52)], now_ms=0)
    assert records_of(ShardLog(DIR, fs))[-1] == commit(0, 52)


def test_failed_fsync_fails_the_log():
    fs, log = build(workload()[:3])
    log.append([commit(0, 50)], now_ms=0)
    fs.fail_next_fsync = True
    with pytest.raises(LogFailedError):
        log.sync()
    with pytest.raises(LogFailedError):
        log.sync()
    fs.crash()
    got = records_of(ShardLog(DIR, fs))
    assert got == workload()[:3]


class CountingFS(FakeFS):
    def __init__(self):
        super().__init__()
        self.fsyncs = 0

    def fsync(self, path):
        self.fsyncs += 1
        super().fsync(path)


def test_appending_never_fsyncs_and_a_flush_pass_covers_every_log():
    fs = CountingFS()
    logs = [ShardLog(shard_dir("/data", n), fs) for n in (0, 1)]
    for i in range(10):
        logs[0].append([commit(0, i)], now_ms=0)
    logs[1].append([commit(1, 0)], now_ms=0)
    assert fs.fsyncs == 0
    assert flush_pass(logs) == [9, 0] and fs.fsyncs == 2
    fs.crash()
    assert [len(ShardLog(shard_dir("/data", n), fs).read_all()) for n in (0, 1)] == [10, 1]


def test_a_failed_fsync_in_a_pass_fails_only_that_log():
    fs = FakeFS()
    first, second = ShardLog(shard_dir("/data", 0), fs), ShardLog(shard_dir("/data", 1), fs)
    first.append([commit(0, 1)], now_ms=0)
    second.append([commit(1, 1)], now_ms=0)
    fs.fail_next_fsync = True
    failed, covered = flush_pass([first, second])
    assert isinstance(failed, LogFailedError) and covered == 0
    with pytest.raises(LogFailedError):
        first.append([commit(0, 2)], now_ms=0)
    second.append([commit(1, 2)], now_ms=0)


# --- compaction -------------------------------------------------------------------------------

def test_compaction_keeps_latest_per_key_and_never_touches_the_active_segment():
    fs, log = build(workload(), segment_bytes=250)
    before = replay(log.read_all())
    active = fs.read(log.active_path)
    result = compact(log, now_ms=0)
    assert result.records_out < result.records_in
    assert fs.read(log.active_path) == active
    after = log.read_all()
    assert replay(after) == before
    inactive_keys = [r.key for o, r in after if o < log.bases[-1]]
    assert len(inactive_keys) == len(set(inactive_keys))
    assert [o for o, _ in after] == sorted(o for o, _ in after)
    reopened = ShardLog(DIR, fs, segment_bytes=250)
    assert reopened.read_all() == after and reopened.next_offset == log.next_offset
    assert verify(DIR, fs) == []
    compact(reopened, now_ms=0)                       # idempotent on a cleaned log
    assert reopened.read_all() == after


def test_tombstones_are_kept_for_delete_retention_then_dropped():
    fs, log = build([commit(0, 1), commit(1, 1)], segment_bytes=10**6, now_ms=1000)
    log.append([tombstone(commit(0, 1).key)], now_ms=2000)
    log._roll()
    log.append([commit(2, 2)], now_ms=3000)           # active segment
    compact(log, now_ms=2000 + RETENTION - 1)
    kept = records_of(log)
    assert tombstone(commit(0, 1).key) in kept and commit(0, 1) not in kept
    compact(log, now_ms=2000 + RETENTION)
    assert records_of(log) == [commit(1, 1), commit(2, 2)]
    assert records_of(ShardLog(DIR, fs)) == [commit(1, 1), commit(2, 2)]


def test_no_inactive_segment_means_nothing_to_do():
    fs, log = build(workload()[:2], segment_bytes=10**6)
    assert compact(log, now_ms=0).segments_in == 0


def test_appends_continue_after_compaction_with_the_right_offsets():
    fs, log = build(workload(), segment_bytes=250)
    next_offset = log.next_offset
    compact(log, now_ms=0)
    assert log.append([commit(7, 7)], now_ms=0) == [next_offset]


def test_a_crash_at_every_step_of_compaction_loses_nothing():
    fs, log = build(workload(), segment_bytes=250)
    expected = replay(log.read_all())
    old = log.read_all()
    done = copy.deepcopy(fs)
    compact(ShardLog(DIR, done, segment_bytes=250), now_ms=10**12)   # tombstones droppable
    new = ShardLog(DIR, done).read_all()
    assert new != old
    step = 0
    while True:
        trial = copy.deepcopy(fs)
        trial_log = ShardLog(DIR, trial, segment_bytes=250)
        trial.crash_after_ops = trial.ops + step
        try:
            compact(trial_log, now_ms=10**12)
        except SimulatedCrash:
            pass
        else:
            break
        trial.crash()
        recovered = ShardLog(DIR, trial, segment_bytes=250).read_all()
        assert recovered in (old, new), f"crash before op {step}: a mix of old and new"
        assert replay(recovered) == expected, step
        assert verify(DIR, trial) == []
        # and compaction still completes after recovery
        again = ShardLog(DIR, trial, segment_bytes=250)
        compact(again, now_ms=10**12)
        assert replay(ShardLog(DIR, trial).read_all()) == expected
        step += 1
    assert step >= 8                                  # create, append, fsync, renames, removes...


def test_a_crash_while_finishing_a_swap_is_finished_on_the_next_open():
    fs, log = build(workload(), segment_bytes=250)
    expected = replay(log.read_all())
    fs.crash_after_ops = fs.ops + 5                   # after cleaned->swap rename + dir fsync
    with pytest.raises(SimulatedCrash):
        compact(log, now_ms=0)
    fs.crash()
    assert any(n.endswith(".swap") for n in fs.listdir(DIR))
    for step in range(12):                            # now crash recovery itself at each step
        trial = copy.deepcopy(fs)
        trial.crash_after_ops = trial.ops + step
        try:
            ShardLog(DIR, trial, segment_bytes=250)
        except SimulatedCrash:
            trial.crash()
        assert replay(ShardLog(DIR, trial).read_all()) == expected, step


def test_a_swap_left_by_the_former_order_without_its_first_segment_is_completed():
    """Before the swap was shared with the topic log, step 3 removed the first segment too."""
    fs, log = build(workload(), segment_bytes=250)
    done = copy.deepcopy(fs)
    compact(ShardLog(DIR, done, segment_bytes=250), now_ms=0)
    first = os.path.join(DIR, f"{log.bases[0]:020d}.log")
    fs.crash_after_ops = fs.ops + 5                   # after cleaned->swap rename + dir fsync
    with pytest.raises(SimulatedCrash):
        compact(log, now_ms=0)
    fs.crash()
    fs.remove(first)                                  # the former step 3, then a crash again
    fs.fsync_dir(DIR)
    fs.crash()
    assert ShardLog(DIR, fs).read_all() == ShardLog(DIR, done).read_all()
    assert verify(DIR, fs) == []


def test_real_fs_recovery_truncates_before_appending(tmp_path):
    directory = shard_dir(str(tmp_path), 0)
    log = ShardLog(directory, RealFS())
    log.append(workload()[:3], now_ms=0)
    log.sync()
    log.close()
    path = os.path.join(directory, f"{0:020d}.log")
    with open(path, "ab") as f:
        f.write(b"\x00\x00\x00\x30garbage")
    assert verify(directory)
    log = ShardLog(directory, RealFS())
    log.append([commit(0, 9)], now_ms=0)
    log.sync()
    log.close()
    assert verify(directory) == []
    assert records_of(ShardLog(directory)) == workload()[:3] + [commit(0, 9)]


def test_offline_tools_dump_verify_and_compact():
    fs = FakeFS()
    fs.makedirs("/data")
    for shard in (3, 12):
        log = ShardLog(shard_dir("/data", shard), fs, segment_bytes=250)
        log.append(workload(), now_ms=0)
        log.append([commit(0, 77)], now_ms=0)
        log.sync()
    lines = list(dump("/data", fs=fs))
    assert len(lines) == 2 * (len(workload()) + 1)
    assert lines[0].startswith("shard=3 offset=0 append_ms=0 OffsetCommit(group='g'")
    assert "OffsetCommitTombstone" in "".join(lines) and "GroupMetadata(" in "".join(lines)
    assert verify_all("/data", fs=fs) == []
    results = compact_all("/data", now_ms=0, shard=12, fs=fs)
    assert list(results) == [12] and results[12].records_out < results[12].records_in
    assert len(list(dump("/data", shard=12, fs=fs))) < len(workload()) + 1
    path = os.path.join(shard_dir("/data", 3), f"{0:020d}.log")
    fs.truncate(path, fs.size(path) - 1)
    (shard, problem), = verify_all("/data", fs=fs)[:1]
    assert shard == 3 and problem.segment == f"{0:020d}.log" and "torn" in problem.reason


def test_read_all_after_reopen_sees_later_appends_and_compaction():
    """The frames recovery already scanned are reused only while nothing has changed."""
    fs, log = build(workload())
    reopened = ShardLog(DIR, fs, segment_bytes=250)
    first = reopened.read_all()
    assert [o for o, _ in first] == list(range(len(workload())))
    reopened = ShardLog(DIR, fs, segment_bytes=250)
    reopened.append([commit(99, 1)], now_ms=0)
    assert reopened.read_all()[-1][1] == commit(99, 1)
    reopened = ShardLog(DIR, fs, segment_bytes=250)
    compact(reopened, now_ms=0)
    assert replay(reopened.read_all()) == replay(first + [(0, commit(99, 1))])


def test_real_fs_appends_and_fsyncs_on_its_kept_descriptor_even_at_emfile(tmp_path):
    from tests.support.fd_limit import no_new_descriptors
    log = ShardLog(shard_dir(str(tmp_path), 0), RealFS())
    log.append([commit(0, 1)], now_ms=0)                 # opens the one append descriptor
    with no_new_descriptors():
        for offset in range(2, 50):
            log.append([commit(0, offset)], now_ms=0)    # append + fsync, no open()
            assert log.sync() == offset - 1
    log.close()
    assert records_of(ShardLog(shard_dir(str(tmp_path), 0))) == [commit(0, o) for o in range(1, 50)]


def test_compaction_settles_transactions_and_keeps_open_ones():
    """Committed transactional commits become plain ones, aborted ones and their markers go,
    an open transaction's records stay with the plain commits they would replace; replaying the
    cleaned log through the coordinator gives what replaying the original gave."""
    from coordinator.config import CoordinatorConfig
    from offsets_log.records import TransactionMarker, decode, encode_record
    from tests.support.coordinator_harness import Harness

    def txn(partition: int, offset: int, pid: int) -> Record:
        return commit(partition, offset)._replace(producer_id=pid, producer_epoch=0)

    def marker(pid: int, committed: bool) -> Record:
        return encode_record(TransactionMarker(pid, 0, committed, 0))

    records = [commit(0, 1), txn(0, 2, 7), txn(1, 3, 8), commit(1, 4), marker(7, True),
               marker(8, False), commit(2, 5), txn(2, 6, 9), txn(0, 7, 9)]
    records += [commit(3, n) for n in range(10, 20)]                 # seal the segments above
    fs, log = build(records, segment_bytes=200)
    assert log.bases[-1] > 8                    # every transactional record is in a sealed segment

    def rebuilt(pairs):
        h = Harness(CoordinatorConfig(offsets_topic_num_partitions=1))
        for _, r in pairs:
            h.shard.replay(decode(r))
        pending = {tp: c.offset for by_group in h.shard.offset_manager.pending.values()
                   for tp, c in by_group.get("g", {}).items()}
        return {tp: c.offset for tp, c in h.shard.offsets["g"].items()}, pending

    from offsets_log.records import OffsetCommit
    from offsets_log.tools import records as read_records
    shown = [(r.partition, r.offset) for _, r in read_records("/data", 0, fs) if isinstance(r, OffsetCommit)]
    assert shown[:4] == [(0, 1), (1, 4), (0, 2), (2, 5)]       # a commit shows at its marker; aborted
    assert (2, 6) not in shown and (0, 7) not in shown         # and open ones never
    before = rebuilt(log.read_all())
    assert before == ({("t", 0): 2, ("t", 1): 4, ("t", 2): 5, ("t", 3): 19}, {("t", 2): 6, ("t", 0): 7})
    compact(log, now_ms=0)
    after = log.read_all()
    assert rebuilt(after) == before
    assert not any(r.control >= 0 for _, r in after if _ < log.bases[-1])      # markers settled
    assert [r.producer_id for _, r in after if r.producer_id >= 0] == [9, 9]   # the open one
    reopened = ShardLog(DIR, fs, segment_bytes=200)
    assert rebuilt(reopened.read_all()) == before
