"""Offline operations on a data directory: the bodies of ``groupbroker log dump|verify|compact``.

Each takes the data dir and an optional shard, so the CLI only parses arguments and prints.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Callable, Iterator

from .compaction import DEFAULT_DELETE_RETENTION_MS, CompactionResult, compact
from .errors import RecordError
from log_store.fs import FS, RealFS
from .log import Problem, ShardLog, homes, locate, segment_bases, segment_name, shard_dir, verify
from .records import Record, TransactionMarker, TypedRecord, decode
from .segment import Frame, scan

log = logging.getLogger(__name__)

_SHARD_DIR = re.compile(r"__consumer_offsets-(\d+)\Z")


def shards(data_dir: str, fs: FS, shard: int | None = None) -> list[int]:
    """The shard numbers present under ``data_dir`` or its nodes' folders (or just ``shard``),
    ascending."""
    if shard is not None:
        return [shard]
    found = (_SHARD_DIR.match(name) for home in homes(data_dir, fs) for name in fs.listdir(home))
    return sorted({int(m.group(1)) for m in found if m})


def _shard_dir(data_dir: str, shard: int, fs: FS) -> str:
    """Where a shard's log lives (in a cluster, under its node's folder)."""
    return locate(data_dir, os.path.basename(shard_dir(data_dir, shard)), fs) or shard_dir(data_dir, shard)


def records(data_dir: str, shard: int, fs: FS | None = None) -> Iterator[tuple[Frame, TypedRecord | RecordError]]:
    """Every record of one shard in log order, read without changing anything (a torn or
    corrupt tail ends a segment's records, as recovery would cut it): each frame with its
    decoded record, or the :class:`RecordError` that decoding raised. A transaction's offset
    commits come when its commit marker does (an aborted or still open one's never), so a
    reader sees the offsets a consumer could fetch."""
    fs = fs or RealFS()
    pending: dict[int, list] = {}
    for f in frames(_shard_dir(data_dir, shard, fs), fs):
        if f.is_marker:
            continue
        try:
            typed = decode(Record(f.key, f.value, f.producer_id, f.producer_epoch, f.control))
        except RecordError as e:
            yield f, e
            continue
        if isinstance(typed, TransactionMarker):
            ended = pending.pop(typed.producer_id, [])
            if typed.commit:
                yield from ended
        elif f.producer_id >= 0:
            pending.setdefault(f.producer_id, []).append((f, typed))
        else:
            yield f, typed


def frames(directory: str, fs: FS) -> Iterator[Frame]:
    """Every frame of the log in ``directory``, in log order, read without changing anything
    (a torn or corrupt tail ends a segment's frames, as recovery would cut it)."""
    for base in segment_bases(fs, directory):
        yield from scan(fs.read(os.path.join(directory, segment_name(base))))[0]


def logs_named(data_dir: str, topic: str, fs: FS | None = None) -> list[tuple[int, str]]:
    """(partition, directory) of every ``<topic>-<partition>`` log folder in the data dir or its
    nodes' folders, by partition."""
    fs = fs or RealFS()
    pattern = re.compile(re.escape(topic) + r"-(\d+)\Z")
    found = {int(m.group(1)): os.path.join(home, name) for home in homes(data_dir, fs)
             for name in fs.listdir(home) if (m := pattern.match(name))}
    return sorted(found.items())


def dump(data_dir: str, shard: int | None = None, fs: FS | None = None,
         describe: Callable[[TypedRecord], str] = repr) -> Iterator[str]:
    """One readable line per record: shard, offset, append time, the decoded record as
    ``describe`` writes it."""
    fs = fs or RealFS()
    for n in shards(data_dir, fs, shard):
        directory = _shard_dir(data_dir, n, fs)
        if verify(directory, fs):
            log.warning("%s has problems; dumping the valid prefix only", directory)
        for f, typed in records(data_dir, n, fs):
            text = (f"undecodable ({typed}): key={f.key.hex()}" if isinstance(typed, RecordError)
                    else describe(typed))
            yield f"shard={n} offset={f.offset} append_ms={f.append_ms} {text}"


def verify_all(data_dir: str, shard: int | None = None,
               fs: FS | None = None) -> list[tuple[int, Problem]]:
    """(shard, problem) for every problem found; empty means the data dir is sound."""
    fs = fs or RealFS()
    return [(n, p) for n in shards(data_dir, fs, shard) for p in verify(_shard_dir(data_dir, n, fs), fs)]


def compact_all(data_dir: str, now_ms: int, shard: int | None = None, fs: FS | None = None,
                delete_retention_ms: int = DEFAULT_DELETE_RETENTION_MS
                ) -> dict[int, CompactionResult]:
    """Recover (open) and compact each shard; the broker must not be running."""
    fs = fs or RealFS()
    out = {}
    for n in shards(data_dir, fs, shard):
        shard_log = ShardLog(_shard_dir(data_dir, n, fs), fs)
        out[n] = compact(shard_log, now_ms, delete_retention_ms)
        shard_log.close()
    return out
