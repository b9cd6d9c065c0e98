"""Log compaction of topic partitions (``cleanup.policy=compact``): Kafka's log cleaner.

Which partition, and how far (LogCleanerManager): everything before a partition's *first
dirty offset* (kept in ``<data-dir>/cleaner-offset-checkpoint``, Kafka's file) was cleaned
before. The dirty section ends at the *first uncleanable offset*: the active segment's base,
or the first dirty segment holding a record newer than ``min.compaction.lag.ms``. A
partition is cleaned when its dirty bytes exceed ``min.cleanable.dirty.ratio`` of its bytes,
or ``max.compaction.lag.ms`` has passed for its oldest dirty record; the filthiest first.

What survives (Cleaner, MemoryRecords.filterTo): an offset map holds the latest offset of
each key (by MD5, as SkimpyOffsetMap) in the dirty section; then every sealed segment up to
where the map reaches is rewritten. A record survives if it has a key, no later offset of
that key is mapped, and it has a value or its batch's delete horizon has not passed. The
first cleaning that keeps a tombstone sets its batch's horizon to now + ``delete.retention.ms``
(Kafka's attribute bit 6); a cleaning after the horizon drops it. A batch whose records all
survive is copied byte for byte; otherwise it is rebuilt with its base and last offsets,
producer fields and compression. A batch left empty is dropped, except the last batch of an
idempotent producer (its sequence survives restarts) and the last batch of each rewritten
group (so every segment still ends where the next begins, and an interrupted swap knows
what it replaces). Control batches are kept as they are. Offsets never move: readers skip
the gaps.

Segments are grouped up to ``segment.bytes`` and each group is replaced by one cleaned
segment named after its first (log_store/segments.py has the crash-safe steps). The
reading and writing run in a worker thread (:meth:`LogCleaner.clean`); only each group's
swap, a few renames and directory fsyncs, runs in the log's own task
(:meth:`LogCleaner.swap_group`), so appends and reads go on meanwhile and never see a
half-swapped group.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import struct
import threading
import weakref
from dataclasses import dataclass, field

from crc32c import crc32c

from protocol.exceptions import DecodeError
from protocol.record_batch import Record, build_batch, delete_horizon_of, records_of
from protocol.records import HEADER, BatchHeader, read_batches
from log_store.files import atomic_write
from log_store.segments import cleaned_path, discard, install, promote, segment_path

from .errors import StorageError, TopicsError
from .partition_log import FILES, PartitionLog

log = logging.getLogger(__name__)

CHECKPOINT_FILE = "cleaner-offset-checkpoint"      # Kafka's name, format and place
#: Keys mapped per cleaning before it stops at a segment boundary (the rest waits for the
#: next round). Kafka's 128 MiB dedupe buffer holds ~5M 24-byte slots; a Python dict entry
#: costs ~100 bytes, so a million keys is a similar memory bound.
MAX_MAP_ENTRIES = 1_000_000
READ_CHUNK = 4 << 20                 # bytes of whole batches read from a segment at a time
_KEPT_EMPTY_ATTRIBUTES = 0x08 | 0x10 | 0x20   # timestamp type, transactional, control
_CRC_START = 21


class CleaningAborted(Exception):
    """The broker is stopping; the cleaning in progress leaves nothing behind."""


@dataclass
class CleaningJob:
    """One partition to clean, chosen in the log's task (LogToClean)."""
    topic: str
    partition: int
    plog: PartitionLog
    segments: list                   # the sealed segments below first_uncleanable, oldest first
    first_dirty: int
    first_uncleanable: int
    dirty_ratio: float
    now_ms: int
    delete_retention_ms: int
    segment_bytes: int
    producer_last_offsets: dict[int, int]
    #: the partition's aborted transactions: their records are removed (Kafka's cleaner too)
    aborted: tuple = ()

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass
class CleanedGroup:
    """A group of segments and the swap file now holding what survives of them."""
    old: list
    batches: list[tuple[int, int, int, int]]      # base, last, size, max timestamp


@dataclass
class Cleaned:
    end_offset: int                  # the next first dirty offset
    groups: list[CleanedGroup] = field(default_factory=list)
    records_in: int = 0
    records_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0


class LogCleaner:
    """Chooses, cleans and swaps in compacted partitions of one data directory.

    Call :meth:`grab_filthiest`, then :meth:`clean` from a worker thread, then
    :meth:`swap_group` for each cleaned group and :meth:`finish`, from the task that owns the
    store; :meth:`stop` makes a running clean give up.
    """

    def __init__(self, data_dir: str, *, max_map_entries: int = MAX_MAP_ENTRIES) -> None:
        self.checkpoints = CleanerCheckpoints(data_dir)
        self.max_map_entries = max_map_entries
        self._uncleanable: weakref.WeakSet[PartitionLog] = weakref.WeakSet()
        self._stopping = threading.Event()

    def stop(self) -> None:
        self._stopping.set()

    # -- choosing (the log's task) ---------------------------------------------------------

    def grab_filthiest(self, store, now_ms: int) -> CleaningJob | None:
        """The cleanable compacted partition with the highest dirty ratio, or None."""
        jobs, live = [], set()
        for topic in store.topics():
            for p, plog in enumerate(topic.partitions):
                live.add((topic.name, p))
                if "compact" not in plog.cleanup_policy or plog in self._uncleanable:
                    continue
                try:
                    job = self._job(topic.name, p, plog, now_ms)
                except (TopicsError, OSError) as exc:
                    log.debug("%s-%d: not considered for cleaning: %s", topic.name, p, exc)
                    continue
                if job is not None:
                    jobs.append(job)
        self.checkpoints.retain(live)
        return max(jobs, key=lambda j: j.dirty_ratio, default=None)

    def _job(self, topic: str, partition: int, plog: PartitionLog, now_ms: int) -> CleaningJob | None:
        """Kafka's cleanableOffsets and LogToClean for one partition; None if not cleanable."""
        segments = plog.segments()
        sealed, active = segments[:-1], segments[-1]
        first_dirty = self.checkpoints.get(topic, partition, plog.log_start_offset)
        if first_dirty > plog.high_watermark:
            log.warning("%s-%d: first dirty offset %d is past the log end %d; cleaning it all",
                        topic, partition, first_dirty, plog.high_watermark)
        if not plog.log_start_offset <= first_dirty <= plog.high_watermark:
            first_dirty = plog.log_start_offset       # below: retention deleted what was cleaned
        ends = [s.base_offset for s in segments[1:]]
        dirty = [s for s, end in zip(sealed, ends) if end > first_dirty]
        first_uncleanable = active.base_offset
        lag = max(plog.min_compaction_lag_ms, 0)
        if lag > 0:
            young = next((s for s in dirty if s.retention_timestamp() > now_ms - lag), None)
            if young is not None:
                first_uncleanable = young.base_offset
        # as Kafka's cleanableOffsets: nothing at or past the last stable offset (an open
        # transaction may yet abort, and its records must not replace older ones)
        first_uncleanable = max(first_dirty, min(first_uncleanable, plog.last_stable_offset))
        clean_bytes = sum(s.size for s in sealed if s.base_offset < first_dirty)
        cleanable = [s for s in dirty if s.base_offset < first_uncleanable]
        cleanable_bytes = sum(s.size for s in cleanable)
        total = clean_bytes + cleanable_bytes
        if total == 0 or not cleanable:
            return None
        ratio = cleanable_bytes / total
        oldest = min((s.max_timestamps[0] for s in dirty if s.max_timestamps and s.max_timestamps[0] > 0),
                     default=None)
        overdue = oldest is not None and oldest < now_ms - max(plog.max_compaction_lag_ms, 0)
        if not (overdue or ratio > plog.min_cleanable_dirty_ratio):
            return None
        producers = {pid: entry.last_offset for pid, entry in plog.producers.entries()}
        return CleaningJob(topic, partition, plog,
                           [s for s in sealed if s.base_offset < first_uncleanable], first_dirty,
                           first_uncleanable, ratio, now_ms, plog.delete_retention_ms,
                           plog.segment_bytes, producers, tuple(plog.transactions.aborted))

    # -- cleaning (a worker thread) --------------------------------------------------------

    def clean(self, job: CleaningJob) -> Cleaned | None:
        """Write the cleaned segments of ``job`` as swap files; None if it cannot be cleaned now.

        Only reads sealed segments (their files never change) and writes files of its own, so
        it runs beside appends and reads. A corrupt or undecodable batch makes the partition
        uncleanable until the broker restarts (Kafka's uncleanable partitions); a storage
        failure is retried next round.
        """
        log.info("%s: cleaning from first dirty offset %d to %d (dirty ratio %.2f)", job.name,
                 job.first_dirty, job.first_uncleanable, job.dirty_ratio)
        result = None
        try:
            offset_map, end = self._build_offset_map(job)
            result = Cleaned(end)
            tail = [s for s in job.segments if s.base_offset < end]
            for group in _group_by_size(tail, job.segment_bytes):
                cleaned = self._clean_group(job, group, offset_map, result)
                if cleaned is not None:
                    result.groups.append(cleaned)
        except CleaningAborted:
            log.info("%s: cleaning abandoned: the broker is stopping", job.name)
        except (DecodeError, ValueError) as exc:
            self._uncleanable.add(job.plog)
            log.error("%s: cannot be cleaned until the broker restarts: %s", job.name, exc)
        except (OSError, StorageError) as exc:
            log.warning("%s: cleaning failed, retried next round: %s", job.name, exc)
        else:
            log.info("%s: cleaned %d group(s): %d -> %d records, %d -> %d bytes; first dirty offset "
                     "now %d", job.name, len(result.groups), result.records_in, result.records_out,
                     result.bytes_in, result.bytes_out, result.end_offset)
            return result
        for group in result.groups if result is not None else ():
            discard(FILES, job.plog.directory, group.old[0].base_offset)
        return None

    def _build_offset_map(self, job: CleaningJob) -> tuple[dict[bytes, int], int]:
        """Key digest -> latest offset over the dirty section, whole segments at a time; also
        where the map stops (the first segment it could not take, or first_uncleanable)."""
        offset_map: dict[bytes, int] = {}
        ends = [s.base_offset for s in job.segments[1:]] + [job.first_uncleanable]
        for seg, end in zip(job.segments, ends):
            if end <= job.first_dirty:
                continue
            if len(offset_map) >= self.max_map_entries:
                log.info("%s: offset map full (%d keys); cleaning up to offset %d this round",
                         job.name, len(offset_map), seg.base_offset)
                return offset_map, seg.base_offset
            for header, raw in self._batches(seg):
                if header.is_control or header.base_offset + header.last_offset_delta < job.first_dirty \
                        or _aborted(job, header):
                    continue
                for record in records_of(raw)[1]:
                    if record.key is not None and job.first_dirty <= record.offset < job.first_uncleanable:
                        offset_map[_digest(record.key)] = record.offset
        return offset_map, job.first_uncleanable

    def _clean_group(self, job: CleaningJob, group: list, offset_map: dict[bytes, int],
                     result: Cleaned) -> CleanedGroup | None:
        """Write what survives of ``group`` to a cleaned file and promote it to a swap file;
        None (and no file) when nothing in the group changes."""
        directory, base = job.plog.directory, group[0].base_offset
        path = cleaned_path(directory, base)
        batches, position, changed = [], 0, False
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for n, seg in enumerate(group):
                last_index = len(seg.bases) - 1 if n == len(group) - 1 else -1
                for i, (header, raw) in enumerate(self._batches(seg)):
                    result.bytes_in += header.size
                    out = self._filter(job, header, raw, offset_map, result,
                                       last_of_group=i == last_index)
                    if out is not raw:
                        changed = True
                    if out is None:
                        continue
                    kept = read_batches(out, verify_crc=False)[0]
                    batches.append((kept.base_offset, kept.base_offset + kept.last_offset_delta,
                                    kept.size, kept.max_timestamp))
                    _write_all(job.plog.disk, fd, out, path)
                    position += len(out)
            if changed:
                job.plog.disk.fsync(fd, path)
        except BaseException:          # aborted or failed: the partial file must not linger
            with contextlib.suppress(OSError):
                os.remove(path)
            raise
        finally:
            os.close(fd)
        if not changed:
            os.remove(path)
            result.bytes_out += position
            return None
        mtime = os.stat(group[-1].path).st_mtime_ns          # Kafka keeps the last one's
        os.utime(path, ns=(mtime, mtime))
        promote(FILES, directory, base)
        result.bytes_out += position
        return CleanedGroup(list(group), batches)

    def _filter(self, job: CleaningJob, header: BatchHeader, raw: bytes, offset_map: dict[bytes, int],
                result: Cleaned, *, last_of_group: bool) -> bytes | None:
        """The batch as it survives: ``raw`` itself if unchanged, rebuilt, empty, or None (dropped)."""
        if header.is_control:
            return raw
        records = records_of(raw)[1]
        horizon = delete_horizon_of(header)
        keep_deletes = horizon is None or job.now_ms < horizon
        kept = [] if _aborted(job, header) else \
            [r for r in records if _survives(r, offset_map, keep_deletes)]
        result.records_in += len(records)
        result.records_out += len(kept)
        last_offset = header.base_offset + header.last_offset_delta
        if kept:
            tombstones = any(r.value is None for r in kept)
            if len(kept) == len(records) and not (tombstones and horizon is None):
                return raw
            if horizon is None and tombstones:
                horizon = job.now_ms + job.delete_retention_ms
            return build_batch(header, kept, base_offset=header.base_offset, last_offset=last_offset,
                               delete_horizon_ms=horizon)
        if last_of_group or (header.producer_id >= 0
                             and job.producer_last_offsets.get(header.producer_id) == last_offset):
            return empty_batch(header)
        return None

    def _batches(self, seg):
        """(header, bytes) of each indexed batch of a sealed segment, CRC-checked, read in chunks."""
        i, count = 0, len(seg.bases)
        while i < count:
            if self._stopping.is_set():
                raise CleaningAborted()
            start = seg.positions[i]
            j = i + 1
            while j < count and seg.positions[j] - start < READ_CHUNK:
                j += 1
            end = seg.positions[j] if j < count else seg.size
            chunk = seg.pread(start, end)
            for header in read_batches(chunk, verify_crc=True):
                yield header, chunk[header.position:header.position + header.size]
            i = j

    # -- swapping in (the log's task) ------------------------------------------------------

    def swap_group(self, job: CleaningJob, group: CleanedGroup, *, abandon: bool = False) -> bool:
        """Replace one group by its swap file unless the log changed meanwhile (retention
        deleted some of it, it was closed or reopened) or ``abandon``; whether it was swapped.
        Each group is a swap of its own: the log's task may serve requests between them."""
        plog, directory, base = job.plog, job.plog.directory, group.old[0].base_offset
        try:
            current = [] if abandon else plog.segments()
        except TopicsError:
            current = []
        if not _holds(current[:-1], group.old):
            discard(FILES, directory, base)
            return False
        try:
            install(FILES, directory, base, [s.base_offset for s in group.old])
        except OSError as exc:
            log.error("%s: swapping in cleaned segment %d failed (%s); reopening the log, which "
                      "completes the swap", job.name, base, exc)
            with contextlib.suppress(StorageError):
                plog._reload()
            return False
        plog.replace_segments(group.old, segment_path(directory, base), group.batches)
        return True

    def finish(self, job: CleaningJob, cleaned: Cleaned, complete: bool) -> None:
        """Advance the first dirty offset if every group was swapped in; else the next round
        starts over (the groups swapped so far are clean, and cheap to clean again)."""
        if complete:
            self.checkpoints.set(job.topic, job.partition, cleaned.end_offset)
        else:
            log.info("%s: the log changed during cleaning; it is cleaned again next round", job.name)


class CleanerCheckpoints:
    """Each partition's first dirty offset in Kafka's ``cleaner-offset-checkpoint`` format
    (``0``, a count, then ``topic partition offset`` lines). Losing it costs one full
    cleaning, never data, so it is written without fsync."""

    def __init__(self, data_dir: str) -> None:
        self.path = os.path.join(data_dir, CHECKPOINT_FILE)
        self._offsets: dict[tuple[str, int], int] = {}
        try:
            with open(self.path, encoding="utf-8") as f:
                lines = f.read().splitlines()
            if lines[0] != "0" or int(lines[1]) != len(lines) - 2:
                raise ValueError("not version 0 or a wrong count")
            for line in lines[2:]:
                topic, partition, offset = line.split(" ")
                self._offsets[(topic, int(partition))] = int(offset)
        except FileNotFoundError:
            pass
        except (OSError, ValueError, IndexError) as exc:
            log.warning("%s is unreadable (%s): every compacted partition is cleaned from its start",
                        self.path, exc)
            self._offsets = {}

    def get(self, topic: str, partition: int, default: int) -> int:
        return self._offsets.get((topic, partition), default)

    def set(self, topic: str, partition: int, offset: int) -> None:
        self._offsets[(topic, partition)] = offset
        self._save()

    def retain(self, live: set[tuple[str, int]]) -> None:
        """Forget the partitions of deleted topics."""
        if not live.issuperset(self._offsets):
            self._offsets = {k: v for k, v in self._offsets.items() if k in live}
            self._save()

    def _save(self) -> None:
        lines = ["0", str(len(self._offsets))]
        lines += [f"{t} {p} {o}" for (t, p), o in sorted(self._offsets.items())]
        try:
            atomic_write(self.path, "\n".join(lines) + "\n", durable=False)
        except OSError as exc:
            log.warning("cannot write %s: %s", self.path, exc)


def empty_batch(like: BatchHeader) -> bytes:
    """Kafka's DefaultRecordBatch.writeEmptyHeader: ``like``'s offsets, producer fields and max
    timestamp, no records, no compression, no delete horizon."""
    fields = [like.base_offset, HEADER.size - 12, like.partition_leader_epoch, 2, 0,
              like.attributes & _KEPT_EMPTY_ATTRIBUTES, like.last_offset_delta, -1,
              like.max_timestamp, like.producer_id, like.producer_epoch, like.base_sequence, 0]
    out = bytearray(HEADER.pack(*fields))
    struct.pack_into(">I", out, 17, crc32c(bytes(out[_CRC_START:])))
    return bytes(out)


def _survives(record: Record, offset_map: dict[bytes, int], keep_deletes: bool) -> bool:
    """Cleaner.shouldRetainRecord: keyed, not superseded, and a value or a tombstone still due."""
    if record.key is None:
        return False
    if record.offset < offset_map.get(_digest(record.key), -1):
        return False
    return record.value is not None or keep_deletes


def _aborted(job: CleaningJob, header: BatchHeader) -> bool:
    """A transactional batch of a transaction that was aborted."""
    return header.is_transactional and any(
        a.producer_id == header.producer_id and a.first_offset <= header.base_offset <= a.last_offset
        for a in job.aborted)


def _digest(key: bytes) -> bytes:
    return hashlib.md5(key, usedforsecurity=False).digest()


def _group_by_size(segments: list, max_bytes: int) -> list[list]:
    """Cleaner.groupSegmentsBySize: consecutive segments whose sizes add up to at most
    ``max_bytes`` become one cleaned segment (an empty segment always joins)."""
    groups: list[list] = []
    for seg in segments:
        if groups and (seg.size == 0 or sum(s.size for s in groups[-1]) + seg.size <= max_bytes):
            groups[-1].append(seg)
        else:
            groups.append([seg])
    return groups


def _holds(current: list, old: list) -> bool:
    """Whether ``old`` is still a run of the log's sealed segments (the very same objects)."""
    for i, seg in enumerate(current):
        if seg is old[0]:
            return len(current[i:i + len(old)]) == len(old) and all(
                a is b for a, b in zip(current[i:i + len(old)], old))
    return False


def _write_all(disk, fd: int, data: bytes, path: str) -> None:
    view = memoryview(data)
    while view:
        view = view[disk.write(fd, view, path):]
