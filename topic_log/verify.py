"""``groupbroker log verify`` for topic partitions: every batch of every segment, read-only.

Unlike start-up recovery, which trusts sealed segments (they were fsynced when they rolled),
this checks every batch's CRC, so bit rot anywhere is found: each problem names the
partition, the segment file and the byte position where it starts.
"""

from __future__ import annotations

import mmap
import os

from log_store.segments import SUFFIX, segment_name
from offsets_log.log import Problem

from .batches import check_batch
from .store import METADATA_FILE, OFFSETS_TOPIC, PARTITION_DIR, read_metadata


def partition_dirs(data_dir: str) -> list[str]:
    """The topic partition directories of a data dir (``<topic>-<n>``), sorted."""
    out = []
    for entry in os.listdir(data_dir):
        match = PARTITION_DIR.fullmatch(entry)
        if match and match["topic"] != OFFSETS_TOPIC and os.path.isdir(os.path.join(data_dir, entry)):
            out.append(entry)
    return sorted(out)


def verify_partition(directory: str) -> list[Problem]:
    """Every problem in one partition directory; at most one per segment (where it stops parsing)."""
    problems = []
    try:
        read_metadata(directory)
    except (OSError, KeyError, ValueError) as exc:
        problems.append(Problem(METADATA_FILE, 0, f"unreadable: {exc}"))
    bases = sorted(int(n[:-len(SUFFIX)]) for n in os.listdir(directory)
                   if n.endswith(SUFFIX) and n[:-len(SUFFIX)].isdigit())
    for n, base in enumerate(bases):
        name = segment_name(base)
        below = bases[n + 1] if n + 1 < len(bases) else None
        try:
            end_offset, problem = _verify_segment(os.path.join(directory, name), base, below)
        except OSError as exc:
            problems.append(Problem(name, 0, f"unreadable: {exc}"))
            continue
        if problem is not None:
            problems.append(problem)
        elif below is not None and end_offset != below:
            problems.append(Problem(name, os.path.getsize(os.path.join(directory, name)),
                                    f"ends at offset {end_offset}, next segment starts at {below}"))
    return problems


def _verify_segment(path: str, base: int, below: int | None) -> tuple[int, Problem | None]:
    """(the offset after the last good batch, the first problem or None)."""
    name = os.path.basename(path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return base, None
        with mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) as mm:
            pos, expected = 0, base
            while pos < size:
                header, why = check_batch(mm, pos, size, expected, verify_crc=True, below=below,
                                          gaps=below is not None)
                if header is None:
                    return expected, Problem(name, pos, why)
                expected = header.base_offset + header.last_offset_delta + 1
                pos += header.size
    return expected, None


def verify_topics(data_dir: str) -> list[tuple[str, Problem]]:
    """(partition directory name, problem) for every problem in every topic partition."""
    return [(entry, problem) for entry in partition_dirs(data_dir)
            for problem in verify_partition(os.path.join(data_dir, entry))]
