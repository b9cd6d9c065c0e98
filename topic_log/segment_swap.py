"""Replacing sealed segments with a cleaned one so that a crash at any step loses nothing.

The steps follow Kafka's (UnifiedLog.replaceSegments, LogLoader):

1. the cleaner writes ``<base>.log.cleaned`` and fsyncs it;   crash: the file is deleted on open
2. it is renamed ``<base>.log.swap``, directory fsynced;      from here on it is complete
3. the replaced segments after the first are removed, directory fsynced;
4. the swap is renamed over ``<base>.log``, directory fsynced.

On open, a ``.swap`` file replaces every segment from its base up to the offset after its last
batch (compaction always keeps each group's last batch, so that end covers the whole group),
then takes its final name: a crash in steps 2-4 rolls forward. A ``.swap`` whose
``<base>.log`` is gone is stale: retention (oldest segment first) deleted what it replaces
while it waited, so it is discarded rather than bringing deleted records back.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os

from .batches import check_batch
from log_store.files import fsync_dir

log = logging.getLogger(__name__)

SUFFIX = ".log"
CLEANED = ".cleaned"
SWAP = ".swap"


def segment_path(directory: str, base: int) -> str:
    return os.path.join(directory, f"{base:020d}{SUFFIX}")


def cleaned_path(directory: str, base: int) -> str:
    return segment_path(directory, base) + CLEANED


def swap_path(directory: str, base: int) -> str:
    return segment_path(directory, base) + SWAP


def promote(directory: str, base: int) -> None:
    """Step 2: the fsynced cleaned file becomes a swap file (complete from now on)."""
    os.replace(cleaned_path(directory, base), swap_path(directory, base))
    fsync_dir(directory)


def install(directory: str, base: int, replaced: list[int]) -> None:
    """Steps 3 and 4: remove the replaced segments after ``base``, then rename the swap over it."""
    for old in replaced:
        if old != base:
            with contextlib.suppress(FileNotFoundError):
                os.remove(segment_path(directory, old))
    if len(replaced) > 1:
        fsync_dir(directory)
    os.replace(swap_path(directory, base), segment_path(directory, base))
    fsync_dir(directory)


def discard(directory: str, base: int) -> None:
    """Remove what an abandoned replacement left (best effort: opening the log retries)."""
    for path in (cleaned_path(directory, base), swap_path(directory, base)):
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("%s: cannot remove %s: %s", directory, path, exc)


def finish_interrupted(directory: str) -> None:
    """On open: delete ``.cleaned`` leftovers and complete (or drop, if stale) every ``.swap``."""
    names = os.listdir(directory)
    changed = False
    for name in names:
        if name.endswith(SUFFIX + CLEANED):
            log.info("%s: removing %s left by an interrupted compaction", directory, name)
            os.remove(os.path.join(directory, name))
            changed = True
    bases = sorted(int(n[:20]) for n in names if n.endswith(SUFFIX + SWAP) and n[:20].isdigit())
    for base in bases:
        swap = swap_path(directory, base)
        if not os.path.exists(segment_path(directory, base)):
            log.warning("%s: discarding %s: the segments it replaces were deleted meanwhile",
                        directory, os.path.basename(swap))
            os.remove(swap)
            changed = True
            continue
        end = _end_offset(swap, base)
        for name in os.listdir(directory):
            if name.endswith(SUFFIX) and name[:-len(SUFFIX)].isdigit():
                old = int(name[:-len(SUFFIX)])
                if base < old < end:
                    os.remove(os.path.join(directory, name))
        fsync_dir(directory)
        os.replace(swap, segment_path(directory, base))
        log.info("%s: finished an interrupted compaction swap (offsets %d-%d)", directory, base, end - 1)
        changed = True
    if changed:
        fsync_dir(directory)


def _end_offset(path: str, base: int) -> int:
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
