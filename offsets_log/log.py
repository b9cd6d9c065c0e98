"""One shard's log: ``<data-dir>/__consumer_offsets-<N>/<20-digit base offset>.log`` segments
(in a cluster of nodes, under the owning node's folder: ``<data-dir>/nodes/<id>/``).

Synchronous and clock-free (callers pass ``now_ms``); the broker drives it from a worker
thread. Recovery on open follows Kafka's ``LogLoader`` / ``LogSegment.recover``: drop
compaction leftovers, finish any complete swap, scan every segment and truncate at the
first torn or corrupt frame *before* appending again.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from typing import Iterable, Iterator

from log_store.fs import FS, RealFS
from log_store.segments import finish_interrupted, segment_bases, segment_name

from .errors import LogFailedError, RecordTooLargeError
from .records import Record
from .segment import MAX_FRAME, PREFIX, Frame, check_frame, encode_record, scan

log = logging.getLogger(__name__)

DISCARDED_SUFFIX = ".log.discarded"
LEFTOVER_SUFFIXES = (".tmp", ".cleaned")
DEFAULT_SEGMENT_BYTES = 104_857_600     # Kafka's offsets.topic.segment.bytes


#: the folder of a cluster's nodes in a data dir, one subfolder per node id
NODES_DIR = "nodes"


def shard_dir(data_dir: str, shard: int) -> str:
    return os.path.join(data_dir, f"__consumer_offsets-{shard}")


def node_dir(data_dir: str, node_id: int) -> str:
    return os.path.join(data_dir, NODES_DIR, str(node_id))


def homes(data_dir: str, fs: FS) -> list[str]:
    """Where shard logs may live: the data dir, then each node's folder (by node id)."""
    nodes = os.path.join(data_dir, NODES_DIR)
    ids = sorted(int(n) for n in fs.listdir(nodes) if n.isdigit()) if fs.exists(nodes) else []
    return [data_dir, *(node_dir(data_dir, n) for n in ids)]


def locate(data_dir: str, folder: str, fs: FS) -> str | None:
    """Where the log folder ``folder`` (``__consumer_offsets-3``) lives, in the data dir or a
    node's folder; None if nowhere."""
    return next((d for home in homes(data_dir, fs) if fs.exists(d := os.path.join(home, folder))), None)


@dataclass(frozen=True)
class Problem:
    """One finding of :func:`verify`: which file, at which byte, and what is wrong."""
    segment: str
    position: int
    reason: str

    def __str__(self) -> str:
        return f"{self.segment}@{self.position}: {self.reason}"


def finish_swaps(fs: FS, directory: str) -> None:
    """Complete every interrupted compaction (log_store/segments.py); drop other leftovers.

    A swap ends with an end marker naming the offset after the last it covers. Nothing but
    compaction deletes segments here, so a swap is completed even if its first segment is gone.
    """
    def end_marker(swap: str, _base: int) -> int | None:
        frames, _ = scan(fs.read(swap))
        return frames[-1].offset if frames and frames[-1].is_marker else None

    finish_interrupted(fs, directory, end_marker, retention=False, leftovers=LEFTOVER_SUFFIXES)


def verify(directory: str, fs: FS | None = None) -> list[Problem]:
    """Every problem in a shard directory, without changing anything (``log verify``)."""
    fs = fs or RealFS()
    problems: list[Problem] = []
    try:
        names = fs.listdir(directory)
    except OSError as e:                 # e.g. the shard folder replaced by a file
        return [Problem(os.path.basename(directory), 0, f"not a readable directory: {e}")]
    for name in names:
        if name.endswith((".swap", *LEFTOVER_SUFFIXES)):
            problems.append(Problem(name, 0, "leftover of an interrupted compaction"))
    last = -1
    bases = segment_bases(fs, directory)
    for i, base in enumerate(bases):
        name = segment_name(base)
        if i and last + 1 != base:
            previous = segment_name(bases[i - 1])
            problems.append(Problem(previous, fs.size(os.path.join(directory, previous)),
                                    f"ends at offset {last + 1}, next segment starts at {base}"))
        last = max(last, base - 1)
        buf = fs.read(os.path.join(directory, name))
        pos = 0
        while pos < len(buf):
            frame, why = check_frame(buf, pos)
            if frame is None:
                problems.append(Problem(name, pos, why))
                break
            if frame.offset < max(base, last + 1):
                problems.append(Problem(name, pos, f"offset {frame.offset} out of order"))
                break
            last = frame.offset - 1 if frame.is_marker else frame.offset
            pos += PREFIX.size + PREFIX.unpack_from(buf, pos)[0]
    return problems


class ShardLog:
    """Append-only, segmented, CRC-framed log of one ``__consumer_offsets`` shard.

    Thread-safe: appends and rolls take one lock; fsync runs outside it so appends continue
    while the disk works (one fsync then covers every record appended meanwhile). When to
    fsync is the caller's choice (broker/group_runtime/flusher.py, as Kafka's
    ``log.flush.interval.*``); a written record survives the process being killed, since the
    operating system holds it. A compaction's
    swap of the inactive segments takes ``swap_lock`` instead, so appends go on during it
    too; reading the whole log waits for it.
    """

    def __init__(self, directory: str, fs: FS | None = None, *,
                 segment_bytes: int = DEFAULT_SEGMENT_BYTES):
        self.directory, self.fs = directory, fs or RealFS()
        self.segment_bytes = segment_bytes
        self.lock = threading.RLock()
        self.swap_lock = threading.Lock()       # held while compaction replaces inactive segments
        self._failed: str | None = None
        self.bases: list[int] = []
        self.next_offset = 0
        self.active_size = 0
        self.recovered_frames = 0
        self._unread = None
        try:
            self.fs.makedirs(directory)
            self._recover()
        except OSError as e:
            # One unusable shard (its folder replaced by a file, an unreadable segment) must
            # not stop the broker: this log refuses all work, so only its shard is refused.
            self._failed = f"cannot open the log: {e}"
            log.error("%s: %s", directory, self._failed)

    @classmethod
    def for_shard(cls, data_dir: str, shard: int, **kwargs) -> ShardLog:
        return cls(shard_dir(data_dir, shard), **kwargs)

    # recovery ---------------------------------------------------------------------------
    def _path(self, base: int) -> str:
        return os.path.join(self.directory, segment_name(base))

    def _recover(self) -> None:
        finish_swaps(self.fs, self.directory)
        recovered: list[Frame] = []
        bases = segment_bases(self.fs, self.directory)
        next_offset, kept = 0, []
        for i, base in enumerate(bases):
            path = self._path(base)
            buf = self.fs.read(path)
            frames, valid = scan(buf)
            kept.append(base)
            next_offset = max(next_offset, base)
            for f in frames:
                if f.offset < next_offset:   # CRC-valid but out of order: treat as corruption
                    valid = f.position
                    frames = frames[:frames.index(f)]
                    break
                next_offset = f.offset if f.key is None else f.offset + 1   # an end marker names the next
            self.recovered_frames += len(frames)
            recovered.extend([f for f in frames if f.key is not None])     # end markers: key None
            if valid < len(buf):
                log.warning("%s: truncating at byte %d of %d (torn or corrupt record)",
                            path, valid, len(buf))
                self.fs.truncate(path, valid)
                self.fs.fsync(path)
                self._discard(bases[i + 1:])
                break
            if i + 1 < len(bases) and bases[i + 1] != next_offset:
                # A closed segment ends exactly where the next begins (roll or end marker);
                # anything else means its tail was lost, so later segments are unreachable.
                log.warning("%s: ends at offset %d but the next segment starts at %d",
                            path, next_offset, bases[i + 1])
                self._discard(bases[i + 1:])
                break
        if not kept:
            kept = [0]
            self.fs.create(self._path(0))
            self.fs.fsync_dir(self.directory)
        self.bases = kept
        self.next_offset = next_offset
        self.active_size = self.fs.size(self._path(kept[-1]))
        # The shard replays the log right after opening it: hand it these frames once
        # instead of reading and checking every segment a second time.
        self._unread = (recovered, tuple(kept), next_offset)

    def _discard(self, bases: list[int]) -> None:
        """Segments after a corrupt record are unreachable; keep them aside for an operator."""
        for base in bases:
            log.error("%s: after a corrupt record; renaming to %s", self._path(base),
                      segment_name(base) + ".discarded")
            self.fs.rename(self._path(base), self._path(base) + ".discarded")
        if bases:
            self.fs.fsync_dir(self.directory)

    # writing ----------------------------------------------------------------------------
    def _check(self) -> None:
        if self._failed is not None:
            raise LogFailedError(f"{self.directory}: {self._failed}; reopen the log to recover")

    def _fail(self, why: str, e: OSError) -> LogFailedError:
        self._failed = f"{why}: {e}"
        log.error("%s: %s", self.directory, self._failed)
        return LogFailedError(self._failed)

    @property
    def active_path(self) -> str:
        return self._path(self.bases[-1])

    def append(self, records: Iterable[Record], now_ms: int) -> list[int]:
        """Write records (one write call) and return their offsets. Not durable until :meth:`sync`."""
        with self.lock:
            self._check()
            records = list(records)
            if not records:
                return []
            first = self.next_offset
            frames = [encode_record(first + i, now_ms, r.key, r.value,
                                    None if r.producer_id < 0 else (r.producer_id, r.producer_epoch, r.control))
                      for i, r in enumerate(records)]
            for frame in frames:
                if len(frame) - PREFIX.size > MAX_FRAME:
                    # Recovery would take it for garbage and cut the log there: never write it.
                    raise RecordTooLargeError(f"{self.directory}: a record of {len(frame)} bytes is "
                                              f"over the {MAX_FRAME}-byte limit; nothing written")
            data = b"".join(frames)
            if self.active_size and self.active_size + len(data) > self.segment_bytes:
                self._roll()
            path = self.active_path
            try:
                self.fs.append(path, data)
            except OSError as e:
                self._undo_partial_write(path)
                raise self._fail("append failed", e) from e
            self.active_size += len(data)
            self.next_offset = first + len(records)
            return list(range(first, self.next_offset))

    def _undo_partial_write(self, path: str) -> None:
        try:
            self.fs.truncate(path, self.active_size)
        except OSError:
            log.exception("%s: could not cut a failed write back", path)

    def _roll(self) -> None:
        """New active segment named by the next offset; the old one is made durable first
        (once per segment, so :meth:`sync` need only fsync the active one)."""
        try:
            self.fs.fsync(self.active_path)
            self.fs.create(self._path(self.next_offset))
            self.fs.fsync_dir(self.directory)
        except OSError as e:
            raise self._fail("segment roll failed", e) from e
        self.bases.append(self.next_offset)
        self.active_size = 0
        log.debug("%s: rolled to segment %d", self.directory, self.next_offset)

    def sync(self) -> int:
        """fsync what was appended so far; the highest offset it covers."""
        with self.lock:
            self._check()
            path, covered = self.active_path, self.next_offset - 1
        try:
            self.fs.fsync(path)              # earlier segments were fsynced when rolled
        except OSError as e:
            with self.lock:
                raise self._fail("fsync failed", e) from e
        return covered

    # reading ----------------------------------------------------------------------------
    def frames(self) -> Iterator[Frame]:
        """Every record frame in offset order (end markers skipped)."""
        with self.swap_lock:
            with self.lock:
                self._check()
                unread, self._unread = self._unread, None
                bases = tuple(self.bases)
                fresh = unread is not None and unread[1:] == (bases, self.next_offset)
            buffers = [] if fresh else [self.fs.read(self._path(b)) for b in bases]
        if fresh:
            yield from unread[0]                # nothing changed since recovery scanned it all
            return
        for buf in buffers:
            for f in scan(buf)[0]:
                if not f.is_marker:
                    yield f

    def read_all(self) -> list[tuple[int, Record]]:
        """(offset, record) for every record, in log order: what a shard replays on load."""
        return [(f.offset, Record(f.key, f.value, f.producer_id, f.producer_epoch, f.control))
                for f in self.frames()]

    def close(self) -> None:
        """Release open append handles (they reopen lazily if the log is used again)."""
        if isinstance(self.fs, RealFS):
            self.fs.close()
