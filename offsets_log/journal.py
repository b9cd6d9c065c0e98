"""The group event journal: ``<data-dir>/journal/<first seq>-<created ms>.jsonl`` segments.

One JSON object per line, appended in the order the broker saw the events, each with ``seq``:
the event's number in this journal, one more than the event before, continuing across
restarts. Unlike the offsets logs it is never compacted, so the history of a group survives
compaction; it is rotated instead: a new segment once the active one holds ``segment_bytes``
or is ``segment_ms`` old (and at every open), and segments older than ``retention_ms`` are
deleted whole.

Lines are buffered and written whole, without fsync: the journal is for analysis, not for
recovery, and a crash loses at most the last unflushed second. A crash can tear only the last
line of a segment; readers skip a line that does not parse, with a warning. Synchronous and
clock-free like the rest of this package: callers pass ``now_ms``.

A journal that cannot be written (a full disk, an I/O error) never stops the broker: the
events are dropped, with one warning, until a write works again (then one more line says how
many were lost; their ``seq`` numbers stay unused, so the gap shows where).
"""

from __future__ import annotations

import json
import logging
import os
import re
from typing import Iterator

from log_store.fs import FS, RealFS

#: where a data dir keeps its journal, and the name ending of its segment files
JOURNAL_DIR = "journal"
JOURNAL_SUFFIX = ".jsonl"

log = logging.getLogger(__name__)

DEFAULT_SEGMENT_BYTES = 64 << 20
DEFAULT_SEGMENT_MS = 3_600_000              # an hour
DEFAULT_RETENTION_MS = 7 * 86_400_000       # a week, as Kafka's log.retention.hours
_NAME = re.compile(r"(\d{20})-(\d{13,})\.jsonl\Z")


def journal_dir(data_dir: str) -> str:
    return os.path.join(data_dir, JOURNAL_DIR)


def segment_name(first_seq: int, created_ms: int) -> str:
    return f"{first_seq:020d}-{created_ms:013d}{JOURNAL_SUFFIX}"


def segments(directory: str, fs: FS | None = None) -> list[tuple[int, int, str]]:
    """(first seq, created ms, name) of every segment, oldest first; none if no directory."""
    fs = fs or RealFS()
    if not fs.exists(directory):
        return []
    found = (_NAME.match(name) for name in fs.listdir(directory))
    return sorted((int(m.group(1)), int(m.group(2)), m.group(0)) for m in found if m)


def parse_lines(data: bytes, where: str) -> Iterator[dict]:
    """The events in a segment's bytes; a torn or corrupt line is skipped with a warning."""
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            event = None
        if not isinstance(event, dict):
            log.warning("%s: line %d is torn or corrupt; skipped", where, number)
            continue
        yield event


def read_journal(directory: str, fs: FS | None = None) -> Iterator[dict]:
    """Every event of a journal directory, in order."""
    fs = fs or RealFS()
    for _, _, name in segments(directory, fs):
        path = os.path.join(directory, name)
        yield from parse_lines(fs.read(path), path)


class JournalWriter:
    """Appends events to the active segment; :meth:`flush` writes what is buffered."""

    def __init__(self, directory: str, now_ms: int, *, fs: FS | None = None,
                 segment_bytes: int = DEFAULT_SEGMENT_BYTES, segment_ms: int = DEFAULT_SEGMENT_MS,
                 retention_ms: int = DEFAULT_RETENTION_MS, buffer_bytes: int = 1 << 16):
        self.directory, self.fs = directory, fs or RealFS()
        self.segment_bytes, self.segment_ms = segment_bytes, segment_ms
        self.retention_ms, self.buffer_bytes = retention_ms, buffer_bytes
        self.fs.makedirs(directory)
        self.seq = self._next_seq()
        self._lines: list[str] = []
        self._buffered = 0
        self._encode = json.JSONEncoder(separators=(",", ":")).encode
        self._now = now_ms                   # the latest time seen (an event's ``t``, or a flush's)
        self.dropped = 0                     # events lost since writing last failed
        self._open_segment(self.seq, now_ms)

    def _next_seq(self) -> int:
        """One past the last complete line of the newest segment (0 for a new journal)."""
        existing = segments(self.directory, self.fs)
        if not existing:
            return 0
        first, _, name = existing[-1]
        return first + self.fs.read(os.path.join(self.directory, name)).count(b"\n")

    def _open_segment(self, first_seq: int, now_ms: int) -> None:
        path = os.path.join(self.directory, segment_name(first_seq, now_ms))
        if not self.fs.exists(path):
            self.fs.create(path)
        self.path, self.created_ms, self.size = path, now_ms, self.fs.size(path)
        self._delete_old(now_ms)

    def _delete_old(self, now_ms: int) -> None:
        """Drop segments whose successor was created before the retention window: every
        event in them is older than ``retention_ms``."""
        existing = segments(self.directory, self.fs)
        for (_, _, name), (_, next_created, _) in zip(existing, existing[1:]):
            if now_ms - next_created > self.retention_ms:
                self.fs.remove(os.path.join(self.directory, name))
                log.info("journal: deleted %s (older than the retention)", name)

    def append(self, event: dict) -> None:
        """Buffer one event (``seq`` is added); written out at the latest when the buffer fills."""
        self.append_body(self._encode(event)[:-1], event.get("t"))

    def append_body(self, body: str, t: int | None = None) -> None:
        """Buffer one event encoded by the caller: ``body`` is its JSON object without the
        closing brace (``seq`` goes there); ``t`` its time."""
        line = f'{body},"seq":{self.seq}}}\n'
        self.seq += 1
        if t is not None and t > self._now:
            self._now = t
        self._lines.append(line)
        self._buffered += len(line)
        if self._buffered >= self.buffer_bytes:
            self.flush()

    def flush(self, now_ms: int | None = None) -> None:
        """Write the buffered lines, in a new segment if the active one is too old or full."""
        if now_ms is not None:
            self._now = max(self._now, now_ms)
        first_seq = self.seq - len(self._lines)
        lines, self._lines, self._buffered = self._lines, [], 0
        try:
            if self.size and self._now - self.created_ms >= self.segment_ms:
                self._roll(first_seq)
            if not lines:
                return
            data = "".join(lines).encode()
            if self.size and self.size + len(data) > self.segment_bytes:
                self._roll(first_seq)
            self._write(data)
        except OSError as e:
            if not self.dropped:
                log.warning("journal: cannot write to %s (%s); dropping events until writing "
                            "works again", self.directory, e)
            self.dropped += len(lines)
            return
        if self.dropped:
            log.warning("journal: writing again; %d events were dropped", self.dropped)
            self.dropped = 0

    def _write(self, data: bytes) -> None:
        """Append whole lines: a write that fails is cut back off, so no torn line stays
        in front of the next one."""
        try:
            self.fs.append(self.path, data)
        except OSError:
            try:
                self.fs.truncate(self.path, self.size)
            except OSError as e:
                log.debug("journal: cannot cut %s back: %s", self.path, e)
            raise
        self.size += len(data)

    def _roll(self, first_seq: int) -> None:
        """Start a new segment named by the first line it will hold."""
        self._open_segment(first_seq, max(self._now, self.created_ms))

    def close(self) -> None:
        self.flush()
        if isinstance(self.fs, RealFS):
            self.fs.close()
