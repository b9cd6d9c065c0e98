"""Segment files and the one crash-safe swap that replaces sealed segments with a cleaned one.

Both logs name a segment by its first offset (``<20-digit base>.log``). A compaction replaces
the segments ``replaced`` (the first one's base is ``base``) in Kafka's order
(UnifiedLog.replaceSegments, LogLoader), each step fsynced before the next:

1. the cleaned segment is written to ``<base>.log.cleaned`` and fsynced;  crash: deleted on open
2. :func:`promote`: renamed ``<base>.log.swap``;                          from here it is complete
3. :func:`install`: the replaced segments after the first are removed;
4. then the swap is renamed over ``<base>.log``.

The first segment is never removed but replaced by the rename, so until step 4 ``<base>.log``
holds its old records and after it the new ones. On open, :func:`finish_interrupted` completes
every swap (roll forward): it removes the segments from its base up to its end, which the log
reads from the swap file (``end_of``), and renames it. A swap whose ``<base>.log`` is gone is
stale when retention may delete segments while a swap waits (the topic log): what it replaces
was deleted, and completing it would bring deleted records back. A log without retention (the
offsets log) completes it anyway: its earlier order removed the first segment in step 3.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Callable

from .fs import FS

log = logging.getLogger(__name__)

SUFFIX = ".log"
CLEANED = ".cleaned"
SWAP = ".swap"


def segment_name(base: int) -> str:
    return f"{base:020d}{SUFFIX}"


def segment_path(directory: str, base: int) -> str:
    return os.path.join(directory, segment_name(base))


def cleaned_path(directory: str, base: int) -> str:
    return segment_path(directory, base) + CLEANED


def swap_path(directory: str, base: int) -> str:
    return segment_path(directory, base) + SWAP


def parse_base(name: str, suffix: str = SUFFIX) -> int | None:
    stem = name[:-len(suffix)] if name.endswith(suffix) else None
    if stem is None or len(stem) != 20 or not stem.isdigit():
        return None
    return int(stem)


def segment_bases(fs: FS, directory: str, suffix: str = SUFFIX) -> list[int]:
    return sorted(b for b in (parse_base(n, suffix) for n in fs.listdir(directory)) if b is not None)


def promote(fs: FS, directory: str, base: int) -> None:
    """Step 2: the fsynced cleaned file becomes a swap file (complete from now on)."""
    fs.rename(cleaned_path(directory, base), swap_path(directory, base))
    fs.fsync_dir(directory)


def install(fs: FS, directory: str, base: int, replaced: list[int]) -> None:
    """Steps 3 and 4: remove the replaced segments after ``base``, then rename the swap over it."""
    for old in replaced:
        if old != base:
            with contextlib.suppress(FileNotFoundError):
                fs.remove(segment_path(directory, old))
    if len(replaced) > 1:
        fs.fsync_dir(directory)
    fs.rename(swap_path(directory, base), segment_path(directory, base))
    fs.fsync_dir(directory)


def finish_interrupted(fs: FS, directory: str, end_of: Callable[[str, int], int | None], *,
                       retention: bool, leftovers: tuple[str, ...] = (SUFFIX + CLEANED,)) -> None:
    """On open: delete ``leftovers`` (``.cleaned`` files may be torn) and complete every swap.

    ``end_of(swap path, base)`` is the offset after the last one the swap covers, or None if
    the file does not say (the swap is then dropped and the old segments kept); ``retention``:
    whether a swap whose base segment is gone is stale (see the module docstring).
    """
    changed = False
    for name in fs.listdir(directory):
        if name.endswith(leftovers):
            log.info("%s: removing %s left by an interrupted compaction", directory, name)
            fs.remove(os.path.join(directory, name))
            changed = True
    for base in segment_bases(fs, directory, SUFFIX + SWAP):
        swap = swap_path(directory, base)
        stale = retention and not fs.exists(segment_path(directory, base))
        end = None if stale else end_of(swap, base)
        if end is None:
            log.warning("%s: discarding %s: %s", directory, os.path.basename(swap),
                        "the segments it replaces were deleted meanwhile" if stale
                        else "it does not say which segments it replaces")
            fs.remove(swap)
            changed = True
            continue
        for old in segment_bases(fs, directory):
            if base < old < end:
                fs.remove(segment_path(directory, old))
        fs.fsync_dir(directory)
        fs.rename(swap, segment_path(directory, base))
        log.info("%s: finished an interrupted compaction swap (offsets %d-%d)", directory, base, end - 1)
        changed = True
    if changed:
        fs.fsync_dir(directory)


def discard(fs: FS, directory: str, base: int) -> None:
    """Remove what an abandoned replacement left (best effort: opening the log retries)."""
    for path in (cleaned_path(directory, base), swap_path(directory, base)):
        try:
            fs.remove(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("%s: cannot remove %s: %s", directory, path, exc)
