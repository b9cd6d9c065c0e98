"""Topic storage against corrupt files and failing disks, on real files.

Recovery must never delete an intact segment nor hand an offset out twice; a clean shutdown
skips recovery, a crash checks only the active segment; a failing disk is answered with
KAFKA_STORAGE_ERROR and the partition serves again by itself once writes work.
"""

from __future__ import annotations

import errno
import logging
import os

import pytest

from topic_log import PartitionLog, StorageError, TopicStore
from log_store.disk import Disk
from topic_log.producer_state import ProducerIds
from topic_log.store import CLEAN_SHUTDOWN_FILE
from protocol.errors import ErrorCode
from tests.unit.topic_log.test_batches import batch, values_of

RECORDS_PER_BATCH, BATCHES_PER_SEGMENT, SEGMENTS = 5, 3, 8


def one_batch(i: int, **kw) -> bytes:
    return batch([b"%04d-%d" % (i, r) for r in range(RECORDS_PER_BATCH)], **kw)


BATCH_SIZE = len(one_batch(0))


def eight_segments(directory, **kw) -> PartitionLog:
    """A partition of 8 segments, 3 batches of 5 records each (offsets 0-119), closed."""
    plog = PartitionLog(directory, segment_bytes=BATCHES_PER_SEGMENT * BATCH_SIZE, **kw)
    for i in range(SEGMENTS * BATCHES_PER_SEGMENT):
        plog.append(one_batch(i), 0)
    plog.close()
    return plog


def segment_path(directory, n: int):
    return directory / f"{n * BATCHES_PER_SEGMENT * RECORDS_PER_BATCH:020d}.log"


def flip(path, position: int) -> bytes:
    data = bytearray(path.read_bytes())
    data[position] ^= 0x40
    path.write_bytes(bytes(data))
    return bytes(data)


def all_offsets(plog: PartitionLog) -> list[int]:
    return [offset for offset, _ in values_of(plog.read(plog.log_start_offset, 1 << 24))]


HIGH_WATERMARK = SEGMENTS * BATCHES_PER_SEGMENT * RECORDS_PER_BATCH
LATER_OFFSETS = list(range(BATCHES_PER_SEGMENT * RECORDS_PER_BATCH, HIGH_WATERMARK))


@pytest.mark.parametrize("clean_shutdown", [False, True], ids=["after-crash", "after-clean-shutdown"])
def test_a_flipped_byte_in_the_oldest_segment_keeps_the_later_seven(tmp_path, clean_shutdown):
    directory = tmp_path / "t-0"
    eight_segments(directory)
    oldest = flip(segment_path(directory, 0), BATCH_SIZE + 100)     # inside the 2nd batch's records
    reopened = PartitionLog(directory, segment_bytes=BATCHES_PER_SEGMENT * BATCH_SIZE,
                            clean_shutdown=clean_shutdown)
    assert reopened.high_watermark == HIGH_WATERMARK
    assert segment_path(directory, 0).read_bytes() == oldest            # never cut
    assert all(segment_path(directory, n).exists() for n in range(SEGMENTS))
    later = values_of(reopened.read(LATER_OFFSETS[0], 1 << 24))
    assert [offset for offset, _ in later] == LATER_OFFSETS
    assert later[0][1] == b"0003-0"
    assert reopened.append(one_batch(99), 0).base_offset == HIGH_WATERMARK     # no offset reused


def test_an_unparsable_oldest_segment_leaves_a_gap_and_keeps_the_rest(tmp_path, caplog):
    directory = tmp_path / "t-0"
    eight_segments(directory)
    flip(segment_path(directory, 0), BATCH_SIZE + 9)                    # the 2nd batch's length field
    reopened = PartitionLog(directory, segment_bytes=BATCHES_PER_SEGMENT * BATCH_SIZE)
    assert reopened.high_watermark == HIGH_WATERMARK
    assert [o for o, _ in values_of(reopened.read(0, 1 << 24))][:5] == [0, 1, 2, 3, 4]
    # offsets 5-14 are unreadable: a fetch there continues at the next segment
    assert [o for o, _ in values_of(reopened.read(7, 1 << 24))][:2] == [15, 16]
    assert "offsets 5-14 are unreadable" in caplog.text


def test_a_missing_middle_segment_keeps_every_later_one(tmp_path, caplog):
    directory = tmp_path / "t-0"
    eight_segments(directory)
    os.remove(segment_path(directory, 3))                               # offsets 45-59
    reopened = PartitionLog(directory, segment_bytes=BATCHES_PER_SEGMENT * BATCH_SIZE)
    assert reopened.high_watermark == HIGH_WATERMARK
    expected = [o for o in range(HIGH_WATERMARK) if not 45 <= o < 60]
    assert all_offsets(reopened) == expected
    assert [o for o, _ in values_of(reopened.read(50, 1 << 24))][0] == 60
    assert reopened.append(one_batch(99), 0).base_offset == HIGH_WATERMARK
    assert "no segment holds offsets 45-59" in caplog.text


def test_a_crash_checks_only_the_active_segment_a_clean_shutdown_none(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    store = TopicStore(tmp_path, segment_bytes=BATCHES_PER_SEGMENT * BATCH_SIZE)
    store.create_topic("t", 1)
    for i in range(SEGMENTS * BATCHES_PER_SEGMENT):
        store.partition("t", 0).append(one_batch(i), 0)
    store.close()
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    directory = tmp_path / "t-0"
    sealed = flip(segment_path(directory, 0), 100)
    active = flip(segment_path(directory, SEGMENTS - 1), 3 * BATCH_SIZE - 5)    # last batch's records

    caplog.clear()
    clean = TopicStore(tmp_path, segment_bytes=BATCHES_PER_SEGMENT * BATCH_SIZE)
    assert "clean shutdown recorded: opening 1 partition log(s) without recovery" in caplog.text
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()                # a crash now is unclean
    assert clean.partition("t", 0).high_watermark == HIGH_WATERMARK      # nothing was checked
    assert segment_path(directory, SEGMENTS - 1).read_bytes() == active

    caplog.clear()
    crashed = TopicStore(tmp_path, segment_bytes=BATCHES_PER_SEGMENT * BATCH_SIZE)   # `clean` never closed
    assert "no clean shutdown recorded: recovering the active segment" in caplog.text
    plog = crashed.partition("t", 0)
    assert plog.high_watermark == HIGH_WATERMARK - RECORDS_PER_BATCH     # the bad tail batch is cut
    assert segment_path(directory, 0).read_bytes() == sealed            # sealed: not even read for CRCs
    assert "invalid batch at byte" in caplog.text and "00000000000000000105.log" in caplog.text


def test_a_flipped_byte_mid_active_segment_is_kept_when_valid_batches_follow(tmp_path):
    """A torn write is never followed by a valid batch: this is bit rot, and cutting there
    would drop the intact batches after it and reuse their offsets."""
    directory = tmp_path / "t-0"
    plog = PartitionLog(directory)
    for i in range(4):
        plog.append(one_batch(i), 0)
    plog.close()
    flip(directory / f"{0:020d}.log", BATCH_SIZE + 100)
    reopened = PartitionLog(directory)
    assert reopened.high_watermark == 4 * RECORDS_PER_BATCH
    assert values_of(reopened.read(10, 1 << 20))[0] == (10, b"0002-0")


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_only_the_active_segment_holds_a_descriptor(tmp_path):
    directory = tmp_path / "t-0"
    eight_segments(directory)
    before = open_descriptors()
    reopened = PartitionLog(directory, segment_bytes=BATCHES_PER_SEGMENT * BATCH_SIZE)
    assert open_descriptors() == before                                  # opened on first use
    for i in range(2 * BATCHES_PER_SEGMENT):                            # rolls twice
        reopened.append(one_batch(i), 0)
    reopened.flush()
    assert len(reopened.read(0, 1 << 24)) > 0
    assert open_descriptors() == before + 1
    reopened.close()
    assert open_descriptors() == before


class TornDisk(Disk):
    """Writes half of what it is given, then fails: a disk filling up mid-write."""

    def write(self, fd, data, path):
        if self.failing is not None:
            os.write(fd, data[:len(data) // 2])
        return super().write(fd, data, path)


@pytest.mark.parametrize("error", [errno.ENOSPC, errno.EIO], ids=["ENOSPC", "EIO"])
def test_failed_writes_answer_storage_error_and_recover_without_reopening(tmp_path, error, caplog):
    caplog.set_level(logging.INFO)
    disk = TornDisk()
    plog = PartitionLog(tmp_path / "t-0", segment_bytes=2 * BATCH_SIZE, disk=disk)
    for i in range(3):
        plog.append(one_batch(i), 0)
    active = tmp_path / "t-0" / f"{10:020d}.log"
    size = active.stat().st_size
    disk.fail(error)
    for i in range(3):
        with pytest.raises(StorageError) as refused:
            plog.append(one_batch(3 + i), 0)
        assert refused.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert active.stat().st_size == size                                 # the torn half is cut off
    assert plog.high_watermark == 15
    assert values_of(plog.read(0, 1 << 20))[-1] == (14, b"0002-4")       # reads go on meanwhile
    disk.heal()
    assert plog.append(one_batch(3), 0).base_offset == 15
    disk.fail(error)
    with pytest.raises(StorageError):                                    # the roll's fsync fails
        plog.append(one_batch(4), 0)
    disk.heal()
    assert plog.append(one_batch(4), 0).base_offset == 20               # and the roll succeeds
    assert (tmp_path / "t-0" / f"{20:020d}.log").stat().st_size == BATCH_SIZE
    plog.flush()
    assert all_offsets(plog) == list(range(25))
    assert "back online" in caplog.text
    assert all_offsets(PartitionLog(tmp_path / "t-0")) == list(range(25))


def test_a_failed_fsync_fails_the_flush_and_writes_resume(tmp_path):
    disk = Disk()
    plog = PartitionLog(tmp_path / "t-0", disk=disk)
    plog.append(one_batch(0), 0)
    disk.fail(errno.EIO)
    with pytest.raises(StorageError):
        plog.flush()
    assert plog.close() is False                                         # not a clean shutdown
    disk.heal()
    reopened = PartitionLog(tmp_path / "t-0", disk=disk)
    assert reopened.append(one_batch(1), 0).base_offset == 5


def test_a_partition_that_cannot_be_opened_is_refused_alone(tmp_path, caplog):
    store = TopicStore(tmp_path)
    store.create_topic("t", 2)
    store.close()
    segment = tmp_path / "t-0" / f"{0:020d}.log"
    os.remove(segment)
    os.mkdir(segment)                                                    # unreadable as a segment
    again = TopicStore(tmp_path)
    with pytest.raises(StorageError):
        again.partition("t", 0).append(one_batch(0), 0)
    assert again.partition("t", 0).high_watermark == -1
    assert again.partition("t", 1).append(one_batch(0), 0).base_offset == 0
    assert "t-0" in caplog.text and "KAFKA_STORAGE_ERROR" in caplog.text
    os.rmdir(segment)                                                    # repaired: serves again
    assert again.partition("t", 0).append(one_batch(0), 0).base_offset == 0


@pytest.mark.parametrize("content", [b"garbage\n", b"\xff\xfe", b"-5\n"], ids=["text", "binary", "negative"])
def test_a_corrupt_producer_ids_file_never_reissues_an_id(tmp_path, content, caplog):
    store = TopicStore(tmp_path)
    store.create_topic("t", 1)
    issued = [store.producer_ids.allocate() for _ in range(3)]
    store.partition("t", 0).append(batch([b"x"], producer_id=123_456, epoch=0, sequence=0), 0)
    store.close()
    (tmp_path / ProducerIds.FILE).write_bytes(content)
    again = TopicStore(tmp_path)
    fresh = again.producer_ids.allocate()
    assert fresh > max(issued) and fresh > 123_456
    assert "producer_ids is unreadable" in caplog.text
    assert TopicStore(tmp_path).producer_ids.allocate() > fresh         # the file was rewritten


def test_a_creation_cut_short_before_any_metadata_is_discarded(tmp_path, caplog):
    os.makedirs(tmp_path / "half-0")
    os.makedirs(tmp_path / "half-1")
    store = TopicStore(tmp_path)
    assert store.topics() == []
    assert not (tmp_path / "half-0").exists()
    assert "discarding partition(s) [0, 1] of a creation cut short" in caplog.text


def test_a_creation_cut_short_after_partition_0_is_completed(tmp_path):
    store = TopicStore(tmp_path)
    store.create_topic("big", 50)
    store.close()
    for p in range(20, 50):                                              # lost by a power cut
        for name in os.listdir(tmp_path / f"big-{p}"):
            os.remove(tmp_path / f"big-{p}" / name)
        os.rmdir(tmp_path / f"big-{p}")
    (tmp_path / "big-7" / "partition.metadata").write_text("")        # written but never synced
    assert len(TopicStore(tmp_path).topic("big").partitions) == 50


def test_appends_and_flushes_need_no_new_descriptor(tmp_path):
    from tests.support.fd_limit import no_new_descriptors
    plog = PartitionLog(tmp_path / "t-0")
    plog.append(one_batch(0), 0)
    with no_new_descriptors():
        for i in range(1, 20):
            plog.append(one_batch(i), 0)
            plog.flush()
        assert values_of(plog.read(95, 1 << 20)) == [(95 + r, b"0019-%d" % r) for r in range(5)]


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 1 MiB tmpfs (root only): a disk that really fills up."""
    import subprocess
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root to mount a tmpfs")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)      # lazy: open files may remain


def test_a_really_full_disk_refuses_then_heals(small_tmpfs):
    plog = PartitionLog(small_tmpfs / "t-0")
    plog.append(one_batch(0), 0)
    filler = small_tmpfs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(OSError) as full:                         # take every free byte
            while True:
                os.write(fd, b"\0" * 4096)
    finally:
        os.close(fd)
    assert full.value.errno == errno.ENOSPC
    big = batch([os.urandom(1000) for _ in range(20)])               # more than a page
    with pytest.raises(StorageError):
        plog.append(big, 0)
    filler.unlink()
    assert plog.append(big, 0).base_offset == RECORDS_PER_BATCH
    plog.close()
    assert [o for o in all_offsets(PartitionLog(small_tmpfs / "t-0"))] == list(range(25))
