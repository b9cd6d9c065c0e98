"""Compaction: keep the latest record per exact key bytes, drop tombstones once old enough.

Transactions (TxnOffsetCommit records and their markers) are settled first: a committed
transaction's records become plain commits and its marker goes; an aborted one's records and
marker go; the records of a transaction still open are all kept, and so is whatever they
would otherwise replace (the transaction may yet abort).

The active segment is never touched (Kafka's cleaner). Every inactive segment is rewritten
into one cleaned segment named after the first; it ends with an end marker naming the next
offset it covers. The swap is log_store/segments.py's, so a crash at any step leaves either the
old or the new segment set.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from log_store.segments import cleaned_path, install, promote, segment_name

from .log import ShardLog
from .segment import PREFIX, Frame, encode_marker, encode_record, scan

log = logging.getLogger(__name__)

DEFAULT_DELETE_RETENTION_MS = 86_400_000     # Kafka's delete.retention.ms


@dataclass(frozen=True)
class CompactionResult:
    segments_in: int
    records_in: int
    records_out: int
    bytes_in: int
    bytes_out: int


def compact(shard_log: ShardLog, now_ms: int,
            delete_retention_ms: int = DEFAULT_DELETE_RETENTION_MS) -> CompactionResult:
    """Clean every inactive segment of ``shard_log``; safe to run while appends continue.

    A tombstone survives while ``now_ms - its append time < delete_retention_ms`` so a
    reader replaying the log still sees the deletion (Kafka measures from when the cleaner
    first reaches it; the append time is the simpler, never-earlier bound for replay).
    """
    fs, directory = shard_log.fs, shard_log.directory
    with shard_log.lock:
        shard_log._check()
        bases = list(shard_log.bases[:-1])
        end = shard_log.bases[-1]              # base of the active segment
    if not bases:
        return CompactionResult(0, 0, 0, 0, 0)

    buffers = [fs.read(os.path.join(directory, segment_name(b))) for b in bases]
    frames = [(f, buf) for buf in buffers for f in scan(buf)[0] if not f.is_marker]
    frames, open_txns = _settle_transactions(frames)
    latest = {f.key: f.offset for f, _ in frames}
    kept = sorted([(f, buf) for f, buf in frames if latest[f.key] == f.offset
                   and (f.value is not None or now_ms - f.append_ms < delete_retention_ms)]
                  + open_txns, key=lambda kept_frame: kept_frame[0].offset)
    data = b"".join(_framed(f, buf) for f, buf in kept)
    data += encode_marker(end)

    cleaned = cleaned_path(directory, bases[0])
    try:
        fs.create(cleaned)
        fs.append(cleaned, data)
        fs.fsync(cleaned)
    except OSError:
        log.exception("%s: writing %s failed; old segments untouched", directory, cleaned)
        raise
    # Appends go on during the swap: they touch only the active segment, which it never
    # does. Readers of the whole log wait for it (they would find files half swapped).
    with shard_log.swap_lock:
        try:
            promote(fs, directory, bases[0])
            install(fs, directory, bases[0], bases)
        except OSError as e:
            # The segment set on disk is now between two states: only recovery sorts it out.
            with shard_log.lock:
                raise shard_log._fail("compaction swap failed", e) from e
        with shard_log.lock:
            shard_log.bases = [bases[0]] + [b for b in shard_log.bases if b >= end]
    result = CompactionResult(len(bases), len(frames), len(kept),
                              sum(map(len, buffers)), len(data))
    log.info("%s: compacted %d segments, %d -> %d records, %d -> %d bytes", directory,
             result.segments_in, result.records_in, result.records_out, result.bytes_in,
             result.bytes_out)
    return result


def _settle_transactions(frames: list) -> tuple[list, list]:
    """(the frames with transactions settled, the open transactions' frames kept aside)."""
    open_by_producer: dict[int, list] = {}
    settled: list = []
    for f, buf in frames:
        if f.producer_id < 0:
            settled.append((f, buf))
        elif f.control < 0:
            open_by_producer.setdefault(f.producer_id, []).append((f, buf))
        elif f.control == 1:                # committed: its records become plain commits
            settled.extend((f._replace(producer_id=-1), buf) for f, buf in open_by_producer.pop(f.producer_id, []))
        else:
            open_by_producer.pop(f.producer_id, None)
    settled.sort(key=lambda kept_frame: kept_frame[0].offset)
    return settled, [entry for entries in open_by_producer.values() for entry in entries]


def _framed(f: Frame, buf: bytes) -> bytes:
    """A surviving frame: copied as it is (already framed and CRC-checked) unless it was a
    committed transaction's record, which is written again as a plain one."""
    if f.producer_id < 0 and buf[f.position + PREFIX.size] != 1:
        return encode_record(f.offset, f.append_ms, f.key, f.value)
    return buf[f.position:f.position + PREFIX.size + PREFIX.unpack_from(buf, f.position)[0]]
