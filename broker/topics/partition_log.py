"""One partition's log: v2 record batches stored exactly as produced, in offset-named segments.

``<dir>/<20-digit base offset>.log`` files hold whole batches back to back, their base
offsets rewritten to the offsets this log assigned (the CRC does not cover the base offset,
so the client's bytes stay valid and Fetch can return them without re-encoding). The only
index is in memory: per batch its last offset, position and max timestamp, rebuilt on open by
scanning every segment; the scan stops at the first batch that is torn, corrupt or out of
offset order and truncates the log there.

Synchronous and not thread-safe: call it from one task (or one worker thread) at a time;
time comes in as arguments so tests and trio's clock decide it.
"""

from __future__ import annotations

import bisect
import logging
import mmap
import os
import struct
from array import array
from typing import NamedTuple

from crc32c import crc32c

from protocol.exceptions import DecodeError
from protocol.records import HEADER, BatchHeader, read_batches, with_base_offset

from .errors import (CorruptRecords, InvalidRecord, MessageTooLarge, OffsetOutOfRange, StorageError,
                     TransactionsUnsupported, UnknownTopicOrPartition)
from .fsutil import fsync_dir
from .producer_state import ProducerStateTable

log = logging.getLogger(__name__)

SUFFIX = ".log"
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


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}{SUFFIX}"


class _Segment:
    """One segment file and its per-batch index (base/last offsets, positions, max timestamps)."""

    def __init__(self, path: str, base_offset: int, fd: int) -> None:
        self.path, self.base_offset, self.fd = path, base_offset, fd
        self.size = 0
        self.bases, self.lasts = array("q"), array("q")
        self.positions, self.max_timestamps = array("q"), array("q")
        self.largest_timestamp = -1
        self.roll_timestamp = -1       # when segment.ms counts from: first batch's timestamp

    @property
    def next_offset(self) -> int:
        return self.lasts[-1] + 1 if self.lasts else self.base_offset

    def add(self, base: int, last: int, size: int, max_timestamp: int, now_ms: int) -> None:
        if not self.lasts:
            self.roll_timestamp = max_timestamp if max_timestamp >= 0 else now_ms
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
        return int(os.stat(self.fd).st_mtime * 1000)

    def pread(self, start: int, end: int) -> bytes:
        chunks, pos = [], start
        while pos < end:
            chunk = os.pread(self.fd, end - pos, pos)
            if not chunk:
                raise StorageError(f"{self.path} is shorter than its index ({pos} < {end})")
            chunks.append(chunk)
            pos += len(chunk)
        return b"".join(chunks)


class PartitionLog:
    """The append/read/retention API of one partition directory (created if missing)."""

    def __init__(self, directory: str | os.PathLike[str], *, segment_bytes: int = 1 << 30,
                 segment_ms: int = 604800000, retention_bytes: int = -1,
                 retention_ms: int = 604800000, max_message_bytes: int = 1048588,
                 log_append_time: bool = False) -> None:
        self.directory = os.fspath(directory)
        self.segment_bytes, self.segment_ms = segment_bytes, segment_ms
        self.retention_bytes, self.retention_ms = retention_bytes, retention_ms
        self.max_message_bytes = max_message_bytes
        self.log_append_time = log_append_time
        self.producers = ProducerStateTable()
        self._segments: list[_Segment] = []
        self._closed = False
        os.makedirs(self.directory, exist_ok=True)
        self._recover()

    # -- offsets ---------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._segments[0].base_offset

    @property
    def high_watermark(self) -> int:
        """The next offset to assign; every written batch is committed (single replica)."""
        return self._segments[-1].next_offset

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    # -- produce ---------------------------------------------------------------------------

    def append(self, records: bytes, now_ms: int) -> AppendInfo:
        """Validate, number and write a produce request's record batches.

        Raises CorruptRecords, InvalidRecord, MessageTooLarge, TransactionsUnsupported,
        InvalidProducerEpoch, OutOfOrderSequence or StorageError; nothing is written then.
        """
        self._check_open()
        try:
            headers = read_batches(records)
        except DecodeError as exc:
            raise CorruptRecords(str(exc)) from exc
        self._check_batches(headers)
        duplicate = self.producers.check(headers)
        if duplicate is not None:
            log.debug("%s: duplicate batch, answering offsets %d-%d", self.directory,
                      duplicate.first_offset, duplicate.last_offset)
            return AppendInfo(duplicate.first_offset, duplicate.last_offset,
                              duplicate.timestamp if self.log_append_time else -1)
        total = sum(h.size for h in headers)
        self._maybe_roll(total, now_ms)
        active = self._segments[-1]
        base = offset = active.next_offset
        view = memoryview(records)
        out, placed = [], []
        for h in headers:
            batch = with_base_offset(view[h.position:h.position + h.size], offset)
            if self.log_append_time:
                batch = _stamp_log_append_time(batch, now_ms)
            out.append(batch)
            placed.append((h, offset))
            offset += h.last_offset_delta + 1
        self._write(active, b"".join(out))
        for (h, at), batch in zip(placed, out):
            max_ts = now_ms if self.log_append_time else h.max_timestamp
            active.add(at, at + h.last_offset_delta, len(batch), max_ts, now_ms)
            self.producers.record(h, at)
        return AppendInfo(base, offset - 1, now_ms if self.log_append_time else -1)

    def _check_batches(self, headers: list[BatchHeader]) -> None:
        if not headers:
            raise InvalidRecord("no record batch")
        for h in headers:
            if h.is_control:
                raise InvalidRecord("clients may not write control batches")
            if h.is_transactional:
                raise TransactionsUnsupported("transactional batches are not supported")
            if h.size > self.max_message_bytes:
                raise MessageTooLarge(f"batch of {h.size} bytes exceeds max.message.bytes "
                                      f"{self.max_message_bytes}")
            if h.last_offset_delta < 0:
                raise CorruptRecords(f"negative last offset delta {h.last_offset_delta}")

    def _maybe_roll(self, incoming: int, now_ms: int) -> None:
        active = self._segments[-1]
        if active.size == 0:
            return
        if (active.size + incoming > self.segment_bytes
                or now_ms - active.roll_timestamp >= self.segment_ms):
            os.fsync(active.fd)
            self._segments.append(self._open_segment(active.next_offset, create=True))
            log.info("%s: rolled new segment at offset %d", self.directory, active.next_offset)

    def _write(self, segment: _Segment, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(segment.fd, view):]
        except OSError as exc:
            os.ftruncate(segment.fd, segment.size)
            raise StorageError(f"write to {segment.path} failed: {exc}") from exc

    # -- fetch -----------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, *, min_one: bool = True) -> bytes:
        """Whole batches from the one holding ``offset``, at most ``max_bytes`` of them.

        The first batch is returned even if larger than ``max_bytes`` when ``min_one`` is
        true (Kafka's KIP-74 rule for the first partition of a Fetch response). Reading at
        the high watermark gives b""; outside [log start, high watermark] raises
        OffsetOutOfRange.
        """
        self._check_open()
        if offset == self.high_watermark:
            return b""
        if not self.log_start_offset <= offset < self.high_watermark:
            raise OffsetOutOfRange(f"offset {offset} outside [{self.log_start_offset}, "
                                   f"{self.high_watermark}] of {self.directory}")
        parts, budget = [], max_bytes
        first = self._segment_index(offset)
        for seg in self._segments[first:]:
            i = bisect.bisect_left(seg.lasts, offset) if seg is self._segments[first] else 0
            if i == len(seg.lasts):
                continue
            start = seg.positions[i]
            end = start
            for j in range(i, len(seg.positions)):
                nxt = seg.positions[j + 1] if j + 1 < len(seg.positions) else seg.size
                if nxt - start > budget and not (min_one and not parts and j == i):
                    break
                end = nxt
            if end == start:
                break
            parts.append(seg.pread(start, end))
            budget -= end - start
            if end < seg.size:
                break
        return b"".join(parts)

    def _segment_index(self, offset: int) -> int:
        return bisect.bisect_right([s.base_offset for s in self._segments], offset) - 1

    def offset_for_timestamp(self, timestamp: int) -> TimestampOffset:
        """The first batch whose max timestamp is at or after ``timestamp``: its base offset.

        Batch granularity (no record decoding): a consumer seeking there may see a few
        earlier records of that batch, as Kafka's own time index can give.
        """
        self._check_open()
        for seg in self._segments:
            if seg.largest_timestamp < timestamp:
                continue
            for i, ts in enumerate(seg.max_timestamps):
                if ts >= timestamp:
                    return TimestampOffset(seg.bases[i], ts)
        return TimestampOffset(-1, -1)

    def max_timestamp_offset(self) -> TimestampOffset:
        """ListOffsets -3: the batch holding the largest timestamp (its last offset), or (-1, -1)."""
        self._check_open()
        best = TimestampOffset(-1, -1)
        for seg in self._segments:
            for i, ts in enumerate(seg.max_timestamps):
                if ts > best.timestamp:
                    best = TimestampOffset(seg.lasts[i], ts)
        return best

    # -- retention -------------------------------------------------------------------------

    def apply_retention(self, now_ms: int) -> int:
        """Delete the oldest whole segments (never the active one) past retention; return how many.

        By bytes, a segment goes while the log stays at least ``retention_bytes`` without it;
        by time, while its newest timestamp is more than ``retention_ms`` old. Both stop at
        the first segment that must stay, as Kafka's do.
        """
        self._check_open()
        old = self._segments[:-1]
        by_time = 0
        if self.retention_ms >= 0:
            while by_time < len(old) and now_ms - old[by_time].retention_timestamp() > self.retention_ms:
                by_time += 1
        by_bytes = 0
        if self.retention_bytes >= 0:
            excess = self.size_bytes - self.retention_bytes
            while by_bytes < len(old) and excess - old[by_bytes].size >= 0:
                excess -= old[by_bytes].size
                by_bytes += 1
        doomed = max(by_time, by_bytes)
        if not doomed:
            return 0
        for seg in self._segments[:doomed]:
            os.close(seg.fd)
            os.remove(seg.path)
        del self._segments[:doomed]
        fsync_dir(self.directory)
        self.producers.evict_below(self.log_start_offset)
        log.info("%s: retention deleted %d segment(s); log starts at offset %d",
                 self.directory, doomed, self.log_start_offset)
        return doomed

    # -- lifecycle -------------------------------------------------------------------------

    def flush(self) -> None:
        """fsync the active segment (older ones were synced when they rolled)."""
        self._check_open()
        os.fsync(self._segments[-1].fd)

    def close(self) -> None:
        """Flush and release the files; later calls raise UnknownTopicOrPartition."""
        if self._closed:
            return
        self.flush()
        self._closed = True
        for seg in self._segments:
            os.close(seg.fd)

    def _check_open(self) -> None:
        if self._closed:
            raise UnknownTopicOrPartition(f"{self.directory} is closed")

    def _open_segment(self, base_offset: int, *, create: bool) -> _Segment:
        path = os.path.join(self.directory, segment_name(base_offset))
        flags = os.O_RDWR | os.O_APPEND | (os.O_CREAT | os.O_EXCL if create else 0)
        seg = _Segment(path, base_offset, os.open(path, flags, 0o644))
        if create:
            fsync_dir(self.directory)
        return seg

    def _recover(self) -> None:
        """Rebuild the index and producer state; cut the log at the first invalid batch."""
        bases = sorted(int(n[:-len(SUFFIX)]) for n in os.listdir(self.directory)
                       if n.endswith(SUFFIX) and n[:-len(SUFFIX)].isdigit())
        expected = bases[0] if bases else 0
        for n, base in enumerate(bases):
            seg = self._open_segment(base, create=False)
            if base != expected:
                log.warning("%s: segment %s starts at %d, expected %d; dropping it and later ones",
                            self.directory, seg.path, base, expected)
                os.close(seg.fd)
                self._drop(bases[n:])
                break
            self._segments.append(seg)
            if not self._scan(seg):
                self._drop(bases[n + 1:])
                break
            expected = seg.next_offset
        if not self._segments:
            self._segments.append(self._open_segment(expected, create=True))
        log.debug("%s: recovered offsets %d-%d in %d segment(s)", self.directory,
                  self.log_start_offset, self.high_watermark, len(self._segments))

    def _scan(self, seg: _Segment) -> bool:
        """Index one segment's batches; False (after truncating) if it ends in a bad one."""
        file_size = os.fstat(seg.fd).st_size
        if file_size == 0:
            return True
        mtime_ms = int(os.fstat(seg.fd).st_mtime * 1000)
        with mmap.mmap(seg.fd, file_size, access=mmap.ACCESS_READ) as mm:
            pos = 0
            while pos < file_size:
                header = _valid_batch_at(mm, pos, file_size, seg.next_offset)
                if header is None:
                    break
                seg.add(header.base_offset, header.base_offset + header.last_offset_delta,
                        header.size, header.max_timestamp, mtime_ms)
                self.producers.record(header, header.base_offset)
                pos += header.size
        if pos == file_size:
            return True
        log.warning("%s: invalid batch at byte %d of %s; truncating %d byte(s)", self.directory,
                    pos, seg.path, file_size - pos)
        os.ftruncate(seg.fd, pos)
        os.fsync(seg.fd)
        return False

    def _drop(self, bases: list[int]) -> None:
        for base in bases:
            os.remove(os.path.join(self.directory, segment_name(base)))
        if bases:
            fsync_dir(self.directory)


def _valid_batch_at(mm: mmap.mmap, pos: int, end: int, expected_offset: int) -> BatchHeader | None:
    """The batch header at ``pos`` if a whole, CRC-valid batch at the expected offset is there."""
    if end - pos < HEADER.size:
        return None
    length = struct.unpack_from(">i", mm, pos + 8)[0]
    if length <= 0 or pos + 12 + length > end:
        return None
    try:
        (header,) = read_batches(mm[pos:pos + 12 + length])
    except DecodeError:
        return None
    if header.base_offset != expected_offset:
        return None
    return header


def _stamp_log_append_time(batch: bytes, now_ms: int) -> bytes:
    """Mark a batch's timestamps as the broker's (Kafka's setMaxTimestamp) and re-CRC it."""
    out = bytearray(batch)
    attributes = struct.unpack_from(">h", out, _ATTRIBUTES_AT)[0] | _LOG_APPEND_TIME
    struct.pack_into(">h", out, _ATTRIBUTES_AT, attributes)
    struct.pack_into(">q", out, _MAX_TIMESTAMP_AT, now_ms)
    struct.pack_into(">I", out, _CRC_AT, crc32c(memoryview(out)[_ATTRIBUTES_AT:]))
    return bytes(out)
