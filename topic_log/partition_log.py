"""One partition's log: v2 record batches stored exactly as produced, in offset-named segments.

``<dir>/<20-digit base offset>.log`` files hold whole batches back to back, their base
offsets rewritten to the offsets this log assigned (the CRC does not cover the base offset,
so the client's bytes stay valid and Fetch can return them without re-encoding). The only
index is in memory: per batch its last offset, position and max timestamp, rebuilt on open.

Recovery follows Kafka's LogLoader: every segment but the last was fsynced when it rolled
(our recovery point is always the active segment's base), so sealed segments are only walked
by their headers and never changed; a sealed segment that stops parsing, or a missing one,
leaves a gap of unreadable offsets (Fetch continues at the next segment) and every later
segment stays. Batches of a sealed segment may leave offsets out (compaction keeps each
survivor at its offset; topic_log/compaction.py), those of the active one never do, and
an interrupted compaction swap is completed (or dropped) before any segment is read. Only
the active segment is CRC-checked, and only after an unclean shutdown
(``clean_shutdown=False``): it is truncated at the first invalid batch, as
LogSegment.recover does, unless valid batches follow a CRC mismatch (bit rot rather than a
torn write), which is kept so that no offset is ever handed out twice.

Only the active segment holds a file descriptor (opened on first use); sealed segments are
opened per read. A failed write or fsync (ENOSPC, EIO) answers StorageError and marks the log
failed; the next append reopens the active segment, cuts off the failed write's bytes and
tries again, so the partition serves again by itself once the disk does.

Synchronous and not thread-safe: call it from one task (or one worker thread) at a time;
time comes in as arguments so tests and trio's clock decide it.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import mmap
import os
import struct
from array import array
from typing import NamedTuple

from crc32c import crc32c

from protocol.control_records import control_batch
from protocol.exceptions import DecodeError
from protocol.record_batch import records_of
from protocol.records import HEADER, BatchHeader, check_crc, read_batches, with_base_offset
from log_store.disk import Disk
from log_store.files import atomic_write, fsync_dir
from log_store.fs import RealFS
from log_store.segments import SUFFIX, finish_interrupted, segment_name

from .batches import check_batch
from .errors import (CorruptRecords, InvalidProducerEpoch, InvalidRecord, InvalidTimestamp, MessageTooLarge,
                     OffsetOutOfRange, StorageError, TopicsError, TransactionCoordinatorFenced, InvalidTxnState,
                     UnknownTopicOrPartition)
from .producer_state import ProducerStateTable
from .transactions import PartitionTransactions

log = logging.getLogger(__name__)

#: the file operations of the compaction swap (log_store/segments.py); writes go through ``disk``
FILES = RealFS()

#: DeleteRecords' log start offset, durable before it is answered (Kafka checkpoints every
#: partition's in one log-start-offset-checkpoint file per log dir, lazily)
LOG_START_FILE = "log-start-offset"
_LOG_APPEND_TIME = 0x08                # attributes bit: timestamps are the broker's
_MAX_TIMESTAMP_AT = 35                 # byte position of max timestamp in the header
_ATTRIBUTES_AT = 21
_CRC_AT = 17


class AppendInfo(NamedTuple):
    """Produce's answer: the offsets the batches got (a duplicate's original ones)."""
    base_offset: int
    last_offset: int
    log_append_time: int               # -1 unless the log uses LogAppendTime


class TimestampOffset(NamedTuple):
    """ListOffsets' answer for a timestamp: (-1, -1) when no batch is that recent."""
    offset: int
    timestamp: int


class _Segment:
    """One segment file and its per-batch index (base/last offsets, positions, max timestamps).

    ``size`` counts the indexed bytes: a sealed segment whose tail does not parse keeps its
    file as it is, and only its indexed batches are ever read.
    """

    def __init__(self, path: str, base_offset: int) -> None:
        self.path, self.base_offset = path, base_offset
        self.fd: int | None = None     # only the active segment keeps one
        self.size = 0
        self.bases, self.lasts = array("q"), array("q")
        self.positions, self.max_timestamps = array("q"), array("q")
        self.largest_timestamp = -1
        self.roll_timestamp = -1       # when segment.ms counts from: first batch's timestamp
        self.rolls_by_record_time = False   # whether that is a record timestamp (else a clock's)

    @property
    def next_offset(self) -> int:
        return self.lasts[-1] + 1 if self.lasts else self.base_offset

    def add(self, base: int, last: int, size: int, max_timestamp: int, now_ms: int) -> None:
        if not self.lasts:
            self.roll_timestamp = max_timestamp if max_timestamp >= 0 else now_ms
            self.rolls_by_record_time = max_timestamp >= 0
        self.bases.append(base)
        self.lasts.append(last)
        self.positions.append(self.size)
        self.max_timestamps.append(max_timestamp)
        self.largest_timestamp = max(self.largest_timestamp, max_timestamp)
        self.size += size

    def retention_timestamp(self) -> int:
        """Kafka's largestTimestamp: the newest batch timestamp, else the file's mtime."""
        if self.largest_timestamp >= 0:
            return self.largest_timestamp
        return int(os.stat(self.path).st_mtime * 1000)

    def pread(self, start: int, end: int) -> bytes:
        fd = self.fd if self.fd is not None else os.open(self.path, os.O_RDONLY)
        try:
            chunks, pos = [], start
            while pos < end:
                chunk = os.pread(fd, end - pos, pos)
                if not chunk:
                    raise StorageError(f"{self.path} is shorter than its index ({pos} < {end})")
                chunks.append(chunk)
                pos += len(chunk)
            return b"".join(chunks)
        finally:
            if fd != self.fd:
                os.close(fd)

    def close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)


class PartitionLog:
    """The append/read/retention API of one partition directory (created if missing).

    ``clean_shutdown`` says the store found Kafka's clean-shutdown marker: every segment was
    fsynced and closed, so recovery checks no CRC. ``disk`` carries the writes and fsyncs.
    ``cleanup_policy`` and the compaction settings are Kafka's topic configs of those names;
    topic_log/compaction.py reads them (plain attributes: they may change while open).
    """

    def __init__(self, directory: str | os.PathLike[str], *, segment_bytes: int = 1 << 30,
                 segment_ms: int = 604800000, retention_bytes: int = -1,
                 retention_ms: int = 604800000, max_message_bytes: int = 1048588,
                 log_append_time: bool = False, clean_shutdown: bool = False,
                 disk: Disk | None = None, cleanup_policy: frozenset[str] = frozenset({"delete"}),
                 delete_retention_ms: int = 86_400_000, min_compaction_lag_ms: int = 0,
                 max_compaction_lag_ms: int = 2**63 - 1,
                 min_cleanable_dirty_ratio: float = 0.5) -> None:
        self.directory = os.fspath(directory)
        #: stamped into every batch appended, as Kafka's leader does (a cluster bumps it when
        #: the partition changes leader); consumers check their position against it (KIP-320)
        self.leader_epoch = 0
        self.segment_bytes, self.segment_ms = segment_bytes, segment_ms
        self.retention_bytes, self.retention_ms = retention_bytes, retention_ms
        self.cleanup_policy = frozenset(cleanup_policy)
        self.delete_retention_ms = delete_retention_ms
        self.min_compaction_lag_ms, self.max_compaction_lag_ms = min_compaction_lag_ms, max_compaction_lag_ms
        self.min_cleanable_dirty_ratio = min_cleanable_dirty_ratio
        self.max_message_bytes = max_message_bytes
        self.log_append_time = log_append_time
        #: message.timestamp.before.max.ms and .after.max.ms: how far a CreateTime record's
        #: timestamp may lie from the broker's clock
        self.timestamp_before_max_ms, self.timestamp_after_max_ms = 2**63 - 1, 3_600_000
        self.disk = disk or Disk()
        self.producers = ProducerStateTable()
        self.transactions = PartitionTransactions()
        self._segments: list[_Segment] = []
        self._closed = False
        self._failed: str | None = None      # why writes stopped; the next append retries
        self._unflushed = False               # the active segment may hold bytes not yet fsynced
        self._deleted_below = 0               # DeleteRecords' log start offset
        try:
            os.makedirs(self.directory, exist_ok=True)
            self._segments, self.producers = self._recover(clean_shutdown)
            self._start_at_checkpoint()
            self._unflushed = not clean_shutdown and self._segments[-1].size > 0
        except OSError as exc:
            self._segments = []
            self._failed = f"cannot open the log: {exc}"
            log.error("%s: %s; the partition answers KAFKA_STORAGE_ERROR until it can be opened",
                      self.directory, self._failed)

    # -- offsets ---------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        """-1 while the log cannot be opened (as Kafka reports an offline partition); DeleteRecords
        may have moved it past the first segment's base."""
        return max(self._segments[0].base_offset, self._deleted_below) if self._segments else -1

    @property
    def high_watermark(self) -> int:
        """The next offset to assign; every written batch is committed (single replica)."""
        return self._segments[-1].next_offset if self._segments else -1

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def failed(self) -> str | None:
        """Why the last write failed (None when writes work)."""
        return self._failed

    # -- produce ---------------------------------------------------------------------------

    def append(self, records: bytes, now_ms: int,
               headers: list[BatchHeader] | None = None) -> AppendInfo:
        """Validate, number and write a produce request's record batches (``headers``: the
        batches as the caller already parsed them, CRCs not yet checked).

        Raises CorruptRecords, InvalidRecord, MessageTooLarge, InvalidTxnState,
        InvalidProducerEpoch, OutOfOrderSequence or StorageError; nothing is written then.
        """
        self._check_open()
        try:
            if headers is None:
                headers = read_batches(records, verify_crc=False)
            for header in headers:
                check_crc(records, header)
        except DecodeError as exc:
            raise CorruptRecords(str(exc)) from exc
        self._check_batches(headers)
        self._validate_records(records, headers, now_ms)
        for h in headers:
            if not h.is_transactional and h.producer_id in self.transactions.ongoing:
                raise InvalidTxnState(f"producer {h.producer_id} wrote a plain batch inside its "
                                      "open transaction")
        duplicate = self.producers.check(headers)
        if duplicate is not None:
            log.debug("%s: duplicate batch, answering offsets %d-%d", self.directory,
                      duplicate.first_offset, duplicate.last_offset)
            return AppendInfo(duplicate.first_offset, duplicate.last_offset,
                              duplicate.timestamp if self.log_append_time else -1)
        return self._place(records, headers, now_ms)

    def write_marker(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                     now_ms: int, transaction_version: int = 0) -> int:
        """Append the marker that ends ``producer_id``'s transaction here (WriteTxnMarkers); its
        offset. As Kafka's leader checks a marker: its epoch may not be older than the
        producer's (nor, from transaction version 2, the same while that transaction is open),
        nor its coordinator's epoch older than the last marker's. Raises InvalidProducerEpoch,
        TransactionCoordinatorFenced, StorageError."""
        self._check_open()
        entry = self.producers.entry(producer_id)
        if entry is not None:
            where = f"producer {producer_id} at offset {self.high_watermark} in {self.directory}"
            stale = producer_epoch < entry.epoch or (
                transaction_version >= 2 and producer_epoch == entry.epoch and producer_id in self.transactions.ongoing
                and producer_epoch != 2**15 - 1)
            if stale:
                raise InvalidProducerEpoch(f"Epoch of {where} is {producer_epoch}, older than the last seen "
                                           f"epoch {entry.epoch} (TV{transaction_version})")
            if entry.coordinator_epoch > coordinator_epoch:
                raise TransactionCoordinatorFenced(f"Invalid coordinator epoch for {where}: {coordinator_epoch} "
                                                   f"(zombie), {entry.coordinator_epoch} (current)")
        batch = control_batch(producer_id, producer_epoch, commit, coordinator_epoch, now_ms)
        return self._place(batch, read_batches(batch, verify_crc=False), now_ms).base_offset

    def in_transaction(self, producer_id: int, producer_epoch: int) -> bool:
        """Whether the producer has a transaction open here at this epoch (Kafka's
        hasOngoingTransaction: its writes need no check with the transaction coordinator)."""
        entry = self.producers.entry(producer_id)
        return entry is not None and entry.epoch == producer_epoch and producer_id in self.transactions.ongoing

    @property
    def last_stable_offset(self) -> int:
        """Where read_committed readers stop: the first offset of the earliest open transaction."""
        return self.transactions.last_stable_offset(self.high_watermark)

    def _note_transaction(self, producers: ProducerStateTable, header: BatchHeader, offset: int,
                          batch) -> None:
        coordinator_epoch = self.transactions.record(header, offset, batch)
        if coordinator_epoch is not None and (entry := producers.entry(header.producer_id)) is not None:
            entry.coordinator_epoch = coordinator_epoch

    def _place(self, records: bytes, headers: list[BatchHeader], now_ms: int) -> AppendInfo:
        """Number and write checked batches; index them and their producers and transactions."""
        was_failed = self._reopen_if_failed()
        total = sum(h.size for h in headers)
        newest = now_ms if self.log_append_time else max(h.max_timestamp for h in headers)
        self._maybe_roll(total, now_ms, newest)
        active = self._segments[-1]
        base = offset = active.next_offset
        view = memoryview(records)
        out, placed = [], []
        for h in headers:
            batch = with_base_offset(view[h.position:h.position + h.size], offset, self.leader_epoch)
            if self.log_append_time:
                batch = _stamp_log_append_time(batch, now_ms)
            out.append(batch)
            placed.append((h, offset))
            offset += h.last_offset_delta + 1
        self._write(active, b"".join(out))
        if was_failed:
            self._failed = None
            log.info("%s: writes succeed again; the partition is back online", self.directory)
        for (h, at), batch in zip(placed, out):
            max_ts = now_ms if self.log_append_time else h.max_timestamp
            active.add(at, at + h.last_offset_delta, len(batch), max_ts, now_ms)
            self.producers.record(h, at)
            self._note_transaction(self.producers, h, at, batch)
        return AppendInfo(base, offset - 1, now_ms if self.log_append_time else -1)

    def _check_batches(self, headers: list[BatchHeader]) -> None:
        if not headers:
            raise InvalidRecord("no record batch")
        for h in headers:
            if h.is_control:
                raise InvalidRecord("clients may not write control batches")
            if h.size > self.max_message_bytes:
                raise MessageTooLarge(f"batch of {h.size} bytes exceeds max.message.bytes "
                                      f"{self.max_message_bytes}")
            if h.last_offset_delta < 0:
                raise CorruptRecords(f"negative last offset delta {h.last_offset_delta}")

    def _validate_records(self, records: bytes, headers: list[BatchHeader], now_ms: int) -> None:
        """Kafka's LogValidator, record by record: a compacted topic refuses records without a
        key; a CreateTime topic refuses timestamps more than message.timestamp.before.max.ms
        before now or message.timestamp.after.max.ms after it. Each refused record is named by
        its index in its batch (the produce answer's record_errors). A batch whose header alone
        shows every timestamp in range (its max timestamp, and any timestamp when the lower
        bound is unlimited) is decoded only for a compacted topic."""
        compacted = "compact" in self.cleanup_policy
        low = now_ms - self.timestamp_before_max_ms
        high = now_ms + self.timestamp_after_max_ms
        topic_partition = os.path.basename(self.directory)
        errors, bad_timestamp = [], False
        for h in headers:
            timed = not self.log_append_time and (h.max_timestamp > high or low > 0)
            if not compacted and not timed:
                continue
            try:
                _, decoded = records_of(memoryview(records)[h.position:h.position + h.size])
            except DecodeError as exc:
                raise CorruptRecords(str(exc)) from exc
            for i, r in enumerate(decoded):
                if compacted and r.key is None:
                    errors.append((i, "Compacted topic cannot accept message without key in topic "
                                      f"partition {topic_partition}"))
                elif timed and r.timestamp != -1 and not low <= r.timestamp <= high:
                    bad_timestamp = True
                    errors.append((i, f"Timestamp {r.timestamp} of message with offset {r.offset} is out "
                                      f"of range. The timestamp should be within [{low}, {high}]"))
        if bad_timestamp:
            raise InvalidTimestamp("One or more records have been rejected due to invalid timestamp",
                                   record_errors=errors)
        if errors:
            shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
            raise InvalidRecord(f"One or more records have been rejected due to {len(errors)} "
                                "record errors in total, and only showing the first three errors "
                                f"at most: [{shown}]", record_errors=errors)

    def _maybe_roll(self, incoming: int, now_ms: int, newest_timestamp: int) -> None:
        """Kafka's LogSegment.shouldRoll: segment.bytes, or segment.ms counted from the active
        segment's first batch timestamp to the incoming batches' largest one (from the clock
        when the first batch had no timestamp)."""
        active = self._segments[-1]
        if active.size == 0:
            return
        segment_ms = self.segment_ms        # Kafka: a compacted log also rolls for max.compaction.lag.ms
        if "compact" in self.cleanup_policy:
            segment_ms = min(segment_ms, self.max_compaction_lag_ms)
        waited = (newest_timestamp if active.rolls_by_record_time else now_ms) - active.roll_timestamp
        if active.size + incoming <= self.segment_bytes and waited <= segment_ms:
            return
        self._roll()

    def _roll(self) -> None:
        """Seal the active segment (fsynced) and start a new, empty one at the log end."""
        active = self._segments[-1]
        new = _Segment(os.path.join(self.directory, segment_name(active.next_offset)),
                       active.next_offset)
        try:
            self.disk.fsync(self._active_fd(), active.path)
            new.fd = os.open(new.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            if os.fstat(new.fd).st_size:        # left by a roll that failed: holds nothing acknowledged
                os.ftruncate(new.fd, 0)
            fsync_dir(self.directory)
        except OSError as exc:
            new.close()
            raise self._storage_error("segment roll failed", exc) from exc
        active.close()
        self._segments.append(new)
        self._unflushed = False
        log.info("%s: rolled new segment at offset %d", self.directory, new.base_offset)

    def _active_fd(self) -> int:
        active = self._segments[-1]
        if active.fd is None:
            active.fd = os.open(active.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        return active.fd

    def _write(self, segment: _Segment, data: bytes) -> None:
        view = memoryview(data)
        try:
            fd = self._active_fd()
            while view:
                view = view[self.disk.write(fd, view, segment.path):]
        except OSError as exc:
            if segment.fd is not None:
                try:
                    os.ftruncate(segment.fd, segment.size)
                except OSError as cut:
                    log.error("%s: could not cut a failed write back: %s", segment.path, cut)
            raise self._storage_error(f"write to {segment.path} failed", exc) from exc
        self._unflushed = True

    def _storage_error(self, what: str, exc: OSError) -> StorageError:
        """Mark the log failed (logged once per failure spell) and make the error to raise."""
        if self._failed is None:
            log.error("%s: %s (%s); produce answers KAFKA_STORAGE_ERROR until a write succeeds",
                      self.directory, what, exc)
        self._failed = f"{what}: {exc}"
        return StorageError(f"{self.directory}: {self._failed}")

    def _reopen_if_failed(self) -> bool:
        """After a failed write: reopen the active segment at its last good size; True if it was failed.

        The failed write's bytes are cut off. A file shorter than the index lost bytes this
        log had written, so the whole log is recovered again from disk instead.
        """
        if self._failed is None:
            return False
        active = self._segments[-1]
        try:
            active.close()
        except OSError as exc:
            log.debug("%s: closing after a failure: %s", active.path, exc)
        try:
            size = os.fstat(self._active_fd()).st_size
            if size > active.size:
                os.ftruncate(active.fd, active.size)
        except OSError as exc:
            raise StorageError(f"{self.directory}: cannot reopen {active.path}: {exc}") from exc
        if size < active.size:
            log.warning("%s: %s is shorter than written (%d < %d bytes); recovering the log again",
                        self.directory, active.path, size, active.size)
            self._reload()
        return True

    # -- fetch -----------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, *, min_one: bool = True,
             upto: int | None = None, one_segment: bool = False) -> bytes:
        """Whole batches from the one holding ``offset``, at most ``max_bytes`` of them; with
        ``one_segment``, from its segment alone (as Kafka's LocalLog.read answers a fetch: the
        next one goes on in the next segment).

        The first batch is returned even if larger than ``max_bytes`` when ``min_one`` is
        true (Kafka's KIP-74 rule for the first partition of a Fetch response). Reading at
        the high watermark gives b""; outside [log start, high watermark] raises
        OffsetOutOfRange. An offset in a gap (a lost or unreadable stretch of a sealed
        segment) reads from the next batch after it. ``upto`` (a read_committed fetch's last
        stable offset) leaves out the batches that start at or after it.

        With ``one_segment``, a segment whose batches read are all empty (what compaction
        leaves of a fully superseded group) does not end the read: a client answered only
        empty batches takes it for a record too large for its fetch size (librdkafka doubles
        its size, then fails after ten such answers), and Kafka, which keeps fewer empty
        batches, would have gone on to the next segment.
        """
        self._check_open()
        if offset == self.high_watermark:
            return b""
        if not self.log_start_offset <= offset < self.high_watermark:
            raise OffsetOutOfRange(f"offset {offset} outside [{self.log_start_offset}, "
                                   f"{self.high_watermark}] of {self.directory}")
        if upto is not None and offset >= upto:
            return b""
        parts, budget, records_yet = [], max_bytes, False
        first = self._segment_index(offset)
        for seg in self._segments[first:]:
            i = bisect.bisect_left(seg.lasts, offset) if seg is self._segments[first] else 0
            if i == len(seg.lasts):
                continue
            start = seg.positions[i]
            end = start
            stopped, only_empty = False, True
            for j in range(i, len(seg.positions)):
                nxt = seg.positions[j + 1] if j + 1 < len(seg.positions) else seg.size
                stopped = upto is not None and seg.bases[j] >= upto
                if stopped or (nxt - start > budget and not (min_one and not records_yet and j == i)):
                    break
                only_empty = only_empty and nxt - seg.positions[j] == HEADER.size
                end = nxt
            if end == start:
                break
            try:
                parts.append(seg.pread(start, end))
            except OSError as exc:
                raise StorageError(f"reading {seg.path} failed: {exc}") from exc
            budget -= end - start
            records_yet = records_yet or not only_empty
            if end < seg.size or stopped or (one_segment and not only_empty):
                break
        return b"".join(parts)

    def _segment_index(self, offset: int) -> int:
        return bisect.bisect_right([s.base_offset for s in self._segments], offset) - 1

    def offset_for_timestamp(self, timestamp: int) -> TimestampOffset:
        """ListOffsets by time: the first record at or after ``timestamp`` (from the log start
        on), with its own timestamp; (-1, -1) when none is that recent. The batch index finds
        the batch; its records are decoded to find the record, as Kafka's time index and
        segment scan do."""
        self._check_open()
        for seg in self._segments:
            if seg.largest_timestamp < timestamp:
                continue
            for i, ts in enumerate(seg.max_timestamps):
                if ts >= timestamp and seg.lasts[i] >= self.log_start_offset:
                    for record in self._records_at(seg.bases[i]) or ():
                        if record.timestamp >= timestamp and record.offset >= self.log_start_offset:
                            return TimestampOffset(record.offset, record.timestamp)
                    return TimestampOffset(max(seg.bases[i], self.log_start_offset), ts)
        return TimestampOffset(-1, -1)

    def max_timestamp_offset(self) -> TimestampOffset:
        """ListOffsets -3: the first record holding the partition's largest timestamp, with
        that timestamp (the earliest batch that reached it, then its first such record);
        (-1, -1) for an empty log."""
        self._check_open()
        best, base = -1, None
        for seg in self._segments:
            for i, ts in enumerate(seg.max_timestamps):
                if ts > best:
                    best, base = ts, seg.bases[i]
        if base is None:
            return TimestampOffset(-1, -1)
        for record in self._records_at(base) or ():
            if record.timestamp == best:
                return TimestampOffset(record.offset, best)
        return TimestampOffset(max(base, self.log_start_offset), best)

    def _records_at(self, base_offset: int) -> list | None:
        """The records of the batch starting at ``base_offset``; None if they cannot be
        decoded (the caller then answers for the whole batch)."""
        batch = self.read(max(base_offset, self.log_start_offset), 1, min_one=True)
        try:
            return records_of(batch)[1] if batch else []
        except DecodeError as e:
            log.warning("%s: cannot read the records of the batch at offset %d (%s); answering "
                        "for the whole batch", self.directory, base_offset, e)
            return None

    # -- retention -------------------------------------------------------------------------

    def apply_retention(self, now_ms: int) -> int:
        """Delete the oldest whole segments past retention; return how many.

        By bytes, a segment goes while the log stays at least ``retention_bytes`` without it;
        by time, while its newest timestamp is more than ``retention_ms`` old. Both stop at
        the first segment that must stay, as Kafka's do. As in Kafka (deletableSegments), the
        active segment goes too unless it is empty; when every segment goes, a new active
        one is rolled first, at the log end, where the log then starts. Raises StorageError
        if a file cannot be removed (the segments removed before it are gone from the log too).
        """
        self._check_open()
        if "delete" not in self.cleanup_policy:      # Kafka: a compact-only topic keeps everything
            return 0
        old = self._segments if self._segments[-1].size else self._segments[:-1]
        by_time = 0
        try:
            if self.retention_ms >= 0:
                while by_time < len(old) and now_ms - old[by_time].retention_timestamp() > self.retention_ms:
                    by_time += 1
        except OSError as exc:
            raise StorageError(f"{self.directory}: retention cannot stat a segment: {exc}") from exc
        by_bytes = 0
        if self.retention_bytes >= 0:
            excess = self.size_bytes - self.retention_bytes
            while by_bytes < len(old) and excess - old[by_bytes].size >= 0:
                excess -= old[by_bytes].size
                by_bytes += 1
        doomed = max(by_time, by_bytes)
        if not doomed:
            return 0
        if doomed == len(self._segments):
            self._roll()
        try:
            return self._delete_oldest(doomed, "retention")
        except OSError as exc:
            raise StorageError(f"{self.directory}: retention failed: {exc}") from exc

    def _delete_oldest(self, count: int, why: str) -> int:
        """Delete the ``count`` oldest segments' files (then fsync the directory) and forget
        them; the producers wholly below the new log start go too. Raises OSError, with the
        segments removed before the failure already forgotten."""
        removed = 0
        try:
            for seg in self._segments[:count]:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(seg.path)
                removed += 1
            fsync_dir(self.directory)
        finally:
            if removed:
                del self._segments[:removed]
                self.producers.evict_below(self.log_start_offset)
                log.info("%s: %s deleted %d segment(s); log starts at offset %d",
                         self.directory, why, removed, self.log_start_offset)
        return removed

    # -- DeleteRecords ---------------------------------------------------------------------

    def checkpoint_log_start(self, offset: int) -> None:
        """Make ``offset`` the log start a restart finds, before :meth:`advance_log_start` shows it.

        Writes only its own file, so it may run in a worker thread. Raises StorageError.
        """
        try:
            atomic_write(os.path.join(self.directory, LOG_START_FILE), f"{offset}\n")
        except OSError as exc:
            raise StorageError(f"{self.directory}: cannot record log start offset {offset}: {exc}") from exc

    def advance_log_start(self, offset: int) -> int:
        """Kafka's maybeIncrementLogStartOffset: the log starts at ``offset`` (it never moves
        back) and forgets producers wholly below it; sealed segments wholly below it are
        deleted at once (Kafka's next retention check would). Returns the log start offset.

        Raises OffsetOutOfRange above the high watermark.
        """
        self._check_open()
        if offset > self.high_watermark:
            raise OffsetOutOfRange(f"Cannot increment the log start offset to {offset} of partition "
                                   f"{self.directory} since it is larger than the high watermark "
                                   f"{self.high_watermark}")
        if offset > self.log_start_offset:
            self._deleted_below = offset
            self.producers.evict_below(offset)
            log.info("%s: log start offset moved to %d (records deleted)", self.directory, offset)
            self._drop_segments_below_start()
        return self.log_start_offset

    def _start_at_checkpoint(self) -> None:
        """On open: the log starts where DeleteRecords left it. A log whose end fell below that
        (segments lost) restarts empty there, as Kafka's LogLoader does, so no offset below the
        log start is ever handed out again."""
        try:
            with open(os.path.join(self.directory, LOG_START_FILE), encoding="ascii") as f:
                start = int(f.read().strip())
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            log.warning("%s: unreadable %s (%s); the log starts at its first segment",
                        self.directory, LOG_START_FILE, exc)
            return
        if start > self.high_watermark:
            log.warning("%s: the log ends at %d, below its log start offset %d; deleting its "
                        "segments and starting empty at %d", self.directory, self.high_watermark,
                        start, start)
            for seg in self._segments:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(seg.path)
            fresh = _Segment(os.path.join(self.directory, segment_name(start)), start)
            os.close(os.open(fresh.path, os.O_RDWR | os.O_CREAT, 0o644))
            fsync_dir(self.directory)
            self._segments, self.producers = [fresh], ProducerStateTable()
        self._deleted_below = start
        self.producers.evict_below(start)
        self._drop_segments_below_start()

    def _drop_segments_below_start(self) -> None:
        """Delete the sealed segments whose every offset is below the log start (Kafka's
        deleteLogStartOffsetBreachedSegments); one that cannot be removed now stays (it is
        unreadable anyway) and is tried again next time."""
        below = 0
        while below + 1 < len(self._segments) and self._segments[below + 1].base_offset <= self.log_start_offset:
            below += 1
        if below:
            try:
                self._delete_oldest(below, "DeleteRecords")
            except OSError as exc:
                log.warning("%s: cannot delete a segment below the log start offset: %s",
                            self.directory, exc)

    # -- compaction (topic_log/compaction.py) --------------------------------------------

    def segments(self) -> list[_Segment]:
        """The segments, oldest first. The last is the active one, which compaction never
        touches; the files of the others never change (compaction replaces them whole)."""
        self._check_open()
        return list(self._segments)

    def replace_segments(self, old: list[_Segment], path: str,
                         batches: list[tuple[int, int, int, int]]) -> None:
        """Index a cleaned segment (its batches as (base, last, size, max timestamp)) in place of
        ``old``, whose files the caller has just swapped for it; call from the log's own task."""
        first = next(i for i, seg in enumerate(self._segments) if seg is old[0])
        assert self._segments[first:first + len(old)] == old and first + len(old) < len(self._segments)
        new = _Segment(path, old[0].base_offset)
        for base, last, size, max_timestamp in batches:
            new.add(base, last, size, max_timestamp, -1)
        for seg in old:
            seg.close()
        self._segments[first:first + len(old)] = [new]

    # -- lifecycle -------------------------------------------------------------------------

    def flush(self) -> None:
        """fsync the active segment (older ones were synced when they rolled).

        Raises StorageError if the fsync fails or an earlier write did (nothing is known
        durable then).
        """
        self._check_open()
        if self._failed is not None:
            raise StorageError(f"{self.directory}: {self._failed}")
        if not self._unflushed:
            return
        active = self._segments[-1]
        try:
            self.disk.fsync(self._active_fd(), active.path)
        except OSError as exc:
            raise self._storage_error(f"fsync of {active.path} failed", exc) from exc
        self._unflushed = False

    def close(self) -> bool:
        """Flush and release the files; later calls raise UnknownTopicOrPartition.

        True when everything written is durable (what a clean shutdown may claim).
        """
        if self._closed:
            return True
        durable = True
        try:
            self.flush()
        except TopicsError as exc:
            log.warning("%s: closing without a final flush: %s", self.directory, exc)
            durable = False
        self._closed = True
        for seg in self._segments:
            try:
                seg.close()
            except OSError as exc:
                log.warning("%s: close failed: %s", seg.path, exc)
                durable = False
        return durable

    def _check_open(self) -> None:
        if self._closed:
            raise UnknownTopicOrPartition(f"{self.directory} is closed")
        if not self._segments:           # opening failed: try again, each call
            self._reload()

    def _reload(self) -> None:
        """Recover the log from disk again, as after a crash (after a failure, or a failed open)."""
        for seg in self._segments:
            with contextlib.suppress(OSError):
                seg.close()
        try:
            os.makedirs(self.directory, exist_ok=True)
            segments, producers = self._recover(clean_shutdown=False)
        except OSError as exc:
            self._segments = []
            raise StorageError(f"{self.directory}: cannot open the log: {exc}") from exc
        self._segments, self.producers = segments, producers
        self._failed = None
        self._unflushed = True
        log.info("%s: log reopened at offsets %d-%d", self.directory, self.log_start_offset,
                 self.high_watermark)

    # -- recovery --------------------------------------------------------------------------

    def _recover(self, clean_shutdown: bool) -> tuple[list[_Segment], ProducerStateTable]:
        """Rebuild the index and producer state (see the module docstring for the rules)."""
        finish_interrupted(FILES, self.directory, _swap_end, retention=True)
        bases = sorted(int(n[:-len(SUFFIX)]) for n in os.listdir(self.directory)
                       if n.endswith(SUFFIX) and n[:-len(SUFFIX)].isdigit())
        producers = ProducerStateTable()
        self.transactions = PartitionTransactions()
        segments: list[_Segment] = []
        for n, base in enumerate(bases):
            seg = _Segment(os.path.join(self.directory, segment_name(base)), base)
            below = bases[n + 1] if n + 1 < len(bases) else None
            if below is None:
                self._recover_active(seg, producers, verify_crc=not clean_shutdown)
            else:
                self._index_sealed(seg, producers, below)
            segments.append(seg)
        if not segments:                 # not fsynced: recovery makes it again if it is lost
            seg = _Segment(os.path.join(self.directory, segment_name(0)), 0)
            os.close(os.open(seg.path, os.O_RDWR | os.O_CREAT, 0o644))
            segments.append(seg)
        log.debug("%s: recovered offsets %d-%d in %d segment(s)", self.directory,
                  segments[0].base_offset, segments[-1].next_offset, len(segments))
        return segments, producers

    def _index_sealed(self, seg: _Segment, producers: ProducerStateTable, below: int) -> None:
        """Index a sealed segment by its headers; never change it. A gap before ``below`` is logged."""
        pos, size, why = self._walk(seg, producers, verify_crc=False, below=below)
        if pos < size:
            log.warning("%s: %s does not parse from byte %d (%s); offsets %d-%d are unreadable, "
                        "the file and every later segment are kept", self.directory, seg.path,
                        pos, why, seg.next_offset, below - 1)
        elif seg.next_offset != below:
            log.warning("%s: no segment holds offsets %d-%d (a missing file?); later segments are "
                        "kept", self.directory, seg.next_offset, below - 1)

    def _recover_active(self, seg: _Segment, producers: ProducerStateTable, *, verify_crc: bool) -> None:
        """Index the active segment; truncate it at the first invalid batch (LogSegment.recover)."""
        pos, size, why = self._walk(seg, producers, verify_crc=verify_crc, below=None)
        if pos == size:
            return
        log.warning("%s: invalid batch at byte %d of %s (%s); truncating %d byte(s)",
                    self.directory, pos, seg.path, why, size - pos)
        fd = os.open(seg.path, os.O_RDWR)
        try:
            os.ftruncate(fd, pos)
            os.fsync(fd)
        finally:
            os.close(fd)

    def _walk(self, seg: _Segment, producers: ProducerStateTable, *, verify_crc: bool,
              below: int | None) -> tuple[int, int, str]:
        """Index batches from the start of ``seg``: (where it stopped, file size, why)."""
        fd = os.open(seg.path, os.O_RDONLY)
        try:
            stat = os.fstat(fd)
            size, mtime_ms = stat.st_size, int(stat.st_mtime * 1000)
            if size == 0:
                return 0, 0, ""
            with mmap.mmap(fd, size, access=mmap.ACCESS_READ) as mm:
                pos = 0
                while pos < size:
                    header, why = check_batch(mm, pos, size, seg.next_offset, verify_crc=verify_crc,
                                              below=below, gaps=below is not None)
                    intact = header is not None
                    if not intact and why == "crc mismatch":
                        header = _kept_despite_crc(mm, pos, size, below)
                        if header is not None:
                            log.warning("%s: batch at byte %d of %s fails its CRC but valid batches "
                                        "follow; keeping it (offsets %d-%d)", self.directory, pos,
                                        seg.path, header.base_offset,
                                        header.base_offset + header.last_offset_delta)
                    if header is None:
                        return pos, size, why
                    seg.add(header.base_offset, header.base_offset + header.last_offset_delta,
                            header.size, header.max_timestamp, mtime_ms)
                    if intact:
                        producers.record(header, header.base_offset)
                        self._note_transaction(producers, header, header.base_offset,
                                               mm[pos:pos + header.size] if header.is_control else None)
                    pos += header.size
                return pos, size, ""
        finally:
            os.close(fd)


def _kept_despite_crc(mm: mmap.mmap, pos: int, size: int, below: int | None) -> BatchHeader | None:
    """A CRC-failing batch's header if a CRC-valid batch follows right after it at the next offset.

    A torn write is never followed by a valid batch, so this is a flipped bit inside the log;
    cutting there would drop the intact batches after it and hand their offsets out again.
    """
    header, _ = check_batch(mm, pos, size, struct.unpack_from(">q", mm, pos)[0],
                            verify_crc=False, below=below)
    if header is None or pos + header.size >= size:
        return None
    after, _ = check_batch(mm, pos + header.size, size,
                           header.base_offset + header.last_offset_delta + 1,
                           verify_crc=True, below=below)
    return header if after is not None else None


def _stamp_log_append_time(batch: bytes, now_ms: int) -> bytes:
    """Mark a batch's timestamps as the broker's (Kafka's setMaxTimestamp) and re-CRC it."""
    out = bytearray(batch)
    attributes = struct.unpack_from(">h", out, _ATTRIBUTES_AT)[0] | _LOG_APPEND_TIME
    struct.pack_into(">h", out, _ATTRIBUTES_AT, attributes)
    struct.pack_into(">q", out, _MAX_TIMESTAMP_AT, now_ms)
    struct.pack_into(">I", out, _CRC_AT, crc32c(memoryview(out)[_ATTRIBUTES_AT:]))
    return bytes(out)


def _swap_end(path: str, base: int) -> int:
    """The offset after the last whole batch of a swap file (it was fsynced before it got its name)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return base
        with mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) as mm:
            pos, expected = 0, base
            while pos < size:
                header, why = check_batch(mm, pos, size, expected, verify_crc=False, gaps=True)
                if header is None:
                    log.error("%s does not parse from byte %d (%s)", path, pos, why)
                    break
                expected = header.base_offset + header.last_offset_delta + 1
                pos += header.size
    return expected
